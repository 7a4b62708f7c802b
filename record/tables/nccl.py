# The one table of intercepted NCCL functions (record/gen_wrappers.py turns
# each row into a wrapper, as it does for tables/mpi.py). A row:
#   F(name, OpKind, C parameters as in nccl.h, before=..., after=...)
# Every function returns ncclResult_t. Rows of kind Unknown (communicators,
# groups) are followed whenever recording may still start, operations only
# while recording. `before` runs ahead of the real call and `after` behind
# it (with c.rc set); both call ordinary functions of src/nccl_wrappers.cc
# on its NcclCall `c`. nccl_abi_check.cc proves the parameters equal nccl.h's.

OPERATION = "c.Operation(comm, stream, {count}, datatype)"

FUNCTIONS = [
    # ---- communicators
    F("ncclGetUniqueId", "Unknown", "ncclUniqueId* uniqueId"),
    F("ncclCommInitRank", "Unknown",
      "ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank",
      after='Initialized(c, comm, "init", nranks, rank, UniqueIdHash(commId))'),
    F("ncclCommInitRankConfig", "Unknown",
      "ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config",
      after='Initialized(c, comm, "init_config", nranks, rank, UniqueIdHash(commId))'),
    F("ncclCommInitAll", "Unknown", "ncclComm_t* comm, int ndev, const int* devlist",
      after="InitializedAll(c, comm, ndev, devlist)"),
    # NCCL hashes the first of the ids.
    F("ncclCommInitRankScalable", "Unknown",
      "ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds, "
      "ncclConfig_t* config",
      after='Initialized(c, newcomm, "init_scalable", nranks, myrank, '
            'nId > 0 && commIds ? UniqueIdHash(commIds[0]) : 0)'),
    F("ncclCommSplit", "Unknown",
      "ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config",
      before="SplitFrom(c, comm)", after="Split(c, color, key, newcomm)"),
    F("ncclCommShrink", "Unknown",
      "ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm, "
      "ncclConfig_t* config, int shrinkFlags",
      before="ShrinkFrom(c, comm)",
      after="Shrunk(c, excludeRanksList, excludeRanksCount, newcomm)"),
    F("ncclCommFinalize", "Unknown", "ncclComm_t comm"),
    F("ncclCommDestroy", "Unknown", "ncclComm_t comm", before="ForgetComm(comm)"),
    F("ncclCommAbort", "Unknown", "ncclComm_t comm", before="ForgetComm(comm)"),
    # ---- operations: `before` describes the call, c.Finish records it.
    # Gathered and scattered buffers count whole (count x ranks), as nccl-tests does.
    F("ncclAllReduce", "NcclAllReduce",
      "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, "
      "ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream",
      before=OPERATION.format(count="count") + "; c.Reduction(op)", after="c.Finish()"),
    F("ncclBroadcast", "NcclBroadcast",
      "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, "
      "ncclComm_t comm, cudaStream_t stream",
      before=OPERATION.format(count="count") + "; c.Peer(root)", after="c.Finish()"),
    F("ncclBcast", "NcclBroadcast",
      "void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, "
      "cudaStream_t stream",
      before=OPERATION.format(count="count") + "; c.Peer(root)", after="c.Finish()"),
    F("ncclReduce", "NcclReduce",
      "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, "
      "ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream",
      before=OPERATION.format(count="count") + "; c.Reduction(op); c.Peer(root)",
      after="c.Finish()"),
    F("ncclAllGather", "NcclAllGather",
      "const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, "
      "ncclComm_t comm, cudaStream_t stream",
      before=OPERATION.format(count="sendcount") + "; c.WholeBuffer()", after="c.Finish()"),
    F("ncclReduceScatter", "NcclReduceScatter",
      "const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, "
      "ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream",
      before=OPERATION.format(count="recvcount") + "; c.WholeBuffer(); c.Reduction(op)",
      after="c.Finish()"),
    F("ncclAlltoAll", "NcclAllToAll",
      "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, "
      "ncclComm_t comm, cudaStream_t stream",
      before=OPERATION.format(count="count") + "; c.WholeBuffer()", after="c.Finish()"),
    F("ncclGather", "NcclGather",
      "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, "
      "ncclComm_t comm, cudaStream_t stream",
      before=OPERATION.format(count="count") + "; c.WholeBuffer(); c.Peer(root)",
      after="c.Finish()"),
    F("ncclScatter", "NcclScatter",
      "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, "
      "ncclComm_t comm, cudaStream_t stream",
      before=OPERATION.format(count="count") + "; c.WholeBuffer(); c.Peer(root)",
      after="c.Finish()"),
    F("ncclSend", "NcclSend",
      "const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, "
      "cudaStream_t stream",
      before=OPERATION.format(count="count") + "; c.Peer(peer)", after="c.Finish()"),
    F("ncclRecv", "NcclRecv",
      "void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, "
      "cudaStream_t stream",
      before=OPERATION.format(count="count") + "; c.Peer(peer)", after="c.Finish()"),
    # ---- groups: nested groups count as one, the outermost pair gives the id
    F("ncclGroupStart", "Unknown", "", before="GroupStart()"),
    F("ncclGroupEnd", "Unknown", "", before="GroupEndBegins(c)", after="GroupEnded(c)"),
]
