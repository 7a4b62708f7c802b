// SPDX-License-Identifier: GPL-2.0-only
// Test double of libcuda.so.1: the driver functions the recorder and the test
// programs use, with simulated GPU time. A stream is busy until a host time;
// an event recorded on it completes when the stream gets there, so event
// times are those of simulated kernels, not of the host calls. Test-only.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "cuda.h"

struct CUctx_st {
  int device;
};
struct CUstream_st {
  int device;
  int64_t busy_until;  // CLOCK_MONOTONIC ns
  bool capturing;
};
struct CUevent_st {
  int device;
  bool recorded;
  int64_t done_ns;
};

namespace {

constexpr int kDevices = 8;
CUctx_st g_contexts[kDevices] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};
CUstream_st g_legacy[kDevices];  // stream handle 0, per device
std::atomic<int> g_recorded_in_capture{0};
thread_local std::vector<CUcontext> t_stack;
thread_local CUstreamCaptureMode t_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

int64_t Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// The process's device: FAKE_CUDA_DEVICE, as a launcher's LOCAL_RANK would pick it.
int ProcessDevice() {
  static const int device = [] {
    const char* v = getenv("FAKE_CUDA_DEVICE");
    int d = v ? atoi(v) : 0;
    return d >= 0 && d < kDevices ? d : 0;
  }();
  return device;
}

CUcontext Current() { return t_stack.empty() ? &g_contexts[ProcessDevice()] : t_stack.back(); }

CUstream_st* Resolve(CUstream s) {
  // Handles 0, 1 and 2 are the legacy and per-thread default streams.
  if (reinterpret_cast<uintptr_t>(s) <= 2) return &g_legacy[Current()->device];
  return s;
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned int) { return CUDA_SUCCESS; }

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (!device || ordinal < 0 || ordinal >= kDevices) return CUDA_ERROR_INVALID_VALUE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char* id, int len, CUdevice dev) {
  if (!id || dev < 0 || dev >= kDevices) return CUDA_ERROR_INVALID_VALUE;
  snprintf(id, size_t(len), "0000:%02X:00.0", 0x1A + dev);
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* ctx) {
  *ctx = Current();
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice* device) {
  *device = Current()->device;
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  t_stack.push_back(ctx);
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext* ctx) {
  if (t_stack.empty()) return CUDA_ERROR_INVALID_VALUE;
  if (ctx) *ctx = t_stack.back();
  t_stack.pop_back();
  return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream* stream, unsigned int) {
  *stream = new CUstream_st{Current()->device, 0, false};
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(CUstream stream) {
  if (reinterpret_cast<uintptr_t>(stream) > 2) delete stream;
  return CUDA_SUCCESS;
}

CUresult cuStreamGetCtx(CUstream stream, CUcontext* ctx) {
  *ctx = &g_contexts[Resolve(stream)->device];
  return CUDA_SUCCESS;
}

CUresult cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) {
  *status =
      Resolve(stream)->capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

CUresult cuStreamBeginCapture_v2(CUstream stream, CUstreamCaptureMode) {
  Resolve(stream)->capturing = true;
  return CUDA_SUCCESS;
}

CUresult cuStreamEndCapture(CUstream stream, CUgraph* graph) {
  Resolve(stream)->capturing = false;
  if (graph) *graph = reinterpret_cast<CUgraph>(uintptr_t(1));
  return CUDA_SUCCESS;
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  std::swap(*mode, t_mode);
  return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent* event, unsigned int) {
  *event = new CUevent_st{Current()->device, false, 0};
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent event) {
  delete event;
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent event, CUstream stream) {
  CUstream_st* s = Resolve(stream);
  if (!event || event->device != s->device) return CUDA_ERROR_INVALID_HANDLE;
  if (s->capturing) ++g_recorded_in_capture;
  event->done_ns = std::max(Now(), s->busy_until);
  event->recorded = true;
  return CUDA_SUCCESS;
}

CUresult cuEventQuery(CUevent event) {
  if (!event) return CUDA_ERROR_INVALID_HANDLE;
  return !event->recorded || Now() >= event->done_ns ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuEventElapsedTime_v2(float* ms, CUevent start, CUevent end) {
  if (!start || !end || !start->recorded || !end->recorded) return CUDA_ERROR_INVALID_HANDLE;
  if (cuEventQuery(start) != CUDA_SUCCESS || cuEventQuery(end) != CUDA_SUCCESS)
    return CUDA_ERROR_NOT_READY;
  *ms = float(double(end->done_ns - start->done_ns) / 1e6);
  return CUDA_SUCCESS;
}

void fakecuStreamAddWork(CUstream stream, int64_t ns) {
  CUstream_st* s = Resolve(stream);
  s->busy_until = std::max(Now(), s->busy_until) + ns;
}

int fakecuEventsRecordedDuringCapture(void) { return g_recorded_in_capture.load(); }

}  // extern "C"
