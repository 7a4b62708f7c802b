// SPDX-License-Identifier: GPL-2.0-only
// A typical training trace for size and speed measurements: DDP-style
// gradient buckets (NCCL all-reduce, GPU-timed) plus MPI point-to-point and
// small collectives, with jittered timings from a fixed seed.
#pragma once

#include <random>
#include <vector>

#include "dltrace/formats/trace.h"

namespace dltrace::bench {

inline std::vector<formats::OpEvent> TypicalTrainingOps(size_t n, bool gpu, uint32_t seed = 1) {
  using namespace dltrace::formats;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> jitter(0, 200'000);
  // ResNet-50 gradients (102.2 MB fp32) in 25 MB DDP buckets, last one partial.
  const uint64_t sizes[] = {26'214'400, 26'214'400, 26'214'400, 23'585'728};
  std::vector<OpEvent> ops;
  ops.reserve(n);
  int64_t t = 1'000'000'000;
  uint64_t nccl_seq = 0, mpi_seq = 0;
  while (ops.size() < n) {
    t += 80'000'000 + jitter(rng);  // forward + backward
    for (uint64_t bytes : sizes) {
      if (ops.size() == n) break;
      OpEvent op;
      op.kind = gpu ? OpKind::NcclAllReduce : OpKind::MpiAllreduce;
      op.comm = 1;
      op.count = bytes / 4;
      op.datatype = DataType::Float32;
      op.bytes = bytes;
      op.red_op = RedOp::Sum;
      op.stream = gpu ? 0x7f12a0001000ull : 0;
      op.seq = gpu ? nccl_seq++ : mpi_seq++;
      op.enter_ns = t;
      if (gpu) {
        op.exit_ns = t + 8'000 + jitter(rng) / 20;
        op.gpu_start_ns = t + 30'000 + jitter(rng);
        op.gpu_end_ns = *op.gpu_start_ns + 9'000'000 + jitter(rng) * 5;
        t += 3'000'000 + jitter(rng);
      } else {
        op.exit_ns = t + 9'000'000 + jitter(rng) * 5;
        t = op.exit_ns + 50'000;
      }
      ops.push_back(op);
    }
    // Pipeline-style activations to the neighbours and a loss all-reduce.
    for (int i = 0; i < 4 && ops.size() < n; ++i) {
      OpEvent op;
      op.kind = i % 2 ? OpKind::MpiRecv : OpKind::MpiSend;
      op.comm = 0;
      op.count = 262'144;
      op.datatype = DataType::Float32;
      op.bytes = 1'048'576;
      op.peer = i % 2 ? 3 : 1;
      op.tag = 100;
      op.seq = mpi_seq++;
      op.enter_ns = t;
      op.exit_ns = t + 400'000 + jitter(rng);
      t = op.exit_ns + 5'000;
      ops.push_back(op);
    }
    if (ops.size() < n) {
      OpEvent op;
      op.kind = OpKind::MpiAllreduce;
      op.comm = 0;
      op.count = 1;
      op.datatype = DataType::Float32;
      op.bytes = 4;
      op.red_op = RedOp::Sum;
      op.seq = mpi_seq++;
      op.enter_ns = t;
      op.exit_ns = t + 20'000 + jitter(rng) / 10;
      t = op.exit_ns;
      ops.push_back(op);
    }
  }
  return ops;
}

}  // namespace dltrace::bench
