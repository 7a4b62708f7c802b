// The recorder's own declarations of the NCCL ABI it intercepts (types and
// the function table), so it builds without nccl.h; nccl_abi_check.cc proves
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

// Every intercepted function: X(name, (parameters), (arguments)).
// All return ncclResult_t.
#define DLTRACE_NCCL_FUNCTIONS(X)                                                                \
  X(ncclGetUniqueId, (ncclUniqueId * uniqueId), (uniqueId))                                      \
  X(ncclCommInitRank, (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank),            \
    (comm, nranks, commId, rank))                                                                \
  X(ncclCommInitRankConfig,                                                                      \
    (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config),        \
    (comm, nranks, commId, rank, config))                                                        \
  X(ncclCommInitAll, (ncclComm_t * comm, int ndev, const int* devlist), (comm, ndev, devlist))   \
  X(ncclCommInitRankScalable,                                                                    \
    (ncclComm_t * newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,               \
     ncclConfig_t* config),                                                                      \
    (newcomm, nranks, myrank, nId, commIds, config))                                             \
  X(ncclCommSplit,                                                                               \
    (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config),            \
    (comm, color, key, newcomm, config))                                                         \
  X(ncclCommShrink,                                                                              \
    (ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,         \
     ncclConfig_t* config, int shrinkFlags),                                                     \
    (comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags))                   \
  X(ncclCommFinalize, (ncclComm_t comm), (comm))                                                 \
  X(ncclCommDestroy, (ncclComm_t comm), (comm))                                                  \
  X(ncclCommAbort, (ncclComm_t comm), (comm))                                                    \
  X(ncclAllReduce,                                                                               \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,                \
     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream),                                      \
    (sendbuff, recvbuff, count, datatype, op, comm, stream))                                     \
  X(ncclBroadcast,                                                                               \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,      \
     ncclComm_t comm, cudaStream_t stream),                                                      \
    (sendbuff, recvbuff, count, datatype, root, comm, stream))                                   \
  X(ncclBcast,                                                                                   \
    (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,               \
     cudaStream_t stream),                                                                       \
    (buff, count, datatype, root, comm, stream))                                                 \
  X(ncclReduce,                                                                                  \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,                \
     ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream),                            \
    (sendbuff, recvbuff, count, datatype, op, root, comm, stream))                               \
  X(ncclAllGather,                                                                               \
    (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,            \
     ncclComm_t comm, cudaStream_t stream),                                                      \
    (sendbuff, recvbuff, sendcount, datatype, comm, stream))                                     \
  X(ncclReduceScatter,                                                                           \
    (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,            \
     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream),                                      \
    (sendbuff, recvbuff, recvcount, datatype, op, comm, stream))                                 \
  X(ncclAlltoAll,                                                                                \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,                \
     ncclComm_t comm, cudaStream_t stream),                                                      \
    (sendbuff, recvbuff, count, datatype, comm, stream))                                         \
  X(ncclGather,                                                                                  \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,      \
     ncclComm_t comm, cudaStream_t stream),                                                      \
    (sendbuff, recvbuff, count, datatype, root, comm, stream))                                   \
  X(ncclScatter,                                                                                 \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,      \
     ncclComm_t comm, cudaStream_t stream),                                                      \
    (sendbuff, recvbuff, count, datatype, root, comm, stream))                                   \
  X(ncclSend,                                                                                    \
    (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,      \
     cudaStream_t stream),                                                                       \
    (sendbuff, count, datatype, peer, comm, stream))                                             \
  X(ncclRecv,                                                                                    \
    (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,           \
     cudaStream_t stream),                                                                       \
    (recvbuff, count, datatype, peer, comm, stream))                                             \
  X(ncclGroupStart, (), ())                                                                      \
  X(ncclGroupEnd, (), ())

// Functions the recorder calls but does not intercept (resolved the same way).
#define DLTRACE_NCCL_HELPERS(X)                                                                  \
  X(ncclGetVersion, (int* version), (version))                                                   \
  X(ncclCommCount, (const ncclComm_t comm, int* count), (comm, count))                           \
  X(ncclCommUserRank, (const ncclComm_t comm, int* rank), (comm, rank))                          \
  X(ncclCommCuDevice, (const ncclComm_t comm, int* device), (comm, device))
