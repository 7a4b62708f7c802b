// SPDX-License-Identifier: GPL-2.0-only
// The recorder's own declarations of the NCCL ABI it intercepts (the types,
// and the functions it calls itself), so it builds without nccl.h; nccl_abi_check.cc proves
// them equal to nccl.h's where that header exists.
// No #include here: the check includes this file inside a namespace.

typedef struct ncclComm* ncclComm_t;
typedef struct CUstream_st* cudaStream_t;
typedef struct ncclConfig ncclConfig_t;  // opaque: only passed through

#define DLTRACE_NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[DLTRACE_NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7
} ncclResult_t;

// Values 5 and up are dynamic operators (ncclRedOpCreatePreMulSum); the
// largest value keeps the enum int-sized, as in nccl.h.
typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5,
  ncclMaxRedOp = 0x7fffffff
} ncclRedOp_t;

typedef enum {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11
} ncclDataType_t;

#define NCCL_SPLIT_NOCOLOR -1

// The intercepted functions are the table record/tables/nccl.py.

// Functions the recorder calls but does not intercept (resolved the same way).
#define DLTRACE_NCCL_HELPERS(X)                                                                  \
  X(ncclGetVersion, (int* version), (version))                                                   \
  X(ncclCommCount, (const ncclComm_t comm, int* count), (comm, count))                           \
  X(ncclCommUserRank, (const ncclComm_t comm, int* rank), (comm, rank))                          \
  X(ncclCommCuDevice, (const ncclComm_t comm, int* device), (comm, device))
