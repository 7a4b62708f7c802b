// SPDX-License-Identifier: GPL-2.0-only
// Equality (for round-trip tests) and the user-facing names of enums.
#include "dltrace/formats/trace.h"

#include <strings.h>

#include <tuple>

namespace dltrace::formats {

bool Header::operator==(const Header& o) const {
  return std::tie(schema_version, global_rank, world_size, local_rank, host, pid, command_line,
                  start_monotonic_ns, start_realtime_ns, recorder_version, nccl_version,
                  mpi_version, gpu_device, gpu_bus_id, job_id, rank_env, attributes, nccl_env) ==
         std::tie(o.schema_version, o.global_rank, o.world_size, o.local_rank, o.host, o.pid,
                  o.command_line, o.start_monotonic_ns, o.start_realtime_ns, o.recorder_version,
                  o.nccl_version, o.mpi_version, o.gpu_device, o.gpu_bus_id, o.job_id, o.rank_env,
                  o.attributes, o.nccl_env);
}

bool Communicator::operator==(const Communicator& o) const {
  return std::tie(id, api, name, size, rank, members, parent, color, key, nccl_unique_id_hash,
                  cuda_device, bus_id, created_ns) ==
         std::tie(o.id, o.api, o.name, o.size, o.rank, o.members, o.parent, o.color, o.key,
                  o.nccl_unique_id_hash, o.cuda_device, o.bus_id, o.created_ns);
}

bool OpEvent::operator==(const OpEvent& o) const {
  return std::tie(kind, comm, count, datatype, bytes, red_op, peer, tag, stream, thread,
                  captured_in_graph, peer_send_bytes, peer_recv_bytes, seq, group, enter_ns,
                  exit_ns, gpu_start_ns, gpu_end_ns, completion_ns, nccl_algorithm, nccl_protocol,
                  nccl_channels) ==
         std::tie(o.kind, o.comm, o.count, o.datatype, o.bytes, o.red_op, o.peer, o.tag, o.stream,
                  o.thread, o.captured_in_graph, o.peer_send_bytes, o.peer_recv_bytes, o.seq,
                  o.group, o.enter_ns, o.exit_ns, o.gpu_start_ns, o.gpu_end_ns, o.completion_ns,
                  o.nccl_algorithm, o.nccl_protocol, o.nccl_channels);
}

int64_t OpEvent::duration_ns() const {
  if (gpu_start_ns && gpu_end_ns) return *gpu_end_ns - *gpu_start_ns;
  return exit_ns - enter_ns;
}

bool ResourceSample::operator==(const ResourceSample& o) const {
  return std::tie(time_ns, cpu_percent, rss_bytes, net_rx_bytes, net_tx_bytes, disk_read_bytes,
                  disk_write_bytes) == std::tie(o.time_ns, o.cpu_percent, o.rss_bytes,
                                                o.net_rx_bytes, o.net_tx_bytes, o.disk_read_bytes,
                                                o.disk_write_bytes);
}

bool Footer::operator==(const Footer& o) const {
  return std::tie(events_written, events_dropped, samples_written, end_monotonic_ns,
                  end_realtime_ns, reason, write_error, unrecorded) ==
         std::tie(o.events_written, o.events_dropped, o.samples_written, o.end_monotonic_ns,
                  o.end_realtime_ns, o.reason, o.write_error, o.unrecorded);
}

const char* OpKindName(OpKind kind) {
  switch (kind) {
#define DLTRACE_KIND(k, name) \
  case OpKind::k:             \
    return name;
    DLTRACE_KIND(Unknown, "unknown")
    DLTRACE_KIND(MpiSend, "MPI_Send")
    DLTRACE_KIND(MpiSsend, "MPI_Ssend")
    DLTRACE_KIND(MpiBsend, "MPI_Bsend")
    DLTRACE_KIND(MpiRsend, "MPI_Rsend")
    DLTRACE_KIND(MpiRecv, "MPI_Recv")
    DLTRACE_KIND(MpiSendrecv, "MPI_Sendrecv")
    DLTRACE_KIND(MpiSendrecvReplace, "MPI_Sendrecv_replace")
    DLTRACE_KIND(MpiIsend, "MPI_Isend")
    DLTRACE_KIND(MpiIssend, "MPI_Issend")
    DLTRACE_KIND(MpiIrecv, "MPI_Irecv")
    DLTRACE_KIND(MpiWait, "MPI_Wait")
    DLTRACE_KIND(MpiWaitall, "MPI_Waitall")
    DLTRACE_KIND(MpiWaitany, "MPI_Waitany")
    DLTRACE_KIND(MpiWaitsome, "MPI_Waitsome")
    DLTRACE_KIND(MpiTest, "MPI_Test")
    DLTRACE_KIND(MpiTestall, "MPI_Testall")
    DLTRACE_KIND(MpiTestany, "MPI_Testany")
    DLTRACE_KIND(MpiTestsome, "MPI_Testsome")
    DLTRACE_KIND(MpiProbe, "MPI_Probe")
    DLTRACE_KIND(MpiIprobe, "MPI_Iprobe")
    DLTRACE_KIND(MpiBarrier, "MPI_Barrier")
    DLTRACE_KIND(MpiBcast, "MPI_Bcast")
    DLTRACE_KIND(MpiReduce, "MPI_Reduce")
    DLTRACE_KIND(MpiAllreduce, "MPI_Allreduce")
    DLTRACE_KIND(MpiGather, "MPI_Gather")
    DLTRACE_KIND(MpiGatherv, "MPI_Gatherv")
    DLTRACE_KIND(MpiScatter, "MPI_Scatter")
    DLTRACE_KIND(MpiScatterv, "MPI_Scatterv")
    DLTRACE_KIND(MpiAllgather, "MPI_Allgather")
    DLTRACE_KIND(MpiAllgatherv, "MPI_Allgatherv")
    DLTRACE_KIND(MpiAlltoall, "MPI_Alltoall")
    DLTRACE_KIND(MpiAlltoallv, "MPI_Alltoallv")
    DLTRACE_KIND(MpiAlltoallw, "MPI_Alltoallw")
    DLTRACE_KIND(MpiReduceScatter, "MPI_Reduce_scatter")
    DLTRACE_KIND(MpiReduceScatterBlock, "MPI_Reduce_scatter_block")
    DLTRACE_KIND(MpiScan, "MPI_Scan")
    DLTRACE_KIND(MpiExscan, "MPI_Exscan")
    DLTRACE_KIND(MpiIbarrier, "MPI_Ibarrier")
    DLTRACE_KIND(MpiIbcast, "MPI_Ibcast")
    DLTRACE_KIND(MpiIreduce, "MPI_Ireduce")
    DLTRACE_KIND(MpiIallreduce, "MPI_Iallreduce")
    DLTRACE_KIND(MpiIallgather, "MPI_Iallgather")
    DLTRACE_KIND(MpiIalltoall, "MPI_Ialltoall")
    DLTRACE_KIND(MpiIreduceScatter, "MPI_Ireduce_scatter")
    DLTRACE_KIND(MpiIreduceScatterBlock, "MPI_Ireduce_scatter_block")
    DLTRACE_KIND(MpiInit, "MPI_Init")
    DLTRACE_KIND(MpiFinalize, "MPI_Finalize")
    DLTRACE_KIND(MpiAbort, "MPI_Abort")
    DLTRACE_KIND(NcclAllReduce, "ncclAllReduce")
    DLTRACE_KIND(NcclBroadcast, "ncclBroadcast")
    DLTRACE_KIND(NcclReduce, "ncclReduce")
    DLTRACE_KIND(NcclAllGather, "ncclAllGather")
    DLTRACE_KIND(NcclReduceScatter, "ncclReduceScatter")
    DLTRACE_KIND(NcclAllToAll, "ncclAlltoAll")
    DLTRACE_KIND(NcclGather, "ncclGather")
    DLTRACE_KIND(NcclScatter, "ncclScatter")
    DLTRACE_KIND(NcclSend, "ncclSend")
    DLTRACE_KIND(NcclRecv, "ncclRecv")
    DLTRACE_KIND(MpiIgather, "MPI_Igather")
    DLTRACE_KIND(MpiIgatherv, "MPI_Igatherv")
    DLTRACE_KIND(MpiIscatter, "MPI_Iscatter")
    DLTRACE_KIND(MpiIscatterv, "MPI_Iscatterv")
    DLTRACE_KIND(MpiIallgatherv, "MPI_Iallgatherv")
    DLTRACE_KIND(MpiIalltoallv, "MPI_Ialltoallv")
    DLTRACE_KIND(MpiIalltoallw, "MPI_Ialltoallw")
    DLTRACE_KIND(MpiIscan, "MPI_Iscan")
    DLTRACE_KIND(MpiIexscan, "MPI_Iexscan")
    DLTRACE_KIND(MpiMprobe, "MPI_Mprobe")
    DLTRACE_KIND(MpiImprobe, "MPI_Improbe")
    DLTRACE_KIND(MpiMrecv, "MPI_Mrecv")
    DLTRACE_KIND(MpiImrecv, "MPI_Imrecv")
    DLTRACE_KIND(MpiNeighborAllgather, "MPI_Neighbor_allgather")
    DLTRACE_KIND(MpiNeighborAllgatherv, "MPI_Neighbor_allgatherv")
    DLTRACE_KIND(MpiNeighborAlltoall, "MPI_Neighbor_alltoall")
    DLTRACE_KIND(MpiNeighborAlltoallv, "MPI_Neighbor_alltoallv")
    DLTRACE_KIND(MpiNeighborAlltoallw, "MPI_Neighbor_alltoallw")
    DLTRACE_KIND(MpiIneighborAllgather, "MPI_Ineighbor_allgather")
    DLTRACE_KIND(MpiIneighborAllgatherv, "MPI_Ineighbor_allgatherv")
    DLTRACE_KIND(MpiIneighborAlltoall, "MPI_Ineighbor_alltoall")
    DLTRACE_KIND(MpiIneighborAlltoallv, "MPI_Ineighbor_alltoallv")
    DLTRACE_KIND(MpiIneighborAlltoallw, "MPI_Ineighbor_alltoallw")
    DLTRACE_KIND(MpiPut, "MPI_Put")
    DLTRACE_KIND(MpiGet, "MPI_Get")
    DLTRACE_KIND(MpiAccumulate, "MPI_Accumulate")
    DLTRACE_KIND(MpiGetAccumulate, "MPI_Get_accumulate")
    DLTRACE_KIND(MpiFetchAndOp, "MPI_Fetch_and_op")
    DLTRACE_KIND(MpiCompareAndSwap, "MPI_Compare_and_swap")
    DLTRACE_KIND(MpiRput, "MPI_Rput")
    DLTRACE_KIND(MpiRget, "MPI_Rget")
    DLTRACE_KIND(MpiRaccumulate, "MPI_Raccumulate")
    DLTRACE_KIND(MpiRgetAccumulate, "MPI_Rget_accumulate")
    DLTRACE_KIND(MpiWinFence, "MPI_Win_fence")
    DLTRACE_KIND(MpiWinLock, "MPI_Win_lock")
    DLTRACE_KIND(MpiWinUnlock, "MPI_Win_unlock")
    DLTRACE_KIND(MpiWinLockAll, "MPI_Win_lock_all")
    DLTRACE_KIND(MpiWinUnlockAll, "MPI_Win_unlock_all")
    DLTRACE_KIND(MpiWinPost, "MPI_Win_post")
    DLTRACE_KIND(MpiWinStart, "MPI_Win_start")
    DLTRACE_KIND(MpiWinComplete, "MPI_Win_complete")
    DLTRACE_KIND(MpiWinWait, "MPI_Win_wait")
    DLTRACE_KIND(MpiWinTest, "MPI_Win_test")
    DLTRACE_KIND(MpiWinFlush, "MPI_Win_flush")
    DLTRACE_KIND(MpiWinFlushAll, "MPI_Win_flush_all")
    DLTRACE_KIND(MpiWinFlushLocal, "MPI_Win_flush_local")
    DLTRACE_KIND(MpiWinFlushLocalAll, "MPI_Win_flush_local_all")
#undef DLTRACE_KIND
  }
  return "unknown";
}

const char* DataTypeName(DataType type) {
  switch (type) {
    case DataType::Unknown: return "unknown";
    case DataType::Byte: return "byte";
    case DataType::Char: return "char";
    case DataType::Int8: return "int8";
    case DataType::Uint8: return "uint8";
    case DataType::Int16: return "int16";
    case DataType::Uint16: return "uint16";
    case DataType::Int32: return "int32";
    case DataType::Uint32: return "uint32";
    case DataType::Int64: return "int64";
    case DataType::Uint64: return "uint64";
    case DataType::Float16: return "float16";
    case DataType::BFloat16: return "bfloat16";
    case DataType::Float32: return "float32";
    case DataType::Float64: return "float64";
    case DataType::Float8E4M3: return "float8e4m3";
    case DataType::Float8E5M2: return "float8e5m2";
    case DataType::LongDouble: return "long-double";
    case DataType::Complex64: return "complex64";
    case DataType::Complex128: return "complex128";
    case DataType::PairType: return "pair";
    case DataType::Derived: return "derived";
  }
  return "unknown";
}

const char* RedOpName(RedOp op) {
  const char* name = fb::v1::EnumNameRedOp(op);
  return (name && *name) ? name : "unknown";
}

const char* const kNcclAlgorithmNames[7] = {"Tree", "Ring", "CollNetDirect", "CollNetChain",
                                            "NVLS", "NVLSTree", "PAT"};
const char* const kNcclProtocolNames[3] = {"LL", "LL128", "Simple"};

const char* NcclAlgorithmName(NcclAlgorithm algo) {
  const int a = int(algo);
  return a >= 0 && a < 7 ? kNcclAlgorithmNames[a] : "unknown";
}

const char* NcclProtocolName(NcclProtocol proto) {
  const int p = int(proto);
  return p >= 0 && p < 3 ? kNcclProtocolNames[p] : "unknown";
}

NcclAlgorithm ParseNcclAlgorithm(const char* name) {
  for (int a = 0; name && a < 7; ++a)
    if (strcasecmp(name, kNcclAlgorithmNames[a]) == 0) return NcclAlgorithm(a);
  return NcclAlgorithm::Unknown;
}

NcclProtocol ParseNcclProtocol(const char* name) {
  for (int p = 0; name && p < 3; ++p)
    if (strcasecmp(name, kNcclProtocolNames[p]) == 0) return NcclProtocol(p);
  return NcclProtocol::Unknown;
}

const char* ApiName(Api api) {
  switch (api) {
    case Api::Mpi: return "MPI";
    case Api::Nccl: return "NCCL";
    case Api::Unknown: break;
  }
  return "unknown";
}

}  // namespace dltrace::formats
