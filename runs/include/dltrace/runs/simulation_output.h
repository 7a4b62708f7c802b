// SPDX-License-Identifier: GPL-2.0-only
// What a simulation hands back (per job its schedule and per-endpoint
// results, every message, link samples, speed) and the one writer of its
// outputs: per-rank results files, flows.csv, links.csv and the summary.
// Every simulator backend fills SimulationRecords; none writes files itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dltrace/executor/schedule_executor.h"
#include "dltrace/models/job.h"
#include "dltrace/models/schedule.h"
#include "dltrace/models/topology.h"
#include "dltrace/runs/atomic_file.h"
#include "dltrace/runs/results_file.h"
#include "dltrace/runs/run.h"

namespace dltrace::runs {

// One message, as flows.csv lists it. Times are simulated nanoseconds from
// the simulation's start.
struct FlowRecord {
  uint32_t job = 0, op = 0;
  int32_t src = 0, dst = 0;
  uint16_t channel = 0;
  uint64_t bytes = 0;
  bool local = false;
  uint64_t start_ns = 0, end_ns = 0;
};

// Link utilisation samples, as links.csv lists them: per link direction its
// name and rate; per sample its time and the bytes each direction carried
// since the sample before.
struct LinkSamples {
  std::vector<std::string> names;
  std::vector<double> rate_bps;
  std::vector<double> time_s;
  std::vector<std::vector<double>> bytes;  // [sample][direction]
};

// One job of a simulation. The pointers stay the backend's and must outlive the records.
struct SimulatedJob {
  const models::Schedule* schedule = nullptr;
  // The recorded run the summary compares with (RecordedRun), taken when the
  // job was loaded: a backend may free the trace set once it is lowered.
  RunTimes recorded;
  std::string trace, algorithm;
  std::vector<uint32_t> hosts;            // host per endpoint
  uint64_t start_ns = 0;
  std::vector<executor::RankResult> results;  // per endpoint
  // executor::ScheduleHash of the schedule, where the backend took it before
  // freeing what it reads (the flow simulator frees the schedule's dependency
  // lists once its executors hold them); empty: taken from the schedule.
  std::optional<uint64_t> schedule_hash;
};

// One flows.csv row of F with its newline, as printf's
// "%u,%u,%d,%d,%u,%" PRIu64 ",%d,%.9f,%.9f,%" PRIu64 "\n" writes (job, op,
// src, dst, channel, bytes, local, start_ns and end_ns in seconds, their
// difference) byte for byte, without printf: a large run writes hundreds of
// millions of rows. ROW holds kFlowsCsvRowMax bytes; returns the row's length.
constexpr size_t kFlowsCsvRowMax = 160;
size_t FormatFlowsCsvRow(const FlowRecord& f, char* row);

// flows.csv row by row, for a backend that writes its messages as they
// complete instead of holding them (SimulationRecords::flows_written): the
// same header and rows WriteSimulationOutputs writes, through a temporary
// name renamed into place by Commit.
class FlowsCsvWriter {
 public:
  explicit FlowsCsvWriter(std::string path) : out_(std::move(path)) {}
  bool Open(std::string* error);  // writes the header
  void Add(const FlowRecord& f);
  bool Commit(std::string* error);
  uint64_t rows() const { return rows_; }

 private:
  AtomicFile out_;
  uint64_t rows_ = 0;
};

// links.csv sample by sample, the same way (SimulationRecords::links_written).
class LinksCsvWriter {
 public:
  explicit LinksCsvWriter(std::string path) : out_(std::move(path)) {}
  // Writes the header; NAMES and RATE_BPS are the link directions' (as LinkSamples has them).
  bool Open(std::vector<std::string> names, std::vector<double> rate_bps, std::string* error);
  // One sample: its time and the bytes each direction carried since the one before.
  void Add(double time_s, const std::vector<double>& bytes);
  bool Commit(std::string* error);

 private:
  AtomicFile out_;
  std::vector<std::string> names_;
  std::vector<double> rate_bps_;
  double last_time_s_ = 0;
};

struct SimulationRecords {
  std::string source;                // the results files' source: "ns3", "flow"
  std::vector<std::string> header;   // summary lines before the jobs ("# ..." lines)
  std::vector<SimulatedJob> jobs;
  std::vector<FlowRecord> flows;
  // The backend wrote DIR/flows.csv itself as the run went (FlowsCsvWriter):
  // flows is empty and WriteSimulationOutputs leaves that file alone.
  bool flows_written = false;
  LinkSamples links;
  bool links_written = false;  // the same for DIR/links.csv (LinksCsvWriter); links is empty
  std::vector<std::string> network;  // summary lines after the jobs (packet counters)
  // The fabric the run was on and the bytes each of its link directions
  // carried in all ([2i]: link i's a to b): nics.csv and the summary's
  // per-NIC, per-rail and per-plane lines. Null / empty: none.
  std::shared_ptr<const models::TopologyGraph> fabric;
  std::vector<double> link_bytes;
  double simulated_s = 0, wall_s = 0;
  uint64_t events = 0;               // what the backend counts per wall second
  std::string event_unit;            // "packets", "messages"
  long peak_rss_kb = 0;
};

// The messages of a job as its endpoints' step times give them: from the
// send step's start on the sender to the matching receive step's end on the
// receiver, JOB_START_NS added (for backends that do not see messages).
void AppendFlowsFromResults(uint32_t job, const models::Schedule& schedule,
                            const std::vector<executor::RankResult>& results, uint64_t job_start_ns,
                            std::vector<FlowRecord>* flows);

// Job J's results files (source, trace, algorithm and schedule hash filled in).
std::vector<ResultsFile> JobResultsFiles(const SimulationRecords& records, size_t job);
// The same one file at a time, never all held (thousands of endpoints): FN
// gets each in endpoint order; false from FN stops and is returned.
bool ForEachJobResultsFile(const SimulationRecords& records, size_t job,
                           const std::function<bool(const ResultsFile&)>& fn);

// DIR/rank<E>.results.json (one job) or DIR/job<J>/rank<E>.results.json
// (several), DIR/flows.csv and DIR/links.csv, and DIR/nics.csv on a fabric
// with NICs (one row per NIC port: bytes sent and received), each through a
// temporary name.
// DIR must exist.
bool WriteSimulationOutputs(const SimulationRecords& records, const std::string& dir, std::string* error);

// The summary lines of the fabric's load: bytes through NICs and NVLink, per
// rail and per plane, and the imbalance (max/mean) over NICs, rails and planes.
std::vector<std::string> FormatFabricLoad(const SimulationRecords& records);

// The summary: header lines, per job its op kinds and iterations against the
// recorded times and its bytes, the network lines, the fabric's load, then the speed (simulated
// s per wall s, events per wall s, peak memory).
std::string FormatSimulationSummary(const SimulationRecords& records);

// Peak resident memory of this process in KiB (getrusage).
long PeakRssKb();

}  // namespace dltrace::runs
