// SPDX-License-Identifier: GPL-2.0-only
// NCCL ops in the lowering: per-rank order, per-stream entries and exits.
#include "nccl_lanes.h"

#include <algorithm>
#include <climits>

namespace dltrace::models::lowering {

using formats::OpEvent;

namespace {

int64_t StartNs(const OpEvent& op) { return op.gpu_start_ns ? *op.gpu_start_ns : op.enter_ns; }
int64_t EndNs(const OpEvent& op) { return op.gpu_end_ns ? *op.gpu_end_ns : op.exit_ns; }

}  // namespace

NcclLanes::NcclLanes(const MergedTrace& m, const RecordedOps& rec)
    : rec_(rec),
      order_(size_t(m.world_size)),
      cursor_(size_t(m.world_size), 0),
      lanes_(size_t(m.world_size)) {
  for (size_t r = 0; r < rec.items.size() && r < order_.size(); ++r)
    for (uint32_t k = 0; k < rec.items[r].size(); ++k)
      if (rec.items[r][k].nccl) order_[r].push_back(k);
}

const Item* NcclLanes::AtCursor(int32_t rank) const {
  const auto& order = order_[size_t(rank)];
  const size_t c = cursor_[size_t(rank)];
  return c < order.size() ? &rec_.items[size_t(rank)][order[c]] : nullptr;
}

void NcclLanes::Arrive(int32_t rank, const ReadyFn& ready) {
  if (const Item* item = AtCursor(rank))
    for (uint32_t x : item->ops) ready(x);
}

void NcclLanes::Advance(int32_t rank, const std::vector<char>& lowered, const ReadyFn& ready) {
  while (const Item* item = AtCursor(rank)) {
    for (uint32_t x : item->ops)
      if (!lowered[x]) return;
    ++cursor_[size_t(rank)];
    Arrive(rank, ready);
  }
}

// Where an op runs in order with others on its rank: its GPU stream.
NcclLanes::Lane& NcclLanes::LaneOf(int32_t rank, const OpEvent& e) {
  return lanes_[size_t(rank)][e.stream];
}

void NcclLanes::Enter(StepBuilder& b, int32_t rank, const OpEvent& e) {
  Lane& lane = LaneOf(rank, e);
  const bool grouped = e.group != 0;
  if (grouped && lane.started && lane.group == e.group) {
    b.SetEntry(rank, lane.group_entry);  // a later op of the group
    return;
  }
  int64_t since = lane.started ? lane.last_end : rec_.first_ns[size_t(rank)];
  int64_t gap = StartNs(e) - since;
  std::vector<uint32_t> entry = lane.exits;
  b.SetEntry(rank, entry);
  // The previous op may end in many steps (a ring's sends); one compute
  // step joins them, so the new op's first steps wait on one step each.
  if (gap > 0 || lane.exits.size() > 1) {
    uint32_t c = b.Compute(rank, uint64_t(std::max<int64_t>(gap, 0)), {});
    entry = {c};
    b.SetEntry(rank, entry);
  }
  lane.group = grouped ? e.group : 0;
  if (grouped) {
    lane.group_entry = std::move(entry);
    lane.group_exits.clear();
  }
}

void NcclLanes::Exit(const StepBuilder& b, int32_t rank, const OpEvent& e) {
  Lane& lane = LaneOf(rank, e);
  if (lane.group != 0 && e.group == lane.group) {
    if (b.Touched(rank)) {
      const auto& exits = b.Exits(rank);
      lane.group_exits.insert(lane.group_exits.end(), exits.begin(), exits.end());
    }
    if (!lane.group_exits.empty()) lane.exits = lane.group_exits;
  } else if (b.Touched(rank)) {
    lane.exits = b.Exits(rank);
  }
  lane.last_end = std::max(lane.started ? lane.last_end : INT64_MIN, EndNs(e));
  lane.started = true;
}

}  // namespace dltrace::models::lowering
