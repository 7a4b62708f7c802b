// The flow-level simulator: the schedule executor over SimGrid's flow-level TCP
// model, on the same topologies, jobs and outputs as the ns-3 module, for
// runs of hundreds to thousands of ranks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dltrace/models/job.h"
#include "dltrace/models/mltcp.h"
#include "dltrace/models/placement.h"
#include "dltrace/models/schedule.h"
#include "dltrace/models/topology.h"
#include "dltrace/executor/schedule_executor.h"
#include "dltrace/runs/results_file.h"

namespace dltrace::flow {

// SimGrid's network model settings dltrace starts from (calibrated against
// the ns-3 module: see README "Flow-level simulation"); --cfg options given
// by the user come after them and win.
const std::vector<std::string>& DefaultSimGridConfig();

struct FlowConfig {
  std::string topology = "star";         // models::ParseTopology syntax
  std::vector<models::JobPlacement> jobs;
  std::vector<std::string> simgrid_cfg;  // "network/latency-factor:1", ... (as --cfg= takes them)
  uint64_t util_interval_ns = 1000000;   // links.csv sample period (0: off)
  bool progress = true;                  // progress lines on stderr for long runs
  // MLTCP (README "MLTCP"): instead of plain max-min sharing, each message's
  // share of the links it crosses is weighted by F(bytes_ratio), the fraction
  // of its sender's current-iteration bytes delivered so far. Each message
  // goes in mltcp_chunks pieces (at least kMltcpMinChunk bytes); each piece is
  // weighted by F at its start, as round(kMltcpStreamsPerF * F) parallel
  // SimGrid communications (max-min gives each the same share).
  bool mltcp = false;
  models::MltcpFunction mltcp_function;
  uint32_t mltcp_chunks = 16;
};

constexpr int kMltcpStreamsPerF = 4;         // weight resolution: F in steps of 1/4
constexpr uint64_t kMltcpMinChunk = 1 << 16;  // bytes

// The number of parallel communications that carry a piece of weight F.
int MltcpStreams(double f);

// One message as flows.csv lists it.
struct FlowRecord {
  uint32_t job = 0, op = 0;
  int32_t src = 0, dst = 0;
  uint16_t channel = 0;
  uint64_t bytes = 0;
  bool local = false;
  double start_s = 0, end_s = 0;  // simulated seconds from the simulation's start
};

class FlowSimulation {
 public:
  FlowSimulation();
  ~FlowSimulation();
  FlowSimulation(const FlowSimulation&) = delete;
  FlowSimulation& operator=(const FlowSimulation&) = delete;

  // Loads and lowers every job, places them, builds the platform. One per
  // process (SimGrid's engine is a singleton).
  bool Setup(const FlowConfig& config, std::string* error);
  // Runs until every job finished; false (with *error) when a job stalled.
  bool Run(std::string* error);
  // rank<E>.results.json (source "flow"; DIR/job<J>/ for several jobs), flows.csv, links.csv.
  bool WriteOutputs(const std::string& dir, std::string* error) const;
  // Per job the run against its recording, bytes, then speed and memory.
  std::string Summary() const;

  // Job J's results as its results files have them (source "flow").
  std::vector<runs::ResultsFile> ResultsFiles(size_t job) const;
  // Every message, as flows.csv lists it.
  const std::vector<FlowRecord>& flows() const;

  struct State;  // the SimGrid side, in the .cc

 private:
  std::unique_ptr<State> state_;
};

}  // namespace dltrace::flow
