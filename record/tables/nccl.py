# SPDX-License-Identifier: GPL-2.0-only
# The one table of intercepted NCCL functions (record/gen_wrappers.py turns
# each row into a wrapper, as it does for tables/mpi.py). A row:
#   F(name, OpKind, C parameters as in nccl.h, before=..., after=...)
# Every function returns ncclResult_t. Rows of kind Unknown (communicators,
# groups) are followed whenever recording may still start, operations only
# while recording. `before` runs ahead of the real call and `after` behind
# it (with c.rc set); both call ordinary functions of src/nccl_wrappers.cc
# on its NcclCall `c`. nccl_abi_check.cc proves the parameters equal nccl.h's.
# Operation(...) is the row of a collective or point-to-point call.


def Operation(name, kind, params, count="count", describe=""):
    """An operation's row. PARAMS are those ahead of the communicator and the
    stream, which every operation takes last. c.Operation describes COUNT
    elements of datatype on comm and stream, DESCRIBE the rest (clauses of
    NcclCall), c.Finish records it."""
    before = f"c.Operation(comm, stream, {count}, datatype)" + (f"; {describe}" if describe else "")
    return F(name, kind, params + ", ncclComm_t comm, cudaStream_t stream", before=before, after="c.Finish()")


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
    # ---- operations (Operation: `before` describes the call, c.Finish records it).
    # Gathered and scattered buffers count whole (count x ranks), as nccl-tests does.
    Operation("ncclAllReduce", "NcclAllReduce",
              "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op",
              describe="c.Reduction(op)"),
    Operation("ncclBroadcast", "NcclBroadcast",
              "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root",
              describe="c.Peer(root)"),
    Operation("ncclBcast", "NcclBroadcast",
              "void* buff, size_t count, ncclDataType_t datatype, int root",
              describe="c.Peer(root)"),
    Operation("ncclReduce", "NcclReduce",
              "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root",
              describe="c.Reduction(op); c.Peer(root)"),
    Operation("ncclAllGather", "NcclAllGather",
              "const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype",
              count="sendcount", describe="c.WholeBuffer()"),
    Operation("ncclReduceScatter", "NcclReduceScatter",
              "const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op",
              count="recvcount", describe="c.WholeBuffer(); c.Reduction(op)"),
    Operation("ncclAlltoAll", "NcclAllToAll",
              "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype",
              describe="c.WholeBuffer()"),
    Operation("ncclGather", "NcclGather",
              "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root",
              describe="c.WholeBuffer(); c.Peer(root)"),
    Operation("ncclScatter", "NcclScatter",
              "const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root",
              describe="c.WholeBuffer(); c.Peer(root)"),
    Operation("ncclSend", "NcclSend",
              "const void* sendbuff, size_t count, ncclDataType_t datatype, int peer",
              describe="c.Peer(peer)"),
    Operation("ncclRecv", "NcclRecv",
              "void* recvbuff, size_t count, ncclDataType_t datatype, int peer",
              describe="c.Peer(peer)"),
    # ---- groups: nested groups count as one, the outermost pair gives the id
    F("ncclGroupStart", "Unknown", "", before="GroupStart()"),
    F("ncclGroupEnd", "Unknown", "", before="GroupEndBegins(c)", after="GroupEnded(c)"),
]
