// Runs of one job side by side: the recorded run itself, socket replays and
// ns-3 simulations, each as times per schedule op and per iteration.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dltrace/views/job.h"

namespace dltrace::views {

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
  std::vector<double> iteration_ns;
  // Flow completion times from DIR/flows.csv (ns-3 runs), when it has fct_ns.
  std::vector<double> fct_ns;
  std::string fct_note;   // why there are none, when there are none
};

// A directory holding rank*.results.json files.
bool IsResultsDir(const std::string& path);

// The recorded run of JOB (its schedule lowered as recorded): per-op and
// per-iteration times as replay::ComputeRecordedTimes defines them.
RunTimes RecordedRun(const Job& job);

// Every rankN.results.json in DIR: per op and iteration the longest endpoint's time.
bool LoadResultsRun(const std::string& dir, RunTimes* run, std::string* error);

}  // namespace dltrace::views
