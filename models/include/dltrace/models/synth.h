// SPDX-License-Identifier: GPL-2.0-only
// Synthetic training workloads written as ordinary trace sets every command
// accepts: DDP gradient buckets of known models, and hybrid-parallel (tensor,
// pipeline, data, expert) transformer training laid out as Megatron-LM does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dltrace/formats/trace.h"

namespace dltrace::formats {
class TraceWriter;
}

namespace dltrace::models {

struct ModelSpec {
  const char* name;
  const char* description;
  double default_compute_ms;  // forward + backward per iteration
};

const std::vector<ModelSpec>& AllModels();
const ModelSpec* FindModel(const std::string& name);

// Parameter count of each gradient tensor, in forward (registration) order,
// built from the architecture: resnet50 sums to 25,557,032, resnet152 to
// 60,192,808, bert-large to 335,141,888, gpt2-xl to 1,557,611,200.
std::vector<uint64_t> ModelParameters(const std::string& model);

// PyTorch DDP bucketing: tensors in reverse order, a bucket closed once it
// holds at least BUCKET_BYTES. Returns bucket sizes in bytes, in issue order;
// *CLOSED_BY (when given) gets, per bucket, the index in PARAMETERS of the
// tensor that closed it (the earliest layer in it: the last to get its gradient).
std::vector<uint64_t> GradientBuckets(const std::vector<uint64_t>& parameters,
                                      uint64_t bytes_per_parameter, uint64_t bucket_bytes,
                                      std::vector<size_t>* closed_by = nullptr);

// A transformer as its paper or model card gives it (models/README.md lists
// the sources). Dense models have experts == 0.
struct TransformerSpec {
  const char* name;
  const char* description;
  const char* source;
  int layers;
  uint64_t hidden, heads, kv_heads, ffn, vocab;
  int seq_len;       // training sequence length dltrace uses by default
  int experts = 0;   // MoE: experts per layer
  int top_k = 0;     // MoE: experts each token is routed to
  bool gated_mlp = false;     // SwiGLU: three FFN matrices instead of two
  bool gpt_style = false;     // biases, LayerNorm (weight + bias), learned positions, tied embeddings
};

const std::vector<TransformerSpec>& AllTransformers();
const TransformerSpec* FindTransformer(const std::string& name);
// Total parameters: gpt3-175b 174,604,259,328; llama2-70b 68,976,648,192;
// llama3-8b 8,030,261,248; mixtral-8x7b 46,702,792,704.
uint64_t TransformerParameters(const TransformerSpec& spec);

// Megatron-LM's rank layout (parallel_state.py, order "tp-cp-ep-dp-pp" with
// no context parallelism): tensor-parallel ranks innermost, then data, then
// pipeline: rank = t + tp * (d + dp * p). Experts use Megatron-core's expert
// grid with expert-tensor-parallel size = tp (its default): an expert-parallel
// group is ep consecutive data-parallel indices of one (t, p); the
// expert-data-parallel group is the data-parallel indices with the same d mod ep.
struct MegatronLayout {
  int tp = 1, pp = 1, dp = 1, ep = 1;

  int world() const { return tp * pp * dp; }
  int Rank(int t, int d, int p) const { return t + tp * (d + dp * p); }
  int TpIndex(int rank) const { return rank % tp; }
  int DpIndex(int rank) const { return (rank / tp) % dp; }
  int PpIndex(int rank) const { return rank / (tp * dp); }
  // Members of RANK's groups, in communicator-rank order.
  std::vector<int32_t> TpGroup(int rank) const;
  std::vector<int32_t> PpGroup(int rank) const;
  std::vector<int32_t> DpGroup(int rank) const;
  std::vector<int32_t> EpGroup(int rank) const;
  std::vector<int32_t> ExpertDpGroup(int rank) const;
  // Megatron's embedding group (default_embedding_ranks): the first and last
  // stage of RANK's pipeline, where a tied word embedding lives twice and its
  // gradient is all-reduced; empty for other stages and for one stage.
  std::vector<int32_t> EmbeddingGroup(int rank) const;
};

struct SynthOptions {
  std::string model = "resnet50";
  int ranks = 8;
  int ranks_per_host = 8;
  int iterations = 10;
  double compute_ms = 0;  // 0: the model's default (DDP models)
  std::string dtype = "fp32";  // gradient type: fp32 | bf16
  uint64_t bucket_bytes = 25ull << 20;  // DDP's bucket_cap_mb = 25
  double link_gbps = 100;  // sets how long each collective takes on the GPU timeline
  double local_gbps = 2400;  // same-host transfers (NVLink-like), as LowerOptions::local_link

  // Hybrid parallelism (transformer models only). ranks = tp * pp * dp; dp 0:
  // ranks / (tp * pp). Activations and parameters move in bf16.
  int tp = 1, pp = 1, dp = 0, ep = 1;
  int microbatches = 0;  // per iteration; 0: pp (the fewest that fill the pipeline)
  int micro_batch_size = 1;
  int seq_len = 0;  // 0: the model's
  bool sequence_parallel = false;
  int zero = 0;  // 0 all-reduce; 1, 2 reduce-scatter + all-gather; 3 per-layer (FSDP)
  double gpu_tflops = 312;  // peak dense bf16 (A100)
  double mfu = 0.5;         // fraction of the peak the model's matmuls reach
};

// The layout SynthOptions ask for (transformer models), dp resolved.
MegatronLayout LayoutOf(const SynthOptions& options);

// Compute time in nanoseconds of FLOPS split over TP ranks, at gpu_tflops * mfu:
// t = flops / tp / (gpu_tflops * 1e12 * mfu).
double ComputeNs(const SynthOptions& options, double flops);

// Forward FLOPs of one transformer layer for one micro-batch (all TP ranks
// together), b = micro_batch_size, s = seq_len, h = hidden, g = kv_heads *
// head_dim: attention 2bs(h(h + 2g) + h^2) + 4bs^2h; MLP 2bs * m * h * ffn
// (m = 3 gated, else 2), times top_k for MoE. Backward = 2 x forward; no
// activation recomputation. GPT-3 gives Narayanan et al.'s 24bsh^2 + 4bs^2h.
struct LayerFlops {
  double attention = 0, mlp = 0;
};
LayerFlops TransformerLayerFlops(const TransformerSpec& spec, const SynthOptions& options);

// Checks options; returns an empty string or one line saying what is wrong.
std::string CheckSynthOptions(const SynthOptions& options);

// The header of synth's rank file RANK of WORLD: host "node<rank / ranks_per_host>",
// local rank, pid and the job id; the caller adds its attributes.
formats::Header SynthRankHeader(const SynthOptions& options, int32_t rank, int32_t world,
                                int64_t start_ns);
// Creates synth's output directory DIR, which must not exist yet.
bool MakeSynthDir(const std::string& dir, std::string* error);
// Closes synth's rank file W with its footer: every event written, the last
// one ending at END_NS, reason "synthetic".
bool CloseSynthRank(formats::TraceWriter* w, int64_t end_ns, std::string* error);

// Writes one .dltrace file per rank into DIR, which must not exist yet.
bool WriteSynthTraceSet(const SynthOptions& options, const std::string& dir, std::string* error);

// The hybrid trace set (WriteSynthTraceSet calls it for transformer models).
// Each header keeps the options as "synth.*" attributes (SynthOptionsFromHeader
// reads them back: how `dltrace scale` regrows the data-parallel dimension).
bool WriteHybridTraceSet(const SynthOptions& options, const std::string& dir, std::string* error);
bool SynthOptionsFromAttributes(const std::vector<std::pair<std::string, std::string>>& attributes,
                                SynthOptions* options);

}  // namespace dltrace::models
