// SPDX-License-Identifier: GPL-2.0-only
// The lowering's input: the ops a merged trace lowers to (one per consistent
// collective call, one per transfer), which recorded calls take part in each,
// and each rank's recorded order of them. Private to models/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dltrace/models/algorithms.h"
#include "dltrace/models/merge.h"
#include "dltrace/models/schedule.h"

namespace dltrace::models::lowering {

using formats::IsNccl;

// One rank's recorded call that takes part in an op.
struct Part {
  int32_t rank;
  uint32_t trace_op;
};

// Ops of one rank at one position of its recorded order: one op, the two
// transfers of a send-receive, or the ops of one NCCL group (which NCCL runs
// together, so their order within the group means nothing).
struct Item {
  std::vector<uint32_t> ops;
  uint32_t group = 0;
  uint32_t trace_op = 0;
  bool nccl = false;
};

struct RecordedOps {
  std::vector<std::vector<Part>> parts;  // per schedule op
  std::vector<int64_t> time;             // per schedule op: its earliest recorded entry
  // Per world rank: its items, in the order the rank made the calls (NCCL
  // ones in file order).
  std::vector<std::vector<Item>> items;
  // Per world rank: where the time before its first call counts from (RankOriginNs).
  std::vector<int64_t> first_ns;

  const formats::OpEvent& TraceOp(const MergedTrace& m, const Part& p) const {
    return m.rank(p.rank)->ops[p.trace_op];
  }
};

// Appends one ScheduleOp per consistent collective call and per transfer
// between two ranks to S->ops (calls recorded inconsistently and messages a
// rank sent itself are left out and said in *NOTES) and returns who takes
// part in each and every rank's order.
RecordedOps CollectRecordedOps(const MergedTrace& m, Schedule* s, std::vector<std::string>* notes);

// Splits the ops into iterations (options.iteration_ops, the writer's
// kIterationOpsAttribute, or the period DetectIterations finds on the first
// rank with ops); sets S->iterations and returns each op's iteration, -1
// where none was found (such an op takes the iteration lowered before it).
std::vector<int32_t> AssignIterations(const MergedTrace& m, const LowerOptions& options,
                                      const RecordedOps& rec, Schedule* s);

}  // namespace dltrace::models::lowering
