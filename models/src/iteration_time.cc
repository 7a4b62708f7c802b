// SPDX-License-Identifier: GPL-2.0-only
// The one definition of iteration time (see iteration_time.h).
#include "dltrace/models/iteration_time.h"

#include <algorithm>

namespace dltrace::models {

void IterationClock::NoteEnd(long iteration, double end_ns) {
  if (iteration < 0) return;
  if (size_t(iteration) >= done_ns_.size()) done_ns_.resize(size_t(iteration) + 1, kNone);
  double& d = done_ns_[size_t(iteration)];
  d = std::max(d, end_ns);
}

std::vector<double> IterationClock::TimesNs(double job_start_ns) const {
  std::vector<double> times(done_ns_.size(), 0);
  double previous = job_start_ns;
  for (size_t i = 0; i < done_ns_.size(); ++i) {
    if (done_ns_[i] == kNone || done_ns_[i] <= previous) continue;
    times[i] = done_ns_[i] - previous;
    previous = done_ns_[i];
  }
  return times;
}

}  // namespace dltrace::models
