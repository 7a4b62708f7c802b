// SPDX-License-Identifier: GPL-2.0-only
// One op lowered on its own, so that its steps on each endpoint can join the
// schedule at different times: MPI lets a rank finish some ops (a broadcast's
// root, an eager send) before its peers reach them. Private to models/.
#pragma once

#include <functional>
#include <vector>

#include "dltrace/models/algorithms.h"

namespace dltrace::models::lowering {

class LoneOp {
 public:
  // Runs LOWER (the op's algorithm, between BeginOp(OP) and EndOp) on an
  // empty schedule with SHAPE's endpoints and hosts.
  LoneOp(const Schedule& shape, uint32_t op, const std::function<void(StepBuilder&)>& lower);

  bool HasSteps(int32_t endpoint) const { return !ranks_[size_t(endpoint)].steps.empty(); }
  // Endpoints that have steps in the op.
  const std::vector<int32_t>& Endpoints() const { return endpoints_; }
  // The endpoints ENDPOINT receives from in the op.
  const std::vector<int32_t>& Senders(int32_t endpoint) const { return senders_[size_t(endpoint)]; }

  // Appends ENDPOINT's steps of the op to S; those that wait for nothing in
  // the op wait for ENTRY. Returns the appended steps nothing else appended
  // waits for, or ENTRY when the op has no steps there.
  std::vector<uint32_t> CopyTo(Schedule* s, int32_t endpoint, const std::vector<uint32_t>& entry) const;

 private:
  std::vector<RankSchedule> ranks_;
  std::vector<int32_t> endpoints_;
  std::vector<std::vector<int32_t>> senders_;
};

}  // namespace dltrace::models::lowering
