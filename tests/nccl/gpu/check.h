// SPDX-License-Identifier: GPL-2.0-only
// For the GPU programs scripts/gpu-check.sh builds: CUDA_OK(call) and
// NCCL_OK(call) exit with "PROGRAM: CALL: why" when the call did not succeed.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace gpu_check {

extern const char* const kProgram;  // each program defines its name

template <class Result>
void Check(Result result, Result ok, const char* (*why)(Result), const char* call) {
  if (result != ok) {
    std::fprintf(stderr, "%s: %s: %s\n", kProgram, call, why(result));
    std::exit(1);
  }
}

}  // namespace gpu_check

#define CUDA_OK(cmd) gpu_check::Check<cudaError_t>((cmd), cudaSuccess, cudaGetErrorString, #cmd)
#define NCCL_OK(cmd) gpu_check::Check<ncclResult_t>((cmd), ncclSuccess, ncclGetErrorString, #cmd)
