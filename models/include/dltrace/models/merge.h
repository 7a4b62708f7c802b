// SPDX-License-Identifier: GPL-2.0-only
// One view of a trace set: communicators as world ranks, the parts of each
// collective call matched across ranks, send/receive pairs matched, ranks by host.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "dltrace/formats/op_kind.h"
#include "dltrace/formats/trace_set.h"

namespace dltrace::models {

// A communicator as the whole run knows it: NCCL communicators are matched
// across rank files by the hash of their ncclUniqueId, MPI ones by members.
struct WorldCommunicator {
  formats::Api api = formats::Api::Unknown;
  std::string name;
  uint64_t nccl_unique_id_hash = 0;
  std::vector<int32_t> members;  // world ranks, index = communicator rank; -1 unknown
};

// One collective call: the k-th collective every member made on one
// communicator (MPI and NCCL both require members to call them in one order).
struct CollectiveCall {
  formats::Collective collective = formats::Collective::kNone;
  formats::OpKind kind = formats::OpKind::Unknown;
  uint32_t comm = 0;       // index into MergedTrace::comms
  uint64_t ordinal = 0;    // k: which collective call on the communicator
  uint64_t bytes = 0;
  int32_t root = 0;        // communicator rank
  std::vector<int64_t> parts;  // per communicator rank: op index in its file, -1 missing
  bool consistent = true;  // every member recorded it, as the same collective
};

// A matched point-to-point message.
struct Transfer {
  int32_t src = -1, dst = -1;  // world ranks
  uint32_t send_op = 0, recv_op = 0;  // op indices in the two files
  uint64_t bytes = 0;                 // what the sender sent
  uint32_t comm = 0;
};

// What a recorded op became in the merged view.
// A one-sided op (MPI_Put, MPI_Get, ...): the origin's call, its target.
struct OneSidedOp {
  int32_t origin = -1, target = -1;  // world ranks
  uint32_t op = 0;                   // op index in the origin's file
  uint64_t bytes = 0;
  uint32_t comm = 0;                 // the window, an index into MergedTrace::comms
};

struct OpLink {
  enum class Kind : uint8_t { kNone, kCall, kTransfer, kOneSided };
  Kind kind = Kind::kNone;
  uint32_t index = 0;   // into calls or transfers
  int64_t second = -1;  // a send-receive's other transfer, else -1
};

struct HostGroup {
  std::string name;
  std::vector<int32_t> ranks;
};

struct MergedTrace {
  const formats::TraceSet* set = nullptr;  // must outlive the merged view
  int32_t world_size = 0;
  std::vector<int32_t> host_of_rank;  // index = world rank; -1 when its file is missing
  std::vector<HostGroup> hosts;
  std::vector<WorldCommunicator> comms;
  // Per world rank: its file's communicator id -> index into comms.
  std::vector<std::unordered_map<uint32_t, uint32_t>> comm_index;
  std::vector<CollectiveCall> calls;
  std::vector<Transfer> transfers;
  std::vector<OneSidedOp> one_sided;
  std::vector<std::vector<OpLink>> links;  // [world rank][op index]
  // One line each, naming the communicator, call or rank: what does not fit
  // together. Empty for a consistent set.
  std::vector<std::string> problems;

  const formats::RankTrace* rank(int32_t world_rank) const { return set->rank(world_rank); }
};

// Never fails: what cannot be matched is left unlinked and said in problems.
MergedTrace Merge(const formats::TraceSet& set);

// When a rank's part of the job began: the recorder's start, or the rank's
// first call that moves data when the file has no start or that call came
// first (MPI_Init and the like do not count: they may begin long before the
// recorder). The origin of the rank's first compute gap in the lowering and
// of its recorded iteration 0; 0 when the rank moved no data and has no start.
int64_t RankOriginNs(const formats::RankTrace& rank);

}  // namespace dltrace::models
