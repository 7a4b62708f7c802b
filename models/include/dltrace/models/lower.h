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

// Lowers MERGED with options.algorithm (which must name an entry of
// AllAlgorithms()). Calls that are not consistent across their members are
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
//   for messages the schedule models, not compute.
Schedule LowerTrace(const MergedTrace& merged, const LowerOptions& options,
                    std::vector<std::string>* notes);

// Period of a sequence of op signatures: ops per iteration and how many
// setup ops come first; {0, 0} when nothing repeats. Exposed for tests.
struct IterationPattern {
  size_t period = 0;
  size_t prefix = 0;
};
IterationPattern DetectIterations(const std::vector<uint64_t>& signatures);

}  // namespace dltrace::models
