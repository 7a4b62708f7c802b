// SPDX-License-Identifier: GPL-2.0-only
// dltrace-sample-trace: writes a small, deterministic trace set with the
// trace writer (a data-parallel job: NCCL all-reduce buckets with GPU timing,
// an MPI broadcast and barrier, ring point-to-point, resource samples), or
// permutation traffic (every rank sends one message to one other rank, each
// rank receives one: NCCL send/recv in a group, as load-balancing studies use).
// Tests derive their expected values from the same parameters.
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "communicators.h"
#include "dltrace/formats/writer.h"

using namespace dltrace::formats;

namespace {

struct Options {
  std::string out;
  int ranks = 4;
  int hosts = 2;
  int iterations = 10;
  int buckets = 4;
  uint64_t bucket_bytes = 25u << 20;  // PyTorch DDP's default bucket
  int skip_rank = -1;                  // leave one rank out (tests)
  bool nccl_only = false;              // only the all-reduce buckets (no MPI calls)
  uint64_t alltoall_bytes = 0;         // per iteration an NCCL all-to-all of this size (a MoE dispatch)
  uint64_t permutation_bytes = 0;      // instead of all else: per iteration rank r sends this to perm[r]
  uint32_t permutation_seed = 1;       // which permutation (std::mt19937 of it)
};

// A random permutation of N ranks without fixed points (each rank sends to
// another): a shuffle by SEED, then every fixed point swapped with the next.
std::vector<int> Permutation(int n, uint32_t seed) {
  std::vector<int> perm(size_t(n), 0);
  for (int i = 0; i < n; ++i) perm[size_t(i)] = i;
  std::mt19937 rng(seed);
  for (int i = n - 1; i > 0; --i) std::swap(perm[size_t(i)], perm[std::uniform_int_distribution<int>(0, i)(rng)]);
  for (int i = 0; i < n; ++i)
    if (perm[size_t(i)] == i) std::swap(perm[size_t(i)], perm[size_t((i + 1) % n)]);
  return perm;
}

int Usage() {
  std::fprintf(stderr,
               "usage: dltrace-sample-trace -o DIR [--ranks N] [--hosts H] [--iterations I]\n"
               "                            [--buckets B] [--bucket-bytes N] [--skip-rank R] [--nccl-only]\n"
               "                            [--alltoall-bytes N] [--permutation BYTES [--permutation-seed S]]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if ((a == "-o" || a == "--output") && (v = next())) o.out = v;
    else if (a == "--ranks" && (v = next())) o.ranks = std::atoi(v);
    else if (a == "--hosts" && (v = next())) o.hosts = std::atoi(v);
    else if (a == "--iterations" && (v = next())) o.iterations = std::atoi(v);
    else if (a == "--buckets" && (v = next())) o.buckets = std::atoi(v);
    else if (a == "--bucket-bytes" && (v = next())) o.bucket_bytes = std::strtoull(v, nullptr, 10);
    else if (a == "--skip-rank" && (v = next())) o.skip_rank = std::atoi(v);
    else if (a == "--nccl-only") o.nccl_only = true;
    else if (a == "--alltoall-bytes" && (v = next())) o.alltoall_bytes = std::strtoull(v, nullptr, 10);
    else if (a == "--permutation" && (v = next())) o.permutation_bytes = std::strtoull(v, nullptr, 10);
    else if (a == "--permutation-seed" && (v = next())) o.permutation_seed = uint32_t(std::strtoul(v, nullptr, 10));
    else return Usage();
  }
  if (o.out.empty() || o.ranks < 2 || o.hosts < 1 || o.hosts > o.ranks || o.iterations < 1 ||
      o.buckets < (o.alltoall_bytes > 0 ? 0 : 1))
    return Usage();
  if (::mkdir(o.out.c_str(), 0755) != 0) {
    std::fprintf(stderr, "dltrace-sample-trace: cannot create %s: %s\n", o.out.c_str(),
                 std::strerror(errno));
    return 1;
  }
  if (o.permutation_bytes > 0) o.nccl_only = true;  // the permutation alone
  const int per_host = (o.ranks + o.hosts - 1) / o.hosts;
  const std::vector<int> perm = Permutation(o.ranks, o.permutation_seed);
  std::vector<int> from(perm.size());
  for (int r = 0; r < o.ranks; ++r) from[size_t(perm[size_t(r)])] = r;
  const int64_t t0 = 1'000'000'000'000;  // 1000 s of CLOCK_MONOTONIC
  for (int r = 0; r < o.ranks; ++r) {
    if (r == o.skip_rank) continue;
    Header h;
    h.global_rank = r;
    h.world_size = o.ranks;
    h.local_rank = r % per_host;
    h.host = "node" + std::to_string(r / per_host);
    h.pid = 1000 + r;
    h.command_line = {"python3", "train.py", "--model", "resnet50"};
    h.start_monotonic_ns = uint64_t(t0);
    h.start_realtime_ns = 1'700'000'000'000'000'000ull;
    h.recorder_version = "sample";
    h.nccl_version = "2.28.9";
    h.mpi_version = "Open MPI v4.1.4";
    h.gpu_device = h.local_rank;
    h.gpu_bus_id = "0000:0" + std::to_string(h.local_rank) + ":00.0";
    h.job_id = "sample";
    h.rank_env = {{"RANK", std::to_string(r)}, {"LOCAL_RANK", std::to_string(h.local_rank)}};
    std::string err;
    std::string path = o.out + "/rank" + std::to_string(r) + ".dltrace";
    auto w = TraceWriter::Create(path, h, &err);
    if (!w) {
      std::fprintf(stderr, "dltrace-sample-trace: %s\n", err.c_str());
      return 1;
    }
    Communicator world = dltrace_test::MpiWorld(o.ranks, r);
    world.created_ns = uint64_t(t0);
    w->AddCommunicator(world);
    Communicator nccl = world;
    nccl.id = 1;
    nccl.api = Api::Nccl;
    nccl.name = "nccl-dp";
    nccl.nccl_unique_id_hash = 0x5eed5eed12345678ull;
    nccl.cuda_device = h.local_rank;
    nccl.bus_id = h.gpu_bus_id;
    w->AddCommunicator(nccl);

    int64_t t = t0 + 1'000'000;
    uint64_t mpi_seq = 0, nccl_seq = 0;
    auto mpi_op = [&](OpKind kind, uint64_t bytes, int peer, int tag, int64_t dur) {
      if (o.nccl_only) return;
      OpEvent op;
      op.kind = kind;
      op.comm = 0;
      op.count = bytes / 4;
      op.datatype = DataType::Float32;
      op.bytes = bytes;
      op.peer = peer;
      op.tag = tag;
      op.seq = mpi_seq++;
      op.enter_ns = t;
      op.exit_ns = t + dur;
      t += dur + 10'000;
      w->AddOp(op);
    };
    // An NCCL collective of BYTES on the GPU for GPU_NS; the next call 2 ms later.
    auto nccl_op = [&](OpKind kind, uint64_t bytes, RedOp red_op, int64_t gpu_ns) {
      OpEvent op;
      op.kind = kind;
      op.comm = 1;
      op.count = bytes / 4;
      op.datatype = DataType::Float32;
      op.bytes = bytes;
      op.red_op = red_op;
      op.stream = 0x7f0000001000ull;
      op.seq = nccl_seq++;
      op.enter_ns = t;
      op.exit_ns = t + 20'000;
      op.gpu_start_ns = t + 50'000;
      op.gpu_end_ns = t + 50'000 + gpu_ns;
      t += 2'000'000;
      w->AddOp(op);
    };
    // Permutation traffic: per iteration one NCCL group of a send to perm[r]
    // and a receive from its inverse, at 100 Gbit/s on the GPU clock.
    auto p2p = [&](OpKind kind, int peer, uint32_t group) {
      OpEvent op;
      op.kind = kind;
      op.comm = 1;
      op.count = o.permutation_bytes;
      op.datatype = DataType::Int8;
      op.bytes = o.permutation_bytes;
      op.peer = peer;
      op.stream = 0x7f0000001000ull;
      op.seq = nccl_seq++;
      op.group = group;
      op.enter_ns = t;
      op.exit_ns = t + 5'000;
      op.gpu_start_ns = t + 10'000;
      op.gpu_end_ns = t + 10'000 + int64_t(o.permutation_bytes * 8 / 100);
      w->AddOp(op);
    };
    for (int it = 0; o.permutation_bytes > 0 && it < o.iterations; ++it) {
      p2p(OpKind::NcclSend, perm[size_t(r)], uint32_t(it + 1));
      p2p(OpKind::NcclRecv, from[size_t(r)], uint32_t(it + 1));
      t += 10'000 + int64_t(o.permutation_bytes * 8 / 100) + 1'000'000;
    }
    mpi_op(OpKind::MpiBcast, 1 << 20, 0, -1, 2'000'000);
    for (int it = 0; o.permutation_bytes == 0 && it < o.iterations; ++it) {
      t += 30'000'000;  // forward + backward
      for (int b = 0; b < o.buckets; ++b) nccl_op(OpKind::NcclAllReduce, o.bucket_bytes, RedOp::Sum, 10'000'000);
      // A MoE dispatch: every rank sends bytes / ranks to each rank.
      if (o.alltoall_bytes > 0) nccl_op(OpKind::NcclAllToAll, o.alltoall_bytes, RedOp::None, 2'000'000);
      t += 40'000'000;
      // Ring exchange of a 1 MB activation between neighbours.
      int right = (r + 1) % o.ranks, left = (r + o.ranks - 1) % o.ranks;
      if (r % 2 == 0) {
        mpi_op(OpKind::MpiSend, 1 << 20, right, it, 500'000);
        mpi_op(OpKind::MpiRecv, 1 << 20, left, it, 500'000);
      } else {
        mpi_op(OpKind::MpiRecv, 1 << 20, left, it, 500'000);
        mpi_op(OpKind::MpiSend, 1 << 20, right, it, 500'000);
      }
      ResourceSample s;
      s.time_ns = uint64_t(t);
      s.cpu_percent = 95.0f + float(it % 5);
      s.rss_bytes = (2ull << 30) + uint64_t(it) * (1u << 20);
      s.net_rx_bytes = uint64_t(it + 1) * (100u << 20);
      s.net_tx_bytes = uint64_t(it + 1) * (100u << 20);
      s.disk_read_bytes = uint64_t(it + 1) * (10u << 20);
      w->AddSample(s);
      if (!w->Flush(&err)) {
        std::fprintf(stderr, "dltrace-sample-trace: %s\n", err.c_str());
        return 1;
      }
    }
    if (o.permutation_bytes == 0) mpi_op(OpKind::MpiBarrier, 0, -1, -1, 1'000'000);
    Footer f;
    f.events_written = w->ops_written() + w->pending_ops();
    f.samples_written = o.permutation_bytes > 0 ? 0 : uint64_t(o.iterations);
    f.end_monotonic_ns = uint64_t(t);
    f.end_realtime_ns = h.start_realtime_ns + uint64_t(t - t0);
    f.reason = "finalize";
    if (!w->Close(f, &err)) {
      std::fprintf(stderr, "dltrace-sample-trace: %s\n", err.c_str());
      return 1;
    }
  }
  std::printf("wrote %d rank files to %s\n", o.skip_rank >= 0 ? o.ranks - 1 : o.ranks,
              o.out.c_str());
  return 0;
}
