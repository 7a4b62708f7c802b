// SPDX-License-Identifier: GPL-2.0-only
// NCCL ops in the lowering: each rank's NCCL calls in file order (a cursor
// per rank), and per GPU stream the steps and idle time the next op follows;
// ops of one ncclGroupStart/End start together. Private to models/.
#pragma once

#include <functional>
#include <map>
#include <vector>

#include "dltrace/models/algorithms.h"
#include "recorded_ops.h"

namespace dltrace::models::lowering {

class NcclLanes {
 public:
  NcclLanes(const MergedTrace& m, const RecordedOps& rec);

  using ReadyFn = std::function<void(uint32_t op)>;
  // RANK's cursor arrived at its first NCCL item: READY for each of its ops.
  void Start(int32_t rank, const ReadyFn& ready) { Arrive(rank, ready); }
  // Moves RANK's cursor past items whose ops are all LOWERED, READY for the
  // ops of each item it arrives at.
  void Advance(int32_t rank, const std::vector<char>& lowered, const ReadyFn& ready);
  // The item RANK's cursor stands at; nullptr past its last.
  const Item* AtCursor(int32_t rank) const;

  // Lowering E's op: sets RANK's entry in B after its stream's previous op,
  // with a compute step for the stream's idle time before E.
  void Enter(StepBuilder& b, int32_t rank, const formats::OpEvent& e);
  // After B.EndOp(): what the stream's next op waits for.
  void Exit(const StepBuilder& b, int32_t rank, const formats::OpEvent& e);

 private:
  // A GPU stream's ordering state.
  struct Lane {
    std::vector<uint32_t> exits;
    int64_t last_end = 0;
    bool started = false;
    // NCCL ops issued between ncclGroupStart/End run together: each starts
    // where the group started, and what follows waits for all of them.
    uint32_t group = 0;
    std::vector<uint32_t> group_entry, group_exits;
  };

  void Arrive(int32_t rank, const ReadyFn& ready);
  Lane& LaneOf(int32_t rank, const formats::OpEvent& e);

  const RecordedOps& rec_;
  std::vector<std::vector<uint32_t>> order_;  // per rank: indices of its NCCL items, in order
  std::vector<size_t> cursor_;
  std::vector<std::map<uint64_t, Lane>> lanes_;  // per rank: by stream
};

}  // namespace dltrace::models::lowering
