// SPDX-License-Identifier: GPL-2.0-only
// MPI host threads in the lowering: each thread's calls in the order it made
// them (the schedule's ops, the Waits/Tests that completed nonblocking ones,
// calls that only waited for messages), walked as far as the lowered ops
// allow, with the compute time between calls. Private to models/.
#pragma once

#include <functional>
#include <map>
#include <vector>

#include "recorded_ops.h"

namespace dltrace::models::lowering {

// What walking a host thread needs from the ordering that lowers the ops.
class OpProgress {
 public:
  virtual ~OpProgress() = default;
  // OP's steps on RANK were made (they may be, before those on other ranks).
  virtual bool Done(uint32_t op, int32_t rank) const = 0;
  // RANK's thread reached OP (not done there yet): its steps there wait for ENTRY.
  virtual void Reach(uint32_t op, int32_t rank, std::vector<uint32_t> entry) = 0;
  // Appends to OUT what a call after OP on RANK waits for (once: a second
  // call appends nothing).
  virtual void TakeExits(uint32_t op, int32_t rank, std::vector<uint32_t>* out) = 0;
};

class HostThreads {
 public:
  HostThreads(const MergedTrace& m, const RecordedOps& rec, Schedule* s);

  // Walks RANK's threads as far as PROGRESS allows, making each op's entry
  // steps (the compute before it, after what it waits for).
  void Advance(int32_t rank, OpProgress& progress);
  // Calls FN for each op some thread of RANK stands at, unlowered or not.
  void ForEachWaitingOp(int32_t rank, const std::function<void(uint32_t)>& fn) const;
  // What the next call of E's thread on RANK waits for.
  const std::vector<uint32_t>& Frontier(int32_t rank, const formats::OpEvent& e) const;
  // The call E's thread on RANK stands at (kind Unknown past its last).
  struct Position {
    formats::OpKind kind = formats::OpKind::Unknown;
    uint32_t call = 0;  // index in the rank's file
    int64_t enter_ns = 0;
  };
  Position StandingAt(int32_t rank, const formats::OpEvent& e) const;

 private:
  // One call of an MPI host thread, in the order the thread made them.
  struct Call {
    enum class Type : uint8_t {
      kItem,  // an op of the schedule (blocking, or nonblocking: started here)
      kWait,  // a Wait/Test that completed nonblocking ops of the schedule
      kSkip,  // time spent waiting for messages (Probe, a Test that completed nothing)
    };
    Type type = Type::kSkip;
    bool nonblocking = false;
    bool reached = false;  // kItem: its entry was made
    formats::OpKind kind = formats::OpKind::Unknown;
    uint32_t trace_op = 0;  // index in the rank's file
    int64_t enter = 0, exit = 0;
    uint32_t item = 0;                // kItem: index into the rank's items
    std::vector<uint32_t> completed;  // kWait: schedule ops it completed
  };
  // An MPI host thread: its calls and how far the lowering walked them.
  // FRONTIER holds the steps the thread's next call waits for.
  struct Thread {
    std::vector<Call> calls;
    size_t pos = 0;
    std::vector<uint32_t> frontier;
    int64_t last_exit = 0;
    int64_t carry = 0;  // compute time since LAST_EXIT that skipped calls cut off
  };

  void Build(const formats::RankTrace& rt, int32_t rank);
  void AdvanceThread(int32_t rank, Thread& t, OpProgress& progress);
  // Compute time between the thread's last call and one entering at ENTER.
  static int64_t ComputeBefore(Thread& t, int64_t enter);
  uint32_t AddCompute(int32_t rank, uint32_t op, int64_t ns, const std::vector<uint32_t>& deps);

  const RecordedOps& rec_;
  Schedule& s_;
  std::vector<std::vector<Thread>> threads_;         // per rank
  std::vector<std::map<uint64_t, size_t>> index_;  // per rank: recorder thread -> threads_ index
};

}  // namespace dltrace::models::lowering
