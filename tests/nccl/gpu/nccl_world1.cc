// SPDX-License-Identifier: GPL-2.0-only
// For scripts/gpu-check.sh on a machine with a GPU, CUDA and NCCL: a world of
// one rank on GPU 0 that calls every NCCL collective, a send/recv pair, a
// group and a split, checks the results and prints them (the check compares
// this output with and without the recorder). With --loop N it instead
// times N 1 MB all-reduces and prints microseconds per call.
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "check.h"

const char* const gpu_check::kProgram = "nccl_world1";

namespace {

constexpr size_t kCount = 1 << 16;  // floats per buffer

float* Device(const std::vector<float>& host) {
  float* d = nullptr;
  CUDA_OK(cudaMalloc(&d, host.size() * sizeof(float)));
  CUDA_OK(cudaMemcpy(d, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

double Sum(const float* d, size_t n, cudaStream_t s) {
  CUDA_OK(cudaStreamSynchronize(s));
  std::vector<float> h(n);
  CUDA_OK(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  double total = 0;
  for (float x : h) total += x;
  return total;
}

int Loop(ncclComm_t comm, cudaStream_t s, long n) {
  const size_t count = (1 << 20) / sizeof(float);  // 1 MB
  std::vector<float> h(count, 1.0f);
  float* buf = Device(h);
  for (int i = 0; i < 20; ++i) NCCL_OK(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, s));
  CUDA_OK(cudaStreamSynchronize(s));
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) NCCL_OK(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, s));
  CUDA_OK(cudaStreamSynchronize(s));
  auto t1 = std::chrono::steady_clock::now();
  std::printf("%.3f\n", std::chrono::duration<double, std::micro>(t1 - t0).count() / double(n));
  CUDA_OK(cudaFree(buf));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CUDA_OK(cudaSetDevice(0));
  cudaStream_t s1, s2;
  CUDA_OK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  ncclUniqueId id;
  NCCL_OK(ncclGetUniqueId(&id));
  ncclComm_t comm;
  NCCL_OK(ncclCommInitRank(&comm, 1, id, 0));
  if (argc == 3 && !std::strcmp(argv[1], "--loop")) return Loop(comm, s1, std::atol(argv[2]));

  std::vector<float> h(kCount);
  for (size_t i = 0; i < kCount; ++i) h[i] = float(i % 7);
  float* a = Device(h);
  float* b = Device(std::vector<float>(kCount, 0.0f));
  NCCL_OK(ncclAllReduce(a, b, kCount, ncclFloat, ncclSum, comm, s1));
  std::printf("allreduce %.0f\n", Sum(b, kCount, s1));
  NCCL_OK(ncclBroadcast(a, b, kCount, ncclFloat, 0, comm, s1));
  std::printf("broadcast %.0f\n", Sum(b, kCount, s1));
  NCCL_OK(ncclBcast(b, kCount, ncclFloat, 0, comm, s2));
  std::printf("bcast %.0f\n", Sum(b, kCount, s2));
  NCCL_OK(ncclReduce(a, b, kCount, ncclFloat, ncclMax, 0, comm, s1));
  std::printf("reduce %.0f\n", Sum(b, kCount, s1));
  NCCL_OK(ncclAllGather(a, b, kCount, ncclFloat, comm, s1));
  std::printf("allgather %.0f\n", Sum(b, kCount, s1));
  NCCL_OK(ncclReduceScatter(a, b, kCount, ncclFloat, ncclSum, comm, s1));
  std::printf("reducescatter %.0f\n", Sum(b, kCount, s1));
  NCCL_OK(ncclAlltoAll(a, b, kCount, ncclFloat, comm, s2));
  std::printf("alltoall %.0f\n", Sum(b, kCount, s2));
  NCCL_OK(ncclGather(a, b, kCount, ncclFloat, 0, comm, s1));
  std::printf("gather %.0f\n", Sum(b, kCount, s1));
  NCCL_OK(ncclScatter(a, b, kCount, ncclFloat, 0, comm, s1));
  std::printf("scatter %.0f\n", Sum(b, kCount, s1));
  // A send to oneself and its receive, in one group as NCCL requires.
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclSend(a, kCount, ncclFloat, 0, comm, s2));
  NCCL_OK(ncclRecv(b, kCount, ncclFloat, 0, comm, s2));
  NCCL_OK(ncclGroupEnd());
  std::printf("sendrecv %.0f\n", Sum(b, kCount, s2));
  ncclComm_t child;
  NCCL_OK(ncclCommSplit(comm, 0, 0, &child, nullptr));
  NCCL_OK(ncclAllReduce(a, b, kCount, ncclFloat, ncclSum, child, s1));
  std::printf("split allreduce %.0f\n", Sum(b, kCount, s1));
  NCCL_OK(ncclCommDestroy(child));
  NCCL_OK(ncclCommDestroy(comm));
  CUDA_OK(cudaFree(a));
  CUDA_OK(cudaFree(b));
  return 0;
}
