// SPDX-License-Identifier: GPL-2.0-only
// One op lowered on its own, copied into the schedule one endpoint at a time.
#include "lone_op.h"

#include <algorithm>

namespace dltrace::models::lowering {

LoneOp::LoneOp(const Schedule& shape, uint32_t op, const std::function<void(StepBuilder&)>& lower) {
  Schedule scratch;
  scratch.world_size = shape.world_size;
  scratch.endpoints = shape.endpoints;
  scratch.hosts = shape.hosts;
  scratch.ranks.resize(shape.ranks.size());
  StepBuilder b(&scratch);
  b.BeginOp(op);
  lower(b);
  b.EndOp();
  ranks_ = std::move(scratch.ranks);
  senders_.resize(ranks_.size());
  for (int32_t e = 0; e < int32_t(ranks_.size()); ++e) {
    if (ranks_[size_t(e)].steps.empty()) continue;
    endpoints_.push_back(e);
    auto& from = senders_[size_t(e)];
    for (const Step& st : ranks_[size_t(e)].steps)
      if (st.type == StepType::kRecv) from.push_back(st.peer);
    std::sort(from.begin(), from.end());
    from.erase(std::unique(from.begin(), from.end()), from.end());
  }
}

std::vector<uint32_t> LoneOp::CopyTo(Schedule* s, int32_t endpoint,
                                     const std::vector<uint32_t>& entry) const {
  const RankSchedule& from = ranks_[size_t(endpoint)];
  if (from.steps.empty()) return entry;
  RankSchedule& to = s->ranks[size_t(endpoint)];
  const uint32_t base = uint32_t(to.steps.size());
  std::vector<char> waited(from.steps.size(), 0);
  for (const Step& st : from.steps) {
    Step copy = st;
    // Deps inside the op are ids of the scratch endpoint; a step with none
    // waited for the builder's entry, which was empty.
    for (const uint32_t* d = from.deps_begin(st); d != from.deps_end(st); ++d) {
      to.deps.push_back(base + *d);
      waited[*d] = 1;
    }
    if (from.DepCount(st) == 0) to.deps.insert(to.deps.end(), entry.begin(), entry.end());
    copy.deps_end = uint32_t(to.deps.size());
    to.steps.push_back(copy);
  }
  std::vector<uint32_t> exits;
  for (uint32_t i = 0; i < from.steps.size(); ++i)
    if (!waited[i]) exits.push_back(base + i);
  return exits;
}

}  // namespace dltrace::models::lowering
