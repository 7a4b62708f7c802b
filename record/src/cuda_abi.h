// SPDX-License-Identifier: GPL-2.0-only
// The few CUDA driver API types and functions the recorder uses for GPU
// timing, declared here and loaded from libcuda.so.1 at run time, so the
// library has no link-time dependency on any CUDA version. nccl_abi_check.cc
// proves them equal to cuda.h's where that header exists.
// No #include here: the check includes this file inside a namespace.

typedef enum {
  DLTRACE_CUDA_SUCCESS = 0,
  DLTRACE_CUDA_ERROR_NOT_READY = 600,
  DLTRACE_CUDA_RESULT_MAX = 0x7fffffff
} CUresult;
typedef int CUdevice;
typedef struct CUctx_st* CUcontext;
typedef struct CUstream_st* CUstream;
typedef struct CUevent_st* CUevent;
typedef enum {
  DLTRACE_CU_STREAM_CAPTURE_STATUS_NONE = 0,
  DLTRACE_CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
  DLTRACE_CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2
} CUstreamCaptureStatus;
typedef enum {
  DLTRACE_CU_STREAM_CAPTURE_MODE_GLOBAL = 0,
  DLTRACE_CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
  DLTRACE_CU_STREAM_CAPTURE_MODE_RELAXED = 2
} CUstreamCaptureMode;

#define DLTRACE_CU_STREAM_NON_BLOCKING 1u
#define DLTRACE_CU_EVENT_DEFAULT 0u

// X(member, exported symbol, return, (parameters)). The symbols are the
// driver's ABI names (what cuda.h's macros expand to without per-thread
// default streams); cuEventElapsedTime_v2 falls back to the old name.
#define DLTRACE_CUDA_FUNCTIONS(X)                                                               \
  X(EventCreate, cuEventCreate, CUresult, (CUevent * event, unsigned int flags))                \
  X(EventRecord, cuEventRecord, CUresult, (CUevent event, CUstream stream))                     \
  X(EventQuery, cuEventQuery, CUresult, (CUevent event))                                        \
  X(EventElapsedTime, cuEventElapsedTime_v2, CUresult,                                          \
    (float* milliseconds, CUevent start, CUevent end))                                          \
  X(EventDestroy, cuEventDestroy_v2, CUresult, (CUevent event))                                 \
  X(StreamCreate, cuStreamCreate, CUresult, (CUstream * stream, unsigned int flags))            \
  X(StreamIsCapturing, cuStreamIsCapturing, CUresult,                                           \
    (CUstream stream, CUstreamCaptureStatus * status))                                          \
  X(StreamGetCtx, cuStreamGetCtx, CUresult, (CUstream stream, CUcontext * ctx))                 \
  X(CtxGetCurrent, cuCtxGetCurrent, CUresult, (CUcontext * ctx))                                \
  X(CtxPushCurrent, cuCtxPushCurrent_v2, CUresult, (CUcontext ctx))                             \
  X(CtxPopCurrent, cuCtxPopCurrent_v2, CUresult, (CUcontext * ctx))                             \
  X(CtxGetDevice, cuCtxGetDevice, CUresult, (CUdevice * device))                                \
  X(DeviceGet, cuDeviceGet, CUresult, (CUdevice * device, int ordinal))                         \
  X(DeviceGetPCIBusId, cuDeviceGetPCIBusId, CUresult, (char* bus_id, int len, CUdevice device)) \
  X(ThreadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode, CUresult,               \
    (CUstreamCaptureMode * mode))
