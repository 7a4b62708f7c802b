// SPDX-License-Identifier: GPL-2.0-only
// Host time the recorder adds per NCCL call, against the test double of
// libnccl/libcuda: the same loop of 8-byte all-reduces on a one-rank
// communicator runs without the recorder, with it and GPU timing off, and
// with GPU timing on (events cost what the double makes them cost, so on a
// GPU add the driver's ~2.5 us per timed event record). Prints medians of
// alternating runs and the added ns per call; asserts nothing.
//
// usage: dltrace-nccl-overhead [--calls N] [--repeat K] [--recorder LIB]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "nccl.h"

namespace {

int64_t Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// The measured loop: prints ns per call on stdout.
int Child(long calls) {
  ncclUniqueId id;
  ncclComm_t comm;
  CUstream stream;
  if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess ||
      cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    fprintf(stderr, "dltrace-nccl-overhead: cannot set up the test double\n");
    return 1;
  }
  float in[2] = {1, 2}, out[2];
  for (long i = 0; i < calls / 10; ++i)
    ncclAllReduce(in, out, 2, ncclFloat32, ncclSum, comm, stream);
  int64_t t0 = Now();
  for (long i = 0; i < calls; ++i) ncclAllReduce(in, out, 2, ncclFloat32, ncclSum, comm, stream);
  int64_t t1 = Now();
  ncclCommDestroy(comm);
  printf("%.1f\n", double(t1 - t0) / double(calls));
  return 0;
}

double RunChild(const char* self, long calls, const std::vector<std::string>& env) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    for (const auto& e : env) putenv(strdup(e.c_str()));
    std::string n = std::to_string(calls);
    execl(self, self, "--child", n.c_str(), (char*)nullptr);
    _exit(127);
  }
  close(fds[1]);
  char buf[64] = {};
  ssize_t got = read(fds[0], buf, sizeof(buf) - 1);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (got <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return atof(buf);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  long calls = 200000;
  int repeat = 5;
  const char* lib = getenv("DLTRACE_RECORD_LIB");
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--child") && i + 1 < argc) return Child(atol(argv[i + 1]));
    if (!strcmp(argv[i], "--calls") && i + 1 < argc)
      calls = atol(argv[++i]);
    else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
      repeat = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--recorder") && i + 1 < argc)
      lib = argv[++i];
    else {
      fprintf(stderr, "usage: %s [--calls N] [--repeat K] [--recorder LIB]\n", argv[0]);
      return 2;
    }
  }
  if (!lib || calls <= 0 || repeat <= 0) {
    fprintf(stderr, "dltrace-nccl-overhead: needs --recorder LIB (or DLTRACE_RECORD_LIB)\n");
    return 2;
  }
  char dir[] = "/tmp/dltrace-nccl-bench-XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  struct Variant {
    const char* name;
    std::vector<std::string> env;
    std::vector<double> ns;
  };
  std::string preload = std::string("LD_PRELOAD=") + lib;
  std::vector<Variant> variants = {
      {"no recorder", {}, {}},
      {"recorder, GPU timing off", {preload, "DLTRACE_GPU_TIMING=0"}, {}},
      {"recorder, GPU timing on", {preload, "DLTRACE_GPU_TIMING=1"}, {}},
  };
  for (int r = 0; r < repeat; ++r) {
    for (auto& v : variants) {
      std::vector<std::string> env = v.env;
      env.push_back(std::string("DLTRACE_OUTPUT=") + dir + "/%p");
      env.push_back("DLTRACE_QUIET=1");
      env.push_back("DLTRACE_SAMPLE_MS=0");
      env.push_back("FAKE_NCCL_OP_NS=0");
      double ns = RunChild(argv[0], calls, env);
      if (ns < 0) {
        fprintf(stderr, "dltrace-nccl-overhead: a run of '%s' failed\n", v.name);
        return 1;
      }
      v.ns.push_back(ns);
    }
  }
  std::string rm = std::string("rm -rf ") + dir;
  if (system(rm.c_str()) != 0) fprintf(stderr, "dltrace-nccl-overhead: could not remove %s\n", dir);
  double base = Median(variants[0].ns);
  printf("ncclAllReduce of 8 bytes on the test double, %ld calls x %d runs (medians)\n", calls,
         repeat);
  for (const auto& v : variants) {
    double m = Median(v.ns);
    printf("  %-26s %8.1f ns/call   added %7.1f ns/call\n", v.name, m, m - base);
  }
  return 0;
}
