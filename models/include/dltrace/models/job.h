// SPDX-License-Identifier: GPL-2.0-only
// One recorded job, loaded once for every command, executor and view: the
// trace set, its merged view, the schedule lowered for one algorithm, and a
// job-wide clock. LoadJob is the only place that loads, merges and lowers.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dltrace/formats/trace_set.h"
#include "dltrace/models/lower.h"
#include "dltrace/models/merge.h"
#include "dltrace/models/schedule.h"

namespace dltrace::models {

struct Job {
  formats::TraceSet set;
  MergedTrace merged;  // points into set: a Job is never copied or moved
  Schedule schedule;   // lowered with the options given to LoadJob
  // Trace-set warnings, then merge problems, then lowering notes, in that order.
  std::vector<std::string> notes;
  // Ops the lowering had to order against some rank's recorded order.
  std::vector<ForcedOrder> forced;
  // Per world rank, per op index in its file: the schedule op it became, or kNoOp.
  std::vector<std::vector<uint32_t>> schedule_op;
  // Per world rank: add to a CLOCK_MONOTONIC time of that rank to get
  // nanoseconds since the job's first recorded op (ranks on different hosts
  // are aligned through each header's realtime/monotonic pair).
  std::vector<int64_t> clock_offset;

  Job() = default;
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  // The trace set was read whole and every call matched across its members
  // (no warning from the reader, no problem from the merge).
  bool Consistent() const { return set.warnings.empty() && merged.problems.empty(); }
  int64_t JobTime(int32_t rank, int64_t monotonic_ns) const {
    return monotonic_ns + clock_offset[size_t(rank)];
  }
  // The world rank of communicator rank R in the file-local communicator COMM of RANK; -1 unknown.
  int32_t WorldRank(int32_t rank, uint32_t comm, int32_t comm_rank) const;
  // Members of the file-local communicator COMM of RANK (0 when unknown).
  size_t CommSize(int32_t rank, uint32_t comm) const;
  const WorldCommunicator* Comm(int32_t rank, uint32_t comm) const;
};

// Where an op ran on the timeline that matters: the GPU when timed there,
// else from the call's entry to its exit (or completion, for nonblocking calls).
struct Span {
  int64_t start_ns = 0, end_ns = 0;
  bool gpu = false;
};
Span OpSpan(const formats::OpEvent& e);

struct JobOptions {
  LowerOptions lower;
  // Fail unless the lowered schedule can run (CheckSchedule finds nothing and
  // it has endpoints): what executors ask for; views and schedule print anyway.
  bool runnable = false;
  // Called as each stage ends ("read", "merged", "lowered", "checked"), for
  // progress lines on jobs that take minutes to load; may be empty.
  std::function<void(const char* stage)> on_stage;
};

// Loads, merges and lowers PATH. Null with a one-line *error when the trace
// set cannot be read at all, the algorithm is unknown, or (options.runnable)
// the schedule cannot run.
std::unique_ptr<Job> LoadJob(const std::string& path, const JobOptions& options, std::string* error);
std::unique_ptr<Job> LoadJob(const std::string& path, const LowerOptions& lower, std::string* error);

}  // namespace dltrace::models
