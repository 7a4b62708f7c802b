// SPDX-License-Identifier: GPL-2.0-only
// Alpha-beta estimate of a schedule: each transfer costs latency + bytes /
// bandwidth, each compute step its duration, taken along the dependency graph.
#pragma once

#include <cstdint>
#include <vector>

#include "dltrace/models/schedule.h"

namespace dltrace::models {

struct TimeSpan {
  double start_ns = 0, end_ns = 0;
  double duration_ns() const { return end_ns - start_ns; }
};

struct Estimate {
  // Per schedule op: from its first transfer starting to its last one ending
  // (compute gaps excluded); zero-length for ops without transfers.
  std::vector<TimeSpan> ops;
  // Per iteration: from its first step starting to its last step ending
  // (these overlap in pipelines and across ranks).
  std::vector<TimeSpan> iterations;
  // Per iteration, as models/iteration_time.h defines it (they add up to
  // the last iteration's end): what every command prints.
  std::vector<double> iteration_ns;
  double total_ns = 0;
  // False when some steps could never run (a receive whose send never can):
  // a schedule CheckSchedule would reject.
  bool complete = true;
};

// No contention: links are as many as transfers, except that the channels
// of one op share their sender host's link (its sends take it in turn, in
// the order the sweep reaches them); same-host transfers use
// schedule.local_link, the others NETWORK.
Estimate EstimateSchedule(const Schedule& schedule, const Link& network);

// Seconds a transfer of BYTES takes on LINK.
inline double TransferNs(const Link& link, uint64_t bytes) {
  return link.latency_ns + (link.gbps > 0 ? double(bytes) * 8.0 / link.gbps : 0.0);
}

}  // namespace dltrace::models
