// SPDX-License-Identifier: GPL-2.0-only
// Hybrid-parallel synthetic training: published model sizes, Megatron-LM's
// rank layout, exact bytes per group against closed forms written here, the
// 1F1B order per stage, and trace sets that merge and lower without a problem.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "dltrace/formats/op_kind.h"
#include "dltrace/formats/trace_set.h"
#include "dltrace/models/lower.h"
#include "dltrace/models/merge.h"
#include "dltrace/models/synth.h"
#include "temp_dir.h"

namespace dltrace::models {
namespace {

using formats::OpKind;

using dltrace_test::TempDir;

// Writes, loads and merges a trace set; checks the merge and the lowering
// (as `dltrace schedule --algo recorded` does) find nothing wrong.
struct Written {
  formats::TraceSet set;
  MergedTrace merged;
};
std::unique_ptr<Written> Write(const SynthOptions& o, const TempDir& tmp, const std::string& name) {
  std::string err;
  EXPECT_TRUE(WriteSynthTraceSet(o, tmp.file(name), &err)) << err;
  auto w = std::make_unique<Written>();
  EXPECT_TRUE(formats::LoadTraceSet(tmp.file(name), &w->set, &err)) << err;
  EXPECT_TRUE(w->set.warnings.empty());
  w->merged = Merge(w->set);
  EXPECT_TRUE(w->merged.problems.empty()) << w->merged.problems.front();
  std::vector<std::string> notes;
  Schedule s = LowerTrace(w->merged, LowerOptions{}, &notes);
  EXPECT_TRUE(notes.empty()) << notes.front();
  EXPECT_TRUE(CheckSchedule(s).empty());
  EXPECT_EQ(s.iterations, o.iterations);
  return w;
}

// Bytes and calls one rank made per (communicator name, call kind).
std::map<std::pair<std::string, OpKind>, std::pair<uint64_t, uint64_t>> Totals(
    const formats::RankTrace& rt) {
  std::map<uint32_t, std::string> names;
  for (const auto& c : rt.communicators) names[c.id] = c.name;
  std::map<std::pair<std::string, OpKind>, std::pair<uint64_t, uint64_t>> t;
  for (const auto& op : rt.ops) {
    auto& x = t[{names[op.comm], op.kind}];
    x.first += op.bytes;
    x.second += 1;
  }
  return t;
}

using Totals_t = std::map<std::pair<std::string, OpKind>, std::pair<uint64_t, uint64_t>>;
std::pair<uint64_t, uint64_t> At(Totals_t& t, const std::string& comm, OpKind kind) {
  return t[{comm, kind}];
}

// A hybrid job: MODEL on tp x pp x dp ranks, M micro-batches, one iteration.
SynthOptions Hybrid(const char* model, int tp, int pp, int dp, int microbatches) {
  SynthOptions o;
  o.model = model;
  o.tp = tp;
  o.pp = pp;
  o.dp = dp;
  o.ranks = tp * pp * dp;
  o.microbatches = microbatches;
  o.iterations = 1;
  return o;
}

TEST(Hybrid, ParameterCountsMatchThePublishedSizes) {
  // GPT-3: Narayanan et al. 2021 list 174.6B; the Llama and Mixtral figures
  // are the counts their Hugging Face checkpoints report.
  EXPECT_EQ(TransformerParameters(*FindTransformer("gpt3-175b")), 174'604'259'328u);
  EXPECT_EQ(TransformerParameters(*FindTransformer("llama2-70b")), 68'976'648'192u);
  EXPECT_EQ(TransformerParameters(*FindTransformer("llama3-8b")), 8'030'261'248u);
  EXPECT_EQ(TransformerParameters(*FindTransformer("mixtral-8x7b")), 46'702'792'704u);
}

TEST(Hybrid, Gpt3FlopsAreNarayanansFormula) {
  SynthOptions o;
  o.model = "gpt3-175b";
  o.micro_batch_size = 2;
  const double b = 2, s = 2048, h = 12288;
  LayerFlops f = TransformerLayerFlops(*FindTransformer("gpt3-175b"), o);
  EXPECT_DOUBLE_EQ(f.attention + f.mlp, 24 * b * s * h * h + 4 * b * s * s * h);
  o.tp = 8;
  o.gpu_tflops = 100;
  o.mfu = 0.5;
  EXPECT_DOUBLE_EQ(ComputeNs(o, 4e12), 4e12 / 8 / 50e12 * 1e9);
}

TEST(Hybrid, LayoutIsMegatronsTensorInnermostThenDataThenPipeline) {
  // The example in Megatron-LM's initialize_model_parallel docstring:
  // 16 GPUs, tensor 2, pipeline 4 (so data 2).
  MegatronLayout l{2, 4, 2, 1};
  EXPECT_EQ(l.DpGroup(0), (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(l.DpGroup(13), (std::vector<int32_t>{13, 15}));
  EXPECT_EQ(l.TpGroup(6), (std::vector<int32_t>{6, 7}));
  EXPECT_EQ(l.PpGroup(1), (std::vector<int32_t>{1, 5, 9, 13}));
  EXPECT_EQ(l.PpGroup(14), (std::vector<int32_t>{2, 6, 10, 14}));
  // The embedding group: first and last rank of the pipeline group.
  EXPECT_EQ(l.EmbeddingGroup(14), (std::vector<int32_t>{2, 14}));
  EXPECT_EQ(l.EmbeddingGroup(1), (std::vector<int32_t>{1, 13}));
  EXPECT_TRUE(l.EmbeddingGroup(6).empty());
  // Experts: ep consecutive data-parallel indices of one (t, p); the rest stride ep.
  MegatronLayout e{2, 1, 4, 2};
  EXPECT_EQ(e.EpGroup(0), (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(e.EpGroup(5), (std::vector<int32_t>{5, 7}));
  EXPECT_EQ(e.ExpertDpGroup(0), (std::vector<int32_t>{0, 4}));
  EXPECT_EQ(e.ExpertDpGroup(3), (std::vector<int32_t>{3, 7}));
}

TEST(Hybrid, RecordedCommunicatorsFollowTheLayout) {
  TempDir tmp;
  SynthOptions o = Hybrid("gpt3-175b", 2, 4, 2, 0);
  auto w = Write(o, tmp, "set");
  // Megatron's docstring groups, written out.
  const std::vector<std::vector<int32_t>> tp = {{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}};
  const std::vector<std::vector<int32_t>> dp = {{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}};
  const std::vector<std::vector<int32_t>> pp = {{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}};
  // GPT-3 ties its embeddings: first and last stage share a group.
  const std::vector<std::vector<int32_t>> embd = {{0, 12}, {1, 13}, {2, 14}, {3, 15}};
  auto holds = [](const std::vector<std::vector<int32_t>>& groups, int32_t r) {
    for (const auto& g : groups)
      if (std::find(g.begin(), g.end(), r) != g.end()) return g;
    return std::vector<int32_t>{};
  };
  for (const auto& rt : w->set.ranks) {
    const int32_t r = rt.header.global_rank;
    ASSERT_EQ(rt.communicators.size(), r < 4 || r >= 12 ? 4u : 3u);
    for (const auto& c : rt.communicators) {
      const auto& want = c.name == "tp" ? tp : c.name == "dp" ? dp : c.name == "pp" ? pp : embd;
      EXPECT_EQ(c.members, holds(want, r)) << c.name << " of rank " << r;
      EXPECT_EQ(c.members[size_t(c.rank)], r);
    }
  }
  // One merged communicator per group: 8 TP, 8 DP, 4 PP, 4 embedding.
  EXPECT_EQ(w->merged.comms.size(), 24u);
}

TEST(Hybrid, TensorPipelineDataBytesPerIterationAreTheClosedForms) {
  TempDir tmp;
  SynthOptions o = Hybrid("gpt3-175b", 2, 4, 2, 6);
  o.micro_batch_size = 2;
  o.iterations = 2;
  o.bucket_bytes = 100ull << 20;
  auto w = Write(o, tmp, "set");
  const uint64_t T = 2, P = 4, M = 6, b = 2, s = 2048, h = 12288, V = 50257, L = 96 / P;
  const uint64_t A = s * b * h * 2;  // one bf16 activation of a micro-batch
  for (const auto& rt : w->set.ranks) {
    const uint64_t p = uint64_t(rt.header.global_rank) / (T * 2);
    const bool first = p == 0, last = p == P - 1;
    auto t = Totals(rt);
    // Tensor parallel, per iteration: 2 all-reduces per layer forward and 2
    // backward; the embedding's forward; the head's backward and 3 loss all-reduces.
    const uint64_t tp_calls = M * (4 * L + first + (last ? 4 : 0));
    const uint64_t tp_bytes = M * (4 * L * A + (first ? A : 0) + (last ? A + 3 * s * b * 4 : 0));
    EXPECT_EQ(At(t, "tp", OpKind::NcclAllReduce), std::make_pair(2 * tp_bytes, 2 * tp_calls));
    // Pipeline: M activations to the next stage, M gradients to the previous.
    const uint64_t sends = M * ((last ? 0 : 1) + (first ? 0 : 1));
    EXPECT_EQ(At(t, "pp", OpKind::NcclSend), std::make_pair(2 * sends * A, 2 * sends));
    EXPECT_EQ(At(t, "pp", OpKind::NcclRecv), std::make_pair(2 * sends * A, 2 * sends));
    // Data parallel: every fp32 gradient of the rank's shard once per iteration.
    // Per layer 12h^2 + 13h: QKV, projection, MLP matrices and QKV/FC1 biases
    // (12h^2 + 7h) split over TP, norms and row-parallel biases (6h) not.
    uint64_t params = L * ((12 * h * h + 7 * h) / T + 6 * h);
    if (first) params += V * h / T + 2048 * h;
    if (last) params += 2 * h + V * h / T;
    EXPECT_EQ(At(t, "dp", OpKind::NcclAllReduce).first, 2 * 4 * params) << "rank " << rt.header.global_rank;
    // The tied embedding's fp32 gradient, once per iteration between first and last stage.
    const uint64_t embd = first || last ? 2 : 0;
    EXPECT_EQ(At(t, "embd", OpKind::NcclAllReduce), std::make_pair(embd * V * h / T * 4, embd));
  }
}

TEST(Hybrid, PipelineRunsOneForwardOneBackwardWithWarmUpAndCoolDown) {
  TempDir tmp;
  SynthOptions o = Hybrid("llama3-8b", 2, 4, 1, 7);
  o.sequence_parallel = true;
  o.seq_len = 256;
  auto w = Write(o, tmp, "set");
  const int P = 4, M = 7, L = 32 / P;
  auto repeat = [](const std::string& x, int n) {
    std::string y;
    for (int i = 0; i < n; ++i) y += x;
    return y;
  };
  for (const auto& rt : w->set.ranks) {
    const int p = rt.header.global_rank / 2;
    const bool first = p == 0, last = p == P - 1;
    // The tensor-parallel calls as letters (G all-gather, S reduce-scatter, A
    // all-reduce). With sequence parallelism a layer's forward is GSGS and its
    // backward GGSGGS (the input gathered again for the weight gradient); the
    // embedding adds S forward and G backward, the head G + 3 loss all-reduces
    // forward and GS backward.
    std::string calls;
    int sends_next = 0, sends_prev = 0, recvs_next = 0, recvs_prev = 0;
    for (const auto& op : rt.ops) {
      if (op.kind == OpKind::NcclAllGather) calls += 'G';
      if (op.kind == OpKind::NcclReduceScatter) calls += 'S';
      if (op.kind == OpKind::NcclAllReduce) calls += 'A';
      if (op.kind == OpKind::NcclSend) ++(op.peer == p + 1 ? sends_next : sends_prev);
      if (op.kind == OpKind::NcclRecv) ++(op.peer == p + 1 ? recvs_next : recvs_prev);
    }
    const std::string fwd = (first ? "S" : "") + repeat("GSGS", L) + (last ? "GAAA" : "");
    const std::string bwd = (last ? "GS" : "") + repeat("GGSGGS", L) + (first ? "G" : "");
    // 1F1B: P-1-p warm-up forwards, then forward/backward pairs, then the
    // remaining backwards.
    const int warmup = std::min(P - 1 - p, M);
    std::string want = repeat(fwd, warmup) + repeat(fwd + bwd, M - warmup) + repeat(bwd, warmup);
    EXPECT_EQ(calls, want) << "stage " << p;
    // M activations forward and M gradients back across each stage boundary.
    EXPECT_EQ(sends_next, last ? 0 : M) << "stage " << p;
    EXPECT_EQ(recvs_next, last ? 0 : M) << "stage " << p;
    EXPECT_EQ(sends_prev, first ? 0 : M) << "stage " << p;
    EXPECT_EQ(recvs_prev, first ? 0 : M) << "stage " << p;
    // Sends go out after the forward that made them: on stage p the first send
    // to p+1 follows the first forward, before any backward.
    if (!last) {
      size_t gathers = 0;
      for (const auto& op : rt.ops) {
        if (op.kind == OpKind::NcclAllGather) ++gathers;
        if (op.kind == OpKind::NcclSend) break;
      }
      EXPECT_EQ(gathers, size_t(2 * L)) << "stage " << p;
    }
  }
}

TEST(Hybrid, MixtureOfExpertsAllToAllAndExpertGradientsAreTheClosedForms) {
  TempDir tmp;
  SynthOptions o = Hybrid("mixtral-8x7b", 2, 2, 4, 2);
  o.ep = 2;
  o.seq_len = 1024;
  o.sequence_parallel = true;
  o.dtype = "bf16";
  auto w = Write(o, tmp, "set");
  const uint64_t T = 2, E = 2, M = 2, s = 1024, h = 4096, ffn = 14336, k = 2, L = 32 / 2;
  const uint64_t A = s * h * 2;           // activation, micro-batch of 1
  const uint64_t D = s / T * k * h * 2;   // tokens this rank routes, k copies each
  for (const auto& rt : w->set.ranks) {
    const int32_t r = rt.header.global_rank;
    const bool first = r < 8, last = !first;
    auto t = Totals(rt);
    // Dispatch and combine, forward and backward: 4 all-to-alls per layer.
    EXPECT_EQ(At(t, "ep", OpKind::NcclAllToAll), std::make_pair(M * L * 4 * D, M * L * 4));
    // Expert TP shards gather the tokens of both TP ranks (T * D) around the experts.
    const uint64_t gathers = M * (L * (3 * A + 2 * T * D) + (first ? A : 0) + (last ? 2 * A : 0));
    const uint64_t scatters = M * (L * (2 * A + 2 * T * D) + (first ? A : 0) + (last ? A : 0));
    EXPECT_EQ(At(t, "tp", OpKind::NcclAllGather).first, gathers) << "rank " << r;
    EXPECT_EQ(At(t, "tp", OpKind::NcclReduceScatter).first, scatters) << "rank " << r;
    // Each rank holds 8/E experts of 3 h x ffn matrices, split over TP; their
    // bf16 gradients are all-reduced over the expert-data-parallel group.
    EXPECT_EQ(At(t, "edp", OpKind::NcclAllReduce).first, L * (8 / E) * 3 * h * ffn / T * 2);
  }
  for (const auto& rt : w->set.ranks)
    for (const auto& c : rt.communicators)
      if (c.name == "ep") {
        const int32_t r = rt.header.global_rank, d = (r / 2) % 4;
        const int32_t base = r - 2 * (d % 2);
        EXPECT_EQ(c.members, (std::vector<int32_t>{base, base + 2})) << "rank " << r;
      }
}

TEST(Hybrid, ZeroStagesMoveTheDocumentedCollectives) {
  TempDir tmp;
  for (int zero : {1, 3}) {
    SynthOptions o = Hybrid("llama3-8b", 1, 2, 4, 3);
    o.seq_len = 512;
    o.zero = zero;
    o.iterations = 2;
    auto w = Write(o, tmp, "z" + std::to_string(zero));
    auto t = Totals(w->set.ranks[0]);
    EXPECT_EQ(At(t, "dp", OpKind::NcclAllReduce).second, 0u);
    // Stage 0 of 2: 16 layers of (QKV 4096 x 6144, projection, 3 MLP
    // matrices, 2 norms) and the embedding.
    const uint64_t h = 4096, layer = h * 6144 + h * h + 3 * h * 14336 + 2 * h;
    const uint64_t params = 16 * layer + 128256 * h;
    if (zero == 1) {
      EXPECT_EQ(At(t, "dp", OpKind::NcclReduceScatter).first, 2 * params * 4);
      EXPECT_EQ(At(t, "dp", OpKind::NcclAllGather).first, 2 * params * 2);
    } else {
      // Per micro-batch: every layer gathered for forward and backward; all
      // gradients reduce-scattered.
      EXPECT_EQ(At(t, "dp", OpKind::NcclReduceScatter).first, 2 * 3 * params * 4);
      EXPECT_EQ(At(t, "dp", OpKind::NcclAllGather).first, 2 * 3 * 2 * 16 * layer * 2);
    }
  }
}

TEST(Hybrid, BadLayoutsAreRefused) {
  SynthOptions o;
  o.model = "gpt3-175b";
  o.tp = 8;
  o.pp = 7;
  o.ranks = 56;
  EXPECT_NE(CheckSynthOptions(o).find("not divisible into 7"), std::string::npos);
  o.pp = 8;
  o.ranks = 100;
  EXPECT_NE(CheckSynthOptions(o).find("not a multiple"), std::string::npos);
  o = SynthOptions{};
  o.model = "mixtral-8x7b";
  o.tp = 2;
  o.ranks = 8;
  o.ep = 2;
  EXPECT_NE(CheckSynthOptions(o).find("--sequence-parallel"), std::string::npos);
  o = SynthOptions{};
  o.tp = 2;
  EXPECT_NE(CheckSynthOptions(o).find("transformer models only"), std::string::npos);
}

}  // namespace
}  // namespace dltrace::models
