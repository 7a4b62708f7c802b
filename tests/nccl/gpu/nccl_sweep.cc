// SPDX-License-Identifier: GPL-2.0-only
// For scripts/gpu-check.sh: an nccl-tests-shaped sweep (all-reduce,
// all-gather, reduce-scatter and broadcast, sizes MIN to MAX bytes by a
// factor, one warm-up and ITERS timed calls each) over RANKS processes that
// NCCL takes for RANKS nodes, so that one GPU is enough for NCCL to choose
// among its algorithms and protocols across nodes.
//
// The parent starts RANKS copies of itself, each with its own NCCL_HOSTID
// (NCCL's host hash reads it, src/misc/utils.cc), RANK and WORLD_SIZE, on GPU
// rank % (GPUs in the machine). NCCL then sees one GPU per node and joins the
// ranks over its socket transport (NCCL_SOCKET_IFNAME=lo unless set). Rank 0
// makes the unique id and hands it over through a file. Sizes are totals as
// in nccl-tests: all-gather sends size / RANKS per rank, reduce-scatter
// receives it. Prints nothing of its own but one line per rank at the end, so
// NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING's lines are the output.
//
// usage: nccl_sweep RANKS [MIN_BYTES MAX_BYTES FACTOR ITERS]
#include <cuda_runtime.h>
#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "check.h"

const char* const gpu_check::kProgram = "nccl_sweep";

namespace {

struct Sweep {
  int ranks = 2;
  size_t min_bytes = 8;
  size_t max_bytes = size_t(256) << 20;
  size_t factor = 4;
  int iters = 2;
};

ncclUniqueId ShareId(int rank, const std::string& path) {
  ncclUniqueId id;
  if (rank == 0) {
    NCCL_OK(ncclGetUniqueId(&id));
    const std::string tmp = path + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f || std::fwrite(&id, sizeof id, 1, f) != 1 || std::fclose(f) != 0 ||
        std::rename(tmp.c_str(), path.c_str()) != 0) {
      std::fprintf(stderr, "nccl_sweep: cannot write %s\n", path.c_str());
      std::exit(1);
    }
    return id;
  }
  for (int tries = 0; tries < 1200; ++tries) {  // 2 minutes
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      const bool ok = std::fread(&id, sizeof id, 1, f) == 1;
      std::fclose(f);
      if (ok) return id;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::fprintf(stderr, "nccl_sweep: rank %d: no unique id in %s after 2 minutes\n", rank, path.c_str());
  std::exit(1);
}

int Rank(const Sweep& s, int rank, const std::string& id_path) {
  int devices = 0;
  CUDA_OK(cudaGetDeviceCount(&devices));
  CUDA_OK(cudaSetDevice(rank % devices));
  ncclUniqueId id = ShareId(rank, id_path);
  ncclComm_t comm;
  NCCL_OK(ncclCommInitRank(&comm, s.ranks, id, rank));
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  char *send = nullptr, *recv = nullptr;
  CUDA_OK(cudaMalloc(&send, s.max_bytes));
  CUDA_OK(cudaMalloc(&recv, s.max_bytes));
  CUDA_OK(cudaMemset(send, 0, s.max_bytes));
  long calls = 0;
  for (const char* coll : {"allreduce", "allgather", "reducescatter", "broadcast"}) {
    for (size_t bytes = s.min_bytes; bytes <= s.max_bytes; bytes *= s.factor) {
      const size_t count = bytes / sizeof(float);
      const size_t part = count / size_t(s.ranks);
      for (int i = 0; i < 1 + s.iters; ++i) {
        if (!std::strcmp(coll, "allreduce") && count) {
          NCCL_OK(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, stream));
        } else if (!std::strcmp(coll, "allgather") && part) {
          NCCL_OK(ncclAllGather(send, recv, part, ncclFloat, comm, stream));
        } else if (!std::strcmp(coll, "reducescatter") && part) {
          NCCL_OK(ncclReduceScatter(send, recv, part, ncclFloat, ncclSum, comm, stream));
        } else if (!std::strcmp(coll, "broadcast") && count) {
          NCCL_OK(ncclBroadcast(send, recv, count, ncclFloat, 0, comm, stream));
        } else {
          continue;
        }
        ++calls;
      }
      CUDA_OK(cudaStreamSynchronize(stream));
    }
  }
  NCCL_OK(ncclCommDestroy(comm));
  CUDA_OK(cudaFree(send));
  CUDA_OK(cudaFree(recv));
  std::printf("nccl_sweep: rank %d of %d: %ld collectives\n", rank, s.ranks, calls);
  return 0;
}

// Starts the ranks as copies of this program and waits for all of them.
int Launch(const Sweep& s, char** argv) {
  char dir[] = "/tmp/nccl_sweep_XXXXXX";
  if (!mkdtemp(dir)) {
    std::perror("nccl_sweep: mkdtemp");
    return 1;
  }
  const std::string id_path = std::string(dir) + "/id";
  std::fflush(stdout);
  std::vector<pid_t> children;
  for (int rank = 0; rank < s.ranks; ++rank) {
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("nccl_sweep: fork");
      return 1;
    }
    if (pid == 0) {
      const std::string r = std::to_string(rank);
      setenv("RANK", r.c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(s.ranks).c_str(), 1);
      setenv("LOCAL_RANK", "0", 1);
      setenv("LOCAL_WORLD_SIZE", "1", 1);
      setenv("NCCL_HOSTID", ("dltrace-sweep-node" + r).c_str(), 1);
      setenv("NCCL_SOCKET_IFNAME", "lo", 0);
      std::vector<std::string> args = {argv[0], "--rank", r, id_path};
      for (int i = 1; argv[i]; ++i) args.push_back(argv[i]);
      std::vector<char*> cargs;
      for (auto& a : args) cargs.push_back(a.data());
      cargs.push_back(nullptr);
      execv("/proc/self/exe", cargs.data());
      std::perror("nccl_sweep: execv");
      _exit(127);
    }
    children.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : children) {
    int status = 0;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  std::remove(id_path.c_str());
  std::remove((id_path + ".tmp").c_str());
  rmdir(dir);
  if (failed) std::fprintf(stderr, "nccl_sweep: %d of %d ranks failed\n", failed, s.ranks);
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const bool child = argc > 3 && !std::strcmp(argv[1], "--rank");
  char** args = child ? argv + 3 : argv;  // args[1..] = RANKS [MIN MAX FACTOR ITERS]
  const int nargs = child ? argc - 3 : argc;
  Sweep s;
  if (nargs < 2) {
    std::fprintf(stderr, "usage: nccl_sweep RANKS [MIN_BYTES MAX_BYTES FACTOR ITERS]\n");
    return 2;
  }
  s.ranks = std::atoi(args[1]);
  if (nargs > 2) s.min_bytes = std::strtoull(args[2], nullptr, 10);
  if (nargs > 3) s.max_bytes = std::strtoull(args[3], nullptr, 10);
  if (nargs > 4) s.factor = std::strtoull(args[4], nullptr, 10);
  if (nargs > 5) s.iters = std::atoi(args[5]);
  if (s.ranks < 2 || s.min_bytes < 4 || s.max_bytes < s.min_bytes || s.factor < 2 || s.iters < 1) {
    std::fprintf(stderr, "nccl_sweep: RANKS >= 2, 4 <= MIN_BYTES <= MAX_BYTES, FACTOR >= 2, ITERS >= 1\n");
    return 2;
  }
  if (child) return Rank(s, std::atoi(argv[2]), argv[3]);
  return Launch(s, argv);
}
