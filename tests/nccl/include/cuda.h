// SPDX-License-Identifier: GPL-2.0-only
/* The CUDA driver API subset that the test double of libcuda.so.1
   (tests/nccl/fake_cuda.cc) implements, plus two test-only hooks. */
#ifndef DLTRACE_TEST_CUDA_H_
#define DLTRACE_TEST_CUDA_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1, CUDA_ERROR_INVALID_HANDLE = 400,
               CUDA_ERROR_NOT_READY = 600 } CUresult;
typedef int CUdevice;
typedef struct CUctx_st* CUcontext;
typedef struct CUstream_st* CUstream;
typedef struct CUevent_st* CUevent;
typedef struct CUgraph_st* CUgraph;
typedef enum { CU_STREAM_CAPTURE_STATUS_NONE = 0, CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
               CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2 } CUstreamCaptureStatus;
typedef enum { CU_STREAM_CAPTURE_MODE_GLOBAL = 0, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
               CU_STREAM_CAPTURE_MODE_RELAXED = 2 } CUstreamCaptureMode;
#define CU_STREAM_NON_BLOCKING 1
#define CU_EVENT_DEFAULT 0

CUresult cuInit(unsigned int flags);
CUresult cuDeviceGet(CUdevice* device, int ordinal);
CUresult cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev);
CUresult cuCtxGetCurrent(CUcontext* ctx);
CUresult cuCtxGetDevice(CUdevice* device);
CUresult cuCtxPushCurrent_v2(CUcontext ctx);
CUresult cuCtxPopCurrent_v2(CUcontext* ctx);
CUresult cuStreamCreate(CUstream* stream, unsigned int flags);
CUresult cuStreamDestroy_v2(CUstream stream);
CUresult cuStreamGetCtx(CUstream stream, CUcontext* ctx);
CUresult cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status);
CUresult cuStreamBeginCapture_v2(CUstream stream, CUstreamCaptureMode mode);
CUresult cuStreamEndCapture(CUstream stream, CUgraph* graph);
CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode);
CUresult cuEventCreate(CUevent* event, unsigned int flags);
CUresult cuEventDestroy_v2(CUevent event);
CUresult cuEventRecord(CUevent event, CUstream stream);
CUresult cuEventQuery(CUevent event);
CUresult cuEventElapsedTime_v2(float* ms, CUevent start, CUevent end);
#define cuStreamBeginCapture cuStreamBeginCapture_v2
#define cuStreamDestroy cuStreamDestroy_v2
#define cuEventDestroy cuEventDestroy_v2
#define cuEventElapsedTime cuEventElapsedTime_v2

/* Test-only: keeps STREAM busy for NS more nanoseconds of simulated GPU time
   (a kernel), and counts events recorded on streams under capture. */
void fakecuStreamAddWork(CUstream stream, int64_t ns);
int fakecuEventsRecordedDuringCapture(void);

#ifdef __cplusplus
}
#endif

#endif
