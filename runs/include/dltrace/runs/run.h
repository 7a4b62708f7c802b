// SPDX-License-Identifier: GPL-2.0-only
// Runs of one job in one shape: the recorded run itself (from the trace set),
// socket replays, ns-3 simulations and any later executor (from their results
// files or, in memory, their results), each as times per schedule op and per iteration.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dltrace/models/iteration_time.h"
#include "dltrace/models/job.h"
#include "dltrace/models/merge.h"
#include "dltrace/models/schedule.h"
#include "dltrace/runs/results_file.h"

namespace dltrace::runs {

struct OpTime {
  std::string kind;        // recorded call, e.g. "ncclAllReduce"
  std::string collective;  // formats::CollectiveName, e.g. "all-reduce"
  int32_t iteration = -1;
  uint64_t bytes = 0;      // nccl-tests "size"
  double ns = 0;           // the longest endpoint's time; 0 when not seen
  bool seen = false;
};

struct RunTimes {
  std::string path;
  std::string source;     // "recorded", "replay", "ns3"
  std::string algorithm;
  std::string trace;      // the trace set the run replayed (results files say)
  uint64_t schedule_hash = 0;
  int32_t endpoints = 0;
  bool complete = true;
  std::string error;      // when not complete: what a results file said
  std::vector<OpTime> ops;  // index = schedule op
  // Per iteration, as models/iteration_time.h defines it: they add up to the
  // job's time up to the last iteration's end.
  std::vector<double> iteration_ns;
  models::IterationClock iteration_clock;  // executed runs: every endpoint's iteration ends
  // One-off costs before the iterations proper (recorded runs: RecordedSetupNs),
  // taken out of iteration 0: set-up plus the iterations add up to the job's time.
  double setup_ns = 0;
  int32_t setup_ops = 0;  // ops of iteration 0 that made the first use of a peer pair
  // Totals over the endpoints' results files (executed runs only).
  uint64_t bytes_sent = 0, bytes_received = 0, bytes_scheduled_recv = 0, bytes_local_received = 0;
  uint64_t bytes_reduced = 0;  // reduce receives' bytes the host added into its own (socket replay)
  // Flow completion times from DIR/flows.csv (ns-3 runs), when it has fct_ns.
  std::vector<double> fct_ns;
  std::string fct_note;   // why there are none, when there are none
  // RDMA runs (`simulate --transport rdma`): occupancy over time of the
  // switch egress ports that ever queued (DIR/queues.csv), and seconds each
  // port and priority was paused by PFC (DIR/pfc.csv).
  struct PortQueue {
    std::string port;
    std::vector<double> t_s, bytes;
    double peak = 0;
  };
  std::vector<PortQueue> queues;
  std::vector<std::pair<std::string, double>> paused_s;  // "port prio P", seconds
};

// Recorded duration of each schedule op (the longest member's, on the GPU
// when timed there), and of each iteration (models/iteration_time.h: from the
// previous iteration's last op ending on any rank, the first from the
// earliest rank's start, so compute gaps count as executors count them).
struct RecordedTimes {
  std::vector<double> op_ns;         // per schedule op; 0 when unknown
  std::vector<double> iteration_ns;  // per iteration; iteration 0 without the set-up
  double setup_ns = 0;               // RecordedSetupNs, at most iteration 0's time
  int32_t setup_ops = 0;
};

// Set-up in a recording: MPI and NCCL libraries connect two ranks when they
// first talk, so an op of iteration 0 whose lowered steps make the first use
// of a peer pair (either direction) carries connection set-up. Its set-up is
// what its own time (from its last member entering to its last member
// leaving, so waiting for late ranks does not count) exceeds the median own
// time of later ops of the same call, communicator and size; without such
// ops, the nearest size of that call on that communicator scaled by bytes;
// without those, its whole own time. The sum over those ops; *OPS counts them.
double RecordedSetupNs(const models::MergedTrace& merged, const models::Schedule& schedule, int32_t* ops);
RecordedTimes ComputeRecordedTimes(const models::MergedTrace& merged, const models::Schedule& schedule);

// The recorded run of SCHEDULE lowered from MERGED (null: a schedule built in
// code, whose recorded times are unknown and 0).
RunTimes RecordedRun(const models::Schedule& schedule, const models::MergedTrace* merged);
// The recorded run of JOB (marked incomplete when a rank file was missing or torn).
RunTimes RecordedRun(const models::Job& job);

// Adds one endpoint's results file to RUN: per op and iteration the longest
// endpoint's time, byte totals; the first file sets source, algorithm, trace,
// hash and endpoints. False (with *error naming WHERE) when F is from another run.
bool AddResults(const ResultsFile& f, const std::string& where, RunTimes* run, std::string* error);

// A run from the files of all its endpoints, held in memory (one run's files agree).
RunTimes RunFromResults(const std::vector<ResultsFile>& files);

// A directory holding rank*.results.json files.
bool IsResultsDir(const std::string& path);
// Every rankN.results.json in DIR, and flow completion times from DIR/flows.csv.
bool LoadResultsRun(const std::string& dir, RunTimes* run, std::string* error);

}  // namespace dltrace::runs
