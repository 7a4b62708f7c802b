// Synthetic data-parallel training workloads: DDP-style gradient buckets of
// known models, written as ordinary trace sets every command accepts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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
// holds at least BUCKET_BYTES. Returns bucket sizes in bytes, in issue order.
std::vector<uint64_t> GradientBuckets(const std::vector<uint64_t>& parameters,
                                      uint64_t bytes_per_parameter, uint64_t bucket_bytes);

struct SynthOptions {
  std::string model = "resnet50";
  int ranks = 8;
  int ranks_per_host = 8;
  int iterations = 10;
  double compute_ms = 0;  // 0: the model's default
  std::string dtype = "fp32";  // fp32 | bf16
  uint64_t bucket_bytes = 25ull << 20;  // DDP's bucket_cap_mb = 25
  double link_gbps = 100;  // sets how long each all-reduce takes on the GPU timeline
};

// Checks options; returns an empty string or one line saying what is wrong.
std::string CheckSynthOptions(const SynthOptions& options);

// Writes one .dltrace file per rank into DIR, which must not exist yet.
bool WriteSynthTraceSet(const SynthOptions& options, const std::string& dir, std::string* error);

}  // namespace dltrace::models
