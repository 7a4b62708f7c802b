// SPDX-License-Identifier: GPL-2.0-only
// What each recorded call is, semantically: which collective it performs,
// whether it is point-to-point, and its bus-bandwidth factor (nccl-tests).
#pragma once

#include "dltrace/formats/trace.h"

namespace dltrace::formats {

enum class Collective {
  kNone,  // lifecycle, wait/test/probe, unknown
  kSend,
  kRecv,
  kSendRecv,
  kBarrier,
  kBroadcast,
  kReduce,
  kAllReduce,
  kGather,
  kScatter,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kScan,
  kNeighborExchange,  // neighbourhood collectives: per-peer bytes to and from each neighbour
  kPut,               // one-sided, origin to target (put, accumulate)
  kGet,               // one-sided, target to origin
  kPutGet,            // one-sided both ways (get-accumulate, fetch-and-op, compare-and-swap)
};

Collective CollectiveOf(OpKind kind);
const char* CollectiveName(Collective c);  // "all-reduce", "send", ...
bool IsNccl(OpKind kind);
bool IsOneSided(OpKind kind);    // a put, get or accumulate into a window (Collective kPut/kGet/kPutGet)
bool IsWindowSync(OpKind kind);  // MPI_Win_fence, lock/unlock, post/start/complete/wait, flush
bool IsPointToPoint(OpKind kind);
bool IsCollective(OpKind kind);  // a call every member of a communicator makes
bool IsNonblocking(OpKind kind);  // completes later, through Wait/Test or a stream

// busbw = algbw * factor, as nccl-tests defines it for n ranks: 2(n-1)/n for
// all-reduce, (n-1)/n for all-gather, reduce-scatter and all-to-all, 1 for
// broadcast, reduce and point-to-point, 0 where bandwidth means nothing.
double BusBandwidthFactor(Collective c, int n);

}  // namespace dltrace::formats
