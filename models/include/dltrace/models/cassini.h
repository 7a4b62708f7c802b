// SPDX-License-Identifier: GPL-2.0-only
// CASSINI (Rajasekaran et al., NSDI'24) time shifts for jobs that share links:
// each job's periodic bandwidth demand per link (from its lowered schedule),
// per shared link the rotation on the circle of the periods' LCM that least
// overloads it, and one start offset per job from the affinity graph of jobs
// and links. Pure computation: the `dltrace place` command prints it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dltrace/models/schedule.h"
#include "dltrace/models/topology.h"

namespace dltrace::models {

// Demand BPS from START_NS to END_NS of a job's period (0 <= start < end <= period).
struct DemandSegment {
  double start_ns = 0, end_ns = 0;
  double bps = 0;
};

// One link direction: link index * 2, + 1 when crossed from TopologyLink::b to a.
inline uint32_t LinkDirection(uint32_t link, bool from_b) { return link * 2 + (from_b ? 1 : 0); }

// A job's periodic demand: the same every PERIOD_NS from its start.
struct JobDemand {
  double period_ns = 0;
  std::map<uint32_t, std::vector<DemandSegment>> links;  // link direction -> demand over one period
};

// The demand of a lowered job whose endpoint E runs on host HOSTS[E], job JOB of
// the simulation (for FlowHash), alone on GRAPH with every transfer at NETWORK's
// rate (EstimateSchedule: no contention). The period is the mean iteration
// start-to-start time (the one iteration's length when there is only one);
// each op's bytes on a link are spread evenly over the op's estimated span.
JobDemand ProfileJob(const Schedule& schedule, const std::vector<uint32_t>& hosts, uint32_t job,
                     const TopologyGraph& graph, const Link& network);

struct CassiniOptions {
  uint32_t bins = 1000;        // points on each link's circle; also the shift step
  double quantum_ns = 1e5;     // periods rounded to this for the circle's LCM
  uint32_t max_lcm_periods = 16;  // a circle longer than this many of its longest period: that period instead
};

// One shared link direction and the rotations chosen on it.
struct LinkShift {
  uint32_t link = 0;                 // link direction
  double circle_ns = 0;              // LCM of the rounded periods of its jobs
  std::vector<uint32_t> jobs;        // jobs with demand on it
  std::vector<double> shift_ns;      // per entry of jobs: its rotation on this circle
  double excess_before = 0;          // bytes above capacity per circle, every job started at 0
  double excess_after = 0;           // the same with the plan's start offsets
};

struct CassiniPlan {
  std::vector<double> start_ns;  // per job, in [0, its period)
  std::vector<LinkShift> links;  // shared link directions, most contended first
  std::vector<std::string> notes;  // loops whose shifts disagree, circles that were cut short
};

// CAPACITY_BPS: per link index (both directions). Jobs sharing no link start at 0.
CassiniPlan PlaceCassini(const std::vector<JobDemand>& jobs, const std::vector<double>& capacity_bps,
                         const CassiniOptions& options = {});

// Bytes above capacity on link direction LINK over CIRCLE_NS (one pass), with
// each job J of JOBS started at STARTS_NS[J]; BINS points.
double LinkExcess(const std::vector<JobDemand>& jobs, const std::vector<uint32_t>& on_link, uint32_t link,
                  double capacity_bps, double circle_ns, const std::vector<double>& starts_ns, uint32_t bins);

}  // namespace dltrace::models

namespace dltrace::models {

// A job of known period and duty cycle, for tests and studies: ENDPOINTS
// endpoints (endpoint e on host e), ITERATIONS iterations each of a COMPUTE_NS
// gap on every endpoint and then one op in which every endpoint sends BYTES to
// the next (a ring shift; two endpoints swap BYTES). Ops alternate compute,
// exchange; op 2i and 2i+1 are iteration i.
Schedule PeriodicExchange(int32_t endpoints, int32_t iterations, uint64_t compute_ns, uint64_t bytes);

}  // namespace dltrace::models
