// SPDX-License-Identifier: GPL-2.0-only
// Synthetic workloads: parameter lists derived from each architecture, DDP
// bucketing, and a timeline where gradient all-reduces overlap the backward pass.
#include "dltrace/models/synth.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "dltrace/formats/writer.h"
#include "dltrace/models/lower.h"

namespace dltrace::models {

namespace {

std::vector<uint64_t> ResNet(std::initializer_list<int> blocks) {
  // torchvision's Bottleneck ResNet: conv weights (no bias) and batch-norm
  // weight + bias per convolution, then the 1000-class classifier.
  std::vector<uint64_t> p = {3 * 64 * 49, 64, 64};
  uint64_t in = 64;
  const uint64_t widths[] = {64, 128, 256, 512};
  size_t stage = 0;
  for (int n : blocks) {
    const uint64_t w = widths[stage++];
    for (int b = 0; b < n; ++b) {
      p.insert(p.end(), {in * w, w, w, w * w * 9, w, w, w * 4 * w, 4 * w, 4 * w});
      if (b == 0) p.insert(p.end(), {in * 4 * w, 4 * w, 4 * w});
      in = 4 * w;
    }
  }
  p.insert(p.end(), {2048 * 1000, 1000});
  return p;
}

std::vector<uint64_t> BertLarge() {
  const uint64_t h = 1024, ff = 4096;
  std::vector<uint64_t> p = {30522 * h, 512 * h, 2 * h, h, h};
  for (int l = 0; l < 24; ++l) {
    for (int k = 0; k < 4; ++k) p.insert(p.end(), {h * h, h});  // Q, K, V, output
    p.insert(p.end(), {h, h, h * ff, ff, ff * h, h, h, h});
  }
  p.insert(p.end(), {h * h, h});  // pooler
  return p;
}

std::vector<uint64_t> Gpt2Xl() {
  const uint64_t d = 1600;
  std::vector<uint64_t> p = {50257 * d, 1024 * d};
  for (int l = 0; l < 48; ++l)
    p.insert(p.end(), {d, d, d * 3 * d, 3 * d, d * d, d, d, d, d * 4 * d, 4 * d, 4 * d * d, d});
  p.insert(p.end(), {d, d});
  return p;
}

}  // namespace

const std::vector<ModelSpec>& AllModels() {
  static const std::vector<ModelSpec> models = {
      {"resnet50", "ResNet-50, 25,557,032 parameters", 60},
      {"resnet152", "ResNet-152, 60,192,808 parameters", 150},
      {"bert-large", "BERT-large, 335,141,888 parameters", 300},
      {"gpt2-xl", "GPT-2 XL, 1,557,611,200 parameters", 1000},
  };
  return models;
}

const ModelSpec* FindModel(const std::string& name) {
  for (const auto& m : AllModels())
    if (name == m.name) return &m;
  return nullptr;
}

std::vector<uint64_t> ModelParameters(const std::string& model) {
  if (model == "resnet50") return ResNet({3, 4, 6, 3});
  if (model == "resnet152") return ResNet({3, 8, 36, 3});
  if (model == "bert-large") return BertLarge();
  if (model == "gpt2-xl") return Gpt2Xl();
  return {};
}

std::vector<uint64_t> GradientBuckets(const std::vector<uint64_t>& parameters,
                                      uint64_t bytes_per_parameter, uint64_t bucket_bytes,
                                      std::vector<size_t>* closed_by) {
  std::vector<uint64_t> buckets;
  if (closed_by) closed_by->clear();
  uint64_t current = 0;
  for (size_t i = parameters.size(); i-- > 0;) {
    current += parameters[i] * bytes_per_parameter;
    if (current >= bucket_bytes || (i == 0 && current)) {
      buckets.push_back(current);
      if (closed_by) closed_by->push_back(i);
      current = 0;
    }
  }
  return buckets;
}

std::string CheckSynthOptions(const SynthOptions& o) {
  const TransformerSpec* t = FindTransformer(o.model);
  if (!FindModel(o.model) && !t) {
    std::string names;
    for (const auto& m : AllModels()) names += std::string(names.empty() ? "" : ", ") + m.name;
    for (const auto& m : AllTransformers()) names += std::string(", ") + m.name;
    return "unknown model '" + o.model + "' (one of " + names + ")";
  }
  if (o.ranks < 1) return "--ranks must be at least 1";
  if (o.tp < 1 || o.pp < 1 || o.ep < 1 || o.dp < 0) return "--tp, --pp, --dp and --ep must be at least 1";
  if (!t) {
    if (o.tp != 1 || o.pp != 1 || o.ep != 1 || o.sequence_parallel || o.zero != 0 || o.microbatches != 0)
      return "--tp, --pp, --ep, --sequence-parallel, --zero and --microbatches apply to the "
             "transformer models only; " + o.model + " is data-parallel (--ranks)";
    if (o.dp != 0 && o.dp != o.ranks) return "--dp must equal --ranks for " + o.model;
  } else {
    const MegatronLayout l = LayoutOf(o);
    const std::string sizes = "--tp " + std::to_string(o.tp) + " x --pp " + std::to_string(o.pp);
    if (o.dp == 0 && o.ranks % (o.tp * o.pp) != 0)
      return "--ranks " + std::to_string(o.ranks) + " is not a multiple of " + sizes;
    if (o.dp != 0 && o.ranks != l.world())
      return "--ranks " + std::to_string(o.ranks) + " is not " + sizes + " x --dp " + std::to_string(o.dp);
    if (t->layers % o.pp != 0)
      return o.model + " has " + std::to_string(t->layers) + " layers, not divisible into " +
             std::to_string(o.pp) + " pipeline stages";
    if (t->heads % uint64_t(o.tp) != 0 || t->kv_heads % uint64_t(o.tp) != 0)
      return o.model + "'s " + std::to_string(t->heads) + " heads (" + std::to_string(t->kv_heads) +
             " key/value heads) do not split over --tp " + std::to_string(o.tp);
    if (o.ep > 1 && !t->experts) return "--ep needs a mixture-of-experts model (mixtral-8x7b)";
    if (o.ep > 1 && (l.dp % o.ep != 0 || t->experts % o.ep != 0))
      return "--ep " + std::to_string(o.ep) + " must divide the data-parallel size " +
             std::to_string(l.dp) + " and the " + std::to_string(t->experts) + " experts";
    if (t->experts && o.tp > 1 && !o.sequence_parallel)
      return "mixture-of-experts with --tp > 1 needs --sequence-parallel (as Megatron-LM requires)";
    if (o.zero < 0 || o.zero > 3) return "--zero must be 0, 1, 2 or 3";
    if (o.microbatches < 0 || o.micro_batch_size < 1 || o.seq_len < 0)
      return "--microbatches, --micro-batch-size and --seq-len must be positive";
    if (o.sequence_parallel && (o.seq_len ? o.seq_len : t->seq_len) % o.tp != 0)
      return "--sequence-parallel needs the sequence length to be a multiple of --tp";
    if (o.gpu_tflops <= 0 || o.mfu <= 0 || o.mfu > 1) return "--gpu-tflops must be positive and --mfu in (0, 1]";
  }
  if (o.ranks_per_host < 1) return "--ranks-per-host must be at least 1";
  if (o.iterations < 1) return "--iterations must be at least 1";
  if (o.compute_ms < 0) return "--compute-ms must not be negative";
  if (o.dtype != "fp32" && o.dtype != "bf16") return "--dtype must be fp32 or bf16";
  if (o.bucket_bytes == 0) return "bucket size must be positive";
  if (o.link_gbps <= 0 || o.local_gbps <= 0) return "link rate must be positive";
  return "";
}

formats::Header SynthRankHeader(const SynthOptions& o, int32_t rank, int32_t world, int64_t start_ns) {
  formats::Header h;
  h.global_rank = rank;
  h.world_size = world;
  h.local_rank = rank % o.ranks_per_host;
  h.host = "node" + std::to_string(rank / o.ranks_per_host);
  h.pid = 10000 + rank;
  h.command_line = {"dltrace", "synth", "--model", o.model};
  h.start_monotonic_ns = uint64_t(start_ns);
  h.recorder_version = "dltrace synth";
  h.nccl_version = "synthetic";
  h.gpu_device = h.local_rank;
  h.job_id = "synth-" + o.model;
  return h;
}

bool MakeSynthDir(const std::string& dir, std::string* error) {
  if (::mkdir(dir.c_str(), 0755) == 0) return true;
  *error = "cannot create " + dir + ": " + std::strerror(errno);
  return false;
}

bool CloseSynthRank(formats::TraceWriter* w, int64_t end_ns, std::string* error) {
  formats::Footer f;
  f.events_written = w->ops_written() + w->pending_ops();
  f.end_monotonic_ns = uint64_t(end_ns);
  f.reason = "synthetic";
  return w->Close(f, error);
}

bool WriteSynthTraceSet(const SynthOptions& o, const std::string& dir, std::string* error) {
  if (std::string e = CheckSynthOptions(o); !e.empty()) {
    *error = e;
    return false;
  }
  if (FindTransformer(o.model)) return WriteHybridTraceSet(o, dir, error);
  if (!MakeSynthDir(dir, error)) return false;
  const bool bf16 = o.dtype == "bf16";
  const uint64_t elem = bf16 ? 2 : 4;
  const std::vector<uint64_t> buckets = GradientBuckets(ModelParameters(o.model), elem, o.bucket_bytes);
  uint64_t total = 0;
  for (uint64_t b : buckets) total += b;
  const double compute_ms = o.compute_ms > 0 ? o.compute_ms : FindModel(o.model)->default_compute_ms;
  const int64_t forward_ns = int64_t(compute_ms * 1e6 / 3);
  const int64_t backward_ns = int64_t(compute_ms * 1e6) - forward_ns;
  const int n = o.ranks;
  // Ring all-reduce on the GPU timeline: 2(n-1)/n * S at the link rate (the
  // local one when every rank shares a host) plus 5 us a step.
  const double gbps = n <= o.ranks_per_host ? o.local_gbps : o.link_gbps;
  auto allreduce_ns = [&](uint64_t bytes) {
    if (n < 2) return int64_t(10'000);
    double s = 2.0 * (n - 1) / n * double(bytes) * 8 / (gbps * 1e9);
    return int64_t(s * 1e9) + 2 * (n - 1) * 5'000;
  };
  const int64_t t0 = 1'000'000'000'000;
  for (int r = 0; r < n; ++r) {
    formats::Header h = SynthRankHeader(o, r, n, t0);
    h.attributes = {{kIterationOpsAttribute, std::to_string(buckets.size())},
                    {"synth.model", o.model},
                    {"synth.dtype", o.dtype},
                    {"synth.bucket_bytes", std::to_string(o.bucket_bytes)},
                    {"synth.gradient_bytes", std::to_string(total)},
                    {"synth.compute_ms", std::to_string(compute_ms)}};
    const std::string path = dir + "/rank" + std::to_string(r) + formats::kTraceFileSuffix;
    auto w = formats::TraceWriter::Create(path, h, error);
    if (!w) return false;
    formats::Communicator c;
    c.id = 0;
    c.api = formats::Api::Nccl;
    c.name = "ddp";
    c.size = n;
    c.rank = r;
    for (int m = 0; m < n; ++m) c.members.push_back(m);
    c.nccl_unique_id_hash = 0xd17ace5e00000000ull ^ std::hash<std::string>()(o.model);
    c.cuda_device = h.local_rank;
    c.created_ns = uint64_t(t0);
    w->AddCommunicator(c);
    int64_t t = t0 + 1'000'000;
    uint64_t seq = 0;
    for (int it = 0; it < o.iterations; ++it) {
      const int64_t backward_start = t + forward_ns;
      int64_t stream_free = backward_start;
      uint64_t done = 0;
      for (uint64_t b : buckets) {
        // A bucket is ready when the backward pass has produced its gradients,
        // which arrive in reverse layer order at a steady rate.
        done += b;
        int64_t ready = backward_start + int64_t(double(backward_ns) * double(done) / double(total));
        formats::OpEvent op;
        op.kind = formats::OpKind::NcclAllReduce;
        op.comm = 0;
        op.count = b / elem;
        op.datatype = bf16 ? formats::DataType::BFloat16 : formats::DataType::Float32;
        op.bytes = b;
        op.red_op = formats::RedOp::Sum;
        op.stream = 0x7f0000002000ull;
        op.seq = seq++;
        op.enter_ns = ready;
        op.exit_ns = ready + 20'000;
        op.gpu_start_ns = std::max(ready, stream_free);
        op.gpu_end_ns = *op.gpu_start_ns + allreduce_ns(b);
        stream_free = *op.gpu_end_ns;
        w->AddOp(op);
      }
      t = std::max(backward_start + backward_ns, stream_free);
      if (!w->Flush(error)) return false;
    }
    if (!CloseSynthRank(w.get(), t, error)) return false;
  }
  return true;
}

}  // namespace dltrace::models
