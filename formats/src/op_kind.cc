// SPDX-License-Identifier: GPL-2.0-only
// The semantic table behind CollectiveOf and BusBandwidthFactor.
#include "dltrace/formats/op_kind.h"

namespace dltrace::formats {

Collective CollectiveOf(OpKind kind) {
  switch (kind) {
    case OpKind::MpiSend: case OpKind::MpiSsend: case OpKind::MpiBsend: case OpKind::MpiRsend:
    case OpKind::MpiIsend: case OpKind::MpiIssend: case OpKind::NcclSend:
      return Collective::kSend;
    case OpKind::MpiRecv: case OpKind::MpiIrecv: case OpKind::MpiMrecv: case OpKind::MpiImrecv:
    case OpKind::NcclRecv:
      return Collective::kRecv;
    case OpKind::MpiSendrecv: case OpKind::MpiSendrecvReplace:
      return Collective::kSendRecv;
    case OpKind::MpiBarrier: case OpKind::MpiIbarrier:
    case OpKind::MpiWinFence:  // synchronises the window's group
      return Collective::kBarrier;
    case OpKind::MpiBcast: case OpKind::MpiIbcast: case OpKind::NcclBroadcast:
      return Collective::kBroadcast;
    case OpKind::MpiReduce: case OpKind::MpiIreduce: case OpKind::NcclReduce:
      return Collective::kReduce;
    case OpKind::MpiAllreduce: case OpKind::MpiIallreduce: case OpKind::NcclAllReduce:
      return Collective::kAllReduce;
    case OpKind::MpiGather: case OpKind::MpiGatherv: case OpKind::MpiIgather:
    case OpKind::MpiIgatherv: case OpKind::NcclGather:
      return Collective::kGather;
    case OpKind::MpiScatter: case OpKind::MpiScatterv: case OpKind::MpiIscatter:
    case OpKind::MpiIscatterv: case OpKind::NcclScatter:
      return Collective::kScatter;
    case OpKind::MpiAllgather: case OpKind::MpiAllgatherv: case OpKind::MpiIallgather:
    case OpKind::MpiIallgatherv: case OpKind::NcclAllGather:
      return Collective::kAllGather;
    case OpKind::MpiReduceScatter: case OpKind::MpiReduceScatterBlock:
    case OpKind::MpiIreduceScatter: case OpKind::MpiIreduceScatterBlock:
    case OpKind::NcclReduceScatter:
      return Collective::kReduceScatter;
    case OpKind::MpiAlltoall: case OpKind::MpiAlltoallv: case OpKind::MpiAlltoallw:
    case OpKind::MpiIalltoall: case OpKind::MpiIalltoallv: case OpKind::MpiIalltoallw:
    case OpKind::NcclAllToAll:
      return Collective::kAllToAll;
    case OpKind::MpiScan: case OpKind::MpiExscan: case OpKind::MpiIscan: case OpKind::MpiIexscan:
      return Collective::kScan;
    case OpKind::MpiNeighborAllgather: case OpKind::MpiNeighborAllgatherv:
    case OpKind::MpiNeighborAlltoall: case OpKind::MpiNeighborAlltoallv:
    case OpKind::MpiNeighborAlltoallw: case OpKind::MpiIneighborAllgather:
    case OpKind::MpiIneighborAllgatherv: case OpKind::MpiIneighborAlltoall:
    case OpKind::MpiIneighborAlltoallv: case OpKind::MpiIneighborAlltoallw:
      return Collective::kNeighborExchange;
    case OpKind::MpiPut: case OpKind::MpiAccumulate: case OpKind::MpiRput:
    case OpKind::MpiRaccumulate:
      return Collective::kPut;
    case OpKind::MpiGet: case OpKind::MpiRget:
      return Collective::kGet;
    case OpKind::MpiGetAccumulate: case OpKind::MpiFetchAndOp: case OpKind::MpiCompareAndSwap:
    case OpKind::MpiRgetAccumulate:
      return Collective::kPutGet;
    default:
      return Collective::kNone;
  }
}

const char* CollectiveName(Collective c) {
  switch (c) {
    case Collective::kNone: return "none";
    case Collective::kSend: return "send";
    case Collective::kRecv: return "recv";
    case Collective::kSendRecv: return "sendrecv";
    case Collective::kBarrier: return "barrier";
    case Collective::kBroadcast: return "broadcast";
    case Collective::kReduce: return "reduce";
    case Collective::kAllReduce: return "all-reduce";
    case Collective::kGather: return "gather";
    case Collective::kScatter: return "scatter";
    case Collective::kAllGather: return "all-gather";
    case Collective::kReduceScatter: return "reduce-scatter";
    case Collective::kAllToAll: return "all-to-all";
    case Collective::kScan: return "scan";
    case Collective::kNeighborExchange: return "neighbor-exchange";
    case Collective::kPut: return "put";
    case Collective::kGet: return "get";
    case Collective::kPutGet: return "put-get";
  }
  return "none";
}

bool IsNccl(OpKind kind) { return kind >= OpKind::NcclAllReduce && kind <= OpKind::NcclRecv; }

bool IsOneSided(OpKind kind) {
  Collective c = CollectiveOf(kind);
  return c == Collective::kPut || c == Collective::kGet || c == Collective::kPutGet;
}

bool IsWindowSync(OpKind kind) { return kind >= OpKind::MpiWinFence && kind <= OpKind::MpiWinFlushLocalAll; }

bool IsPointToPoint(OpKind kind) {
  Collective c = CollectiveOf(kind);
  return c == Collective::kSend || c == Collective::kRecv || c == Collective::kSendRecv;
}

bool IsCollective(OpKind kind) {
  Collective c = CollectiveOf(kind);
  return c != Collective::kNone && !IsPointToPoint(kind) && !IsOneSided(kind);
}

bool IsNonblocking(OpKind kind) {
  switch (kind) {
    case OpKind::MpiIsend: case OpKind::MpiIssend: case OpKind::MpiIrecv:
    case OpKind::MpiIbarrier: case OpKind::MpiIbcast: case OpKind::MpiIreduce:
    case OpKind::MpiIallreduce: case OpKind::MpiIallgather: case OpKind::MpiIalltoall:
    case OpKind::MpiIreduceScatter: case OpKind::MpiIreduceScatterBlock:
    case OpKind::MpiIgather: case OpKind::MpiIgatherv: case OpKind::MpiIscatter:
    case OpKind::MpiIscatterv: case OpKind::MpiIallgatherv: case OpKind::MpiIalltoallv:
    case OpKind::MpiIalltoallw: case OpKind::MpiIscan: case OpKind::MpiIexscan:
    case OpKind::MpiImrecv: case OpKind::MpiIneighborAllgather:
    case OpKind::MpiIneighborAllgatherv: case OpKind::MpiIneighborAlltoall:
    case OpKind::MpiIneighborAlltoallv: case OpKind::MpiIneighborAlltoallw:
      return true;
    default:
      // One-sided ops complete at the synchronisation that closes their epoch.
      return IsNccl(kind) || IsOneSided(kind);
  }
}

double BusBandwidthFactor(Collective c, int n) {
  if (n < 1) return 0;
  switch (c) {
    case Collective::kAllReduce: return 2.0 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
    case Collective::kGather:
    case Collective::kScatter: return double(n - 1) / n;
    case Collective::kBroadcast:
    case Collective::kReduce:
    case Collective::kSend:
    case Collective::kRecv:
    case Collective::kSendRecv: return 1.0;
    default: return 0.0;
  }
}

}  // namespace dltrace::formats
