// SPDX-License-Identifier: GPL-2.0-only
// JobProgress: the schedule's network bytes per endpoint and iteration, and
// the bytes sent so far, for MLTCP's bytes_ratio.
#include "dltrace/models/mltcp.h"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace dltrace::models {

JobProgress::JobProgress(const Schedule& schedule) : schedule_(&schedule) {
  int32_t lo = std::numeric_limits<int32_t>::max(), hi = std::numeric_limits<int32_t>::min();
  for (const ScheduleOp& op : schedule.ops) {
    lo = std::min(lo, op.iteration);
    hi = std::max(hi, op.iteration);
  }
  if (lo > hi) lo = hi = 0;
  first_iteration_ = lo;
  iterations_ = size_t(int64_t(hi) - lo + 1);
  const size_t n = schedule.ranks.size();
  total_.assign(n * iterations_, 0);
  sent_.assign(n * iterations_, 0);
  job_total_.assign(iterations_, 0);
  job_sent_.assign(iterations_, 0);
  current_.assign(n, -1);
  for (size_t e = 0; e < n; ++e) {
    for (const Step& s : schedule.ranks[e].steps) {
      if (s.type != StepType::kSend || s.local || s.op() >= schedule.ops.size()) continue;
      const size_t slot = Index(schedule.ops[s.op()].iteration);
      total_[e * iterations_ + slot] += s.bytes;
      job_total_[slot] += s.bytes;
    }
  }
}

size_t JobProgress::Index(int32_t iteration) const {
  const int64_t slot = int64_t(iteration) - first_iteration_;
  if (slot < 0 || uint64_t(slot) >= iterations_) return SIZE_MAX;
  return size_t(slot);
}

void JobProgress::Begin(int32_t endpoint, uint32_t op) {
  if (endpoint < 0 || size_t(endpoint) >= current_.size() || op >= schedule_->ops.size()) return;
  const int32_t iteration = schedule_->ops[op].iteration;
  if (Index(iteration) == SIZE_MAX) return;
  current_[size_t(endpoint)] = std::max(current_[size_t(endpoint)], iteration);
}

void JobProgress::Sent(int32_t endpoint, uint32_t op, uint64_t bytes) {
  if (endpoint < 0 || size_t(endpoint) >= current_.size() || op >= schedule_->ops.size()) return;
  const size_t slot = Index(schedule_->ops[op].iteration);
  if (slot == SIZE_MAX) return;
  sent_[size_t(endpoint) * iterations_ + slot] += bytes;
  job_sent_[slot] += bytes;
  Begin(endpoint, op);
}

int32_t JobProgress::CurrentIteration(int32_t endpoint) const {
  if (endpoint < 0 || size_t(endpoint) >= current_.size()) return -1;
  return current_[size_t(endpoint)];
}

uint64_t JobProgress::IterationBytes(int32_t iteration, int32_t endpoint) const {
  const size_t slot = Index(iteration);
  if (slot == SIZE_MAX) return 0;
  if (endpoint < 0) return job_total_[slot];
  return size_t(endpoint) < current_.size() ? total_[size_t(endpoint) * iterations_ + slot] : 0;
}

uint64_t JobProgress::SentBytes(int32_t iteration, int32_t endpoint) const {
  const size_t slot = Index(iteration);
  if (slot == SIZE_MAX) return 0;
  if (endpoint < 0) return job_sent_[slot];
  return size_t(endpoint) < current_.size() ? sent_[size_t(endpoint) * iterations_ + slot] : 0;
}

double JobProgress::Ratio(int32_t endpoint, MltcpScope scope) const {
  const int32_t iteration = CurrentIteration(endpoint);
  if (iteration < 0) return 0;
  const int32_t who = scope == MltcpScope::kJob ? -1 : endpoint;
  const uint64_t total = IterationBytes(iteration, who);
  if (total == 0) return 0;
  return std::min(1.0, double(SentBytes(iteration, who)) / double(total));
}

}  // namespace dltrace::models
