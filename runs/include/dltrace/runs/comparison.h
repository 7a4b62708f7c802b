// SPDX-License-Identifier: GPL-2.0-only
// Runs of one job against each other: per op kind and per iteration, each run
// against the first (the baseline). The one builder of these rows: dltrace
// compare prints them, replay and simulate print a run against its recording
// from them, and the report draws from the same runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dltrace/models/job.h"
#include "dltrace/runs/run.h"

namespace dltrace::runs {

// (VALUE - BASE) / BASE in percent; NaN when BASE is not positive.
double Percent(double value, double base);

struct KindRow {
  std::string kind;
  size_t run = 0;  // index into the runs compared
  uint64_t ops = 0, bytes = 0;
  double ns = 0;
  double diff_percent = 0;  // against the baseline's ns of this kind
  double busbw_gbps = 0;    // nccl-tests bus bandwidth over this kind's time; NaN when no time
};

struct Comparison {
  std::vector<std::string> labels;  // "recorded", "replay:ring", "ns3:ps", made unique
  size_t iterations = 0;            // iterations every run has
  std::vector<KindRow> kinds;       // by kind name, then run order
  // Per run: iteration times over the common iterations, and their mean from
  // iteration mean_from on (iteration 0 holds start-up when there are more).
  std::vector<std::vector<double>> iteration_ns;
  size_t mean_from = 0;
  std::vector<double> mean_ns;
  std::vector<double> setup_ns;  // per run (RunTimes::setup_ns)
};

// Compares RUNS (the first is the baseline) over the ops every run saw in the
// common iterations. JOB, when given, supplies communicator sizes for bus bandwidth.
Comparison CompareRuns(const std::vector<RunTimes>& runs, const models::Job* job);

// The table a replay or simulation prints: per op kind and per iteration,
// RECORDED (runs[0] of COMPARISON) against the run (runs[1]) in a column named COLUMN
// ("replayed_ms", "simulated_ms").
std::string FormatAgainstRecorded(const Comparison& comparison, const std::string& column);
// The same table for RUN of SCHEDULE against its recording (RECORDED: the job
// loaded from the trace set; null for a schedule built in code, recorded times 0).
std::string FormatAgainstRecorded(const models::Schedule& schedule, const models::Job* recorded, const RunTimes& run,
                                  const std::string& column);
// "bytes: sent S, received R, scheduled C (all received)" (or "MISSING BYTES").
std::string FormatBytes(const RunTimes& run);

}  // namespace dltrace::runs
