// SPDX-License-Identifier: GPL-2.0-only
// Lowering a merged trace to one schedule: every call and transfer through
// the chosen algorithm, compute gaps as compute steps, ops assigned to iterations.
#pragma once

#include <string>
#include <vector>

#include "dltrace/models/algorithms.h"
#include "dltrace/models/merge.h"
#include "dltrace/models/schedule.h"

namespace dltrace::models {

// Header attribute a writer may set (dltrace synth does) to say how many
// collective calls and transfers of rank 0 make one training iteration.
constexpr char kIterationOpsAttribute[] = "dltrace.iteration_ops";

// An op the lowering could not put after all that each of its ranks
// recorded before it: the ranks' recorded orders contradict each other even
// with what MPI lets a rank finish alone. It was lowered where each rank
// stood. Times are nanoseconds since the rank's origin (RankOriginNs).
struct ForcedOrder {
  uint32_t op = 0;  // into Schedule::ops
  struct Party {
    int32_t rank = -1;
    uint32_t call = 0;     // the op's call: its index in the rank's file
    int64_t enter_ns = 0;  // when the rank entered it
    bool reached = false;  // the rank stood at this op when it was forced
    // Not reached: the call the rank stood at instead (Unknown: none).
    formats::OpKind at_kind = formats::OpKind::Unknown;
    uint32_t at_call = 0;
    int64_t at_enter_ns = 0;
  };
  std::vector<Party> parties;
};

// One line naming a forced op: kind, communicator and members, the
// collective's sequence number, and per rank its call, its time and, where
// it was not at the op, what it stood at.
std::string DescribeForcedOrder(const MergedTrace& merged, const Schedule& schedule,
                                const ForcedOrder& forced);

// The algorithm a trace set lowers with when none is named: nccl when its
// collectives are NCCL's (any rank recorded an NCCL call), so each is lowered
// as NCCL would run it; recorded for MPI trace sets. The one place that
// decides it; LowerTrace applies it to an empty options.algorithm.
std::string DefaultAlgorithm(const MergedTrace& merged);

// Lowers MERGED with options.algorithm (which must be empty or name an entry
// of AllAlgorithms()); Schedule::algorithm says which one it was. Calls that are not consistent across their members are
// left out and said in *notes. Ordering on each rank:
// - ops on one lane (a GPU stream for NCCL, an MPI host thread) run in
//   recorded order (an MPI thread's: the order it made the calls); different
//   lanes stay concurrent;
// - a nonblocking MPI call (Isend, Irecv, Iallreduce, ...) starts at its call
//   and holds up nothing after it; it completes at the Wait/Test that
//   completed it (the call whose span holds its recorded completion time),
//   and what the thread calls after that Wait waits for it;
// - the time a lane was idle between two ops (on the GPU timeline when the
//   op was timed there, else on the host) becomes a compute step before the
//   later op, and belongs to that op (the first op's gap counts from the
//   header's start_monotonic_ns when set, else from the rank's first call).
//   Time an MPI thread spent inside Wait*, Test* and Probe calls is waiting
//   for messages the schedule models, not compute;
// - what MPI lets a rank finish without its peers does not wait for them:
//   when no op can be lowered whole, an MPI op's part on one rank is lowered
//   alone once every message it receives was lowered on its sender's side,
//   unless it is a send that must meet its receive (MPI_Ssend, MPI_Issend, a
//   blocking standard send over the eager limit). A broadcast's root, an
//   eager or buffered send and an MPI_Isend thus complete on their own.
// What still cannot be ordered is forced (ForcedOrder, into *FORCED when
// given; a note counts them and names the first).
Schedule LowerTrace(const MergedTrace& merged, const LowerOptions& options,
                    std::vector<std::string>* notes, std::vector<ForcedOrder>* forced = nullptr);

// Period of a sequence of op signatures: ops per iteration and how many
// setup ops come first; {0, 0} when nothing repeats. Exposed for tests.
struct IterationPattern {
  size_t period = 0;
  size_t prefix = 0;
};
IterationPattern DetectIterations(const std::vector<uint64_t>& signatures);

}  // namespace dltrace::models
