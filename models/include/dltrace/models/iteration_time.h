// SPDX-License-Identifier: GPL-2.0-only
// Iteration time, one definition for every run of a job: the recorded run,
// the estimate, socket replays and both simulators.
//
// Iteration i is done when its last op (or compute step) has ended on every
// endpoint, that is at the latest end of its work anywhere in the job. Its
// time runs from the moment iteration i-1 was done (the first: from the
// job's start) to that moment. The times therefore follow one another and
// add up to the job's time up to the last iteration's end, for data-parallel
// and pipeline-parallel jobs alike; a job that repeats identical iterations
// gets equal times after the first.
#pragma once

#include <cstddef>
#include <vector>

namespace dltrace::models {

class IterationClock {
 public:
  explicit IterationClock(size_t iterations = 0) : done_ns_(iterations, kNone) {}

  // Some endpoint ended work of ITERATION at END_NS (a negative ITERATION is
  // ignored; a later one than seen so far adds iterations).
  void NoteEnd(long iteration, double end_ns);
  // Per iteration: from the previous one being done (the first from
  // JOB_START_NS) to this one being done; 0 for an iteration with no work
  // seen, or done no later than the one before it.
  std::vector<double> TimesNs(double job_start_ns) const;
  size_t iterations() const { return done_ns_.size(); }

 private:
  static constexpr double kNone = -1e300;
  std::vector<double> done_ns_;  // latest end per iteration
};

}  // namespace dltrace::models
