// SPDX-License-Identifier: GPL-2.0-only
// The flow-level simulator: the schedule executor over SimGrid's flow-level TCP
// model, on the same topologies, jobs and outputs as the ns-3 module, for
// runs of hundreds to thousands of ranks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dltrace/flow/fluid_network.h"
#include "dltrace/models/lanes.h"
#include "dltrace/models/mltcp.h"
#include "dltrace/models/placement.h"
#include "dltrace/runs/simulation_output.h"

namespace dltrace::flow {

// SimGrid's network model settings dltrace starts from (calibrated against
// the ns-3 module: see README "Flow-level simulation"), given to
// simgrid::s4u::Engine::set_config; --cfg options given by the user come
// after them and win.
const std::vector<std::string>& DefaultSimGridConfig();

// The SimGrid version this was built against, "3.32.0".
std::string SimGridVersion();

struct FlowConfig {
  std::string topology = "star";         // models::ParseTopology syntax
  std::vector<models::JobPlacement> jobs;
  std::vector<std::string> simgrid_cfg;  // "network/latency-factor:1", ... (as --cfg= takes them)
  uint64_t util_interval_ns = 1000000;   // links.csv sample period (0: off)
  bool progress = true;                  // progress lines on stderr for long runs
  // Non-empty: DIR/flows.csv and DIR/links.csv are written as the run goes
  // (messages as they complete, link samples as they are taken; DIR exists by
  // Run), not held: Records().flows_written and links_written say so. Empty:
  // they are held in Records().flows and links.
  std::string stream_dir;
  // MLTCP (README "MLTCP"): instead of plain max-min sharing, each message's
  // share of the links it crosses is weighted by F(bytes_ratio), the fraction
  // of its sender's current-iteration bytes delivered so far. Each message
  // goes in mltcp_chunks pieces (at least kMltcpMinChunk bytes); each piece is
  // weighted by F at its start, as round(kMltcpStreamsPerF * F) parallel
  // SimGrid communications (max-min gives each the same share).
  bool mltcp = false;
  models::MltcpFunction mltcp_function;
  uint32_t mltcp_chunks = 16;
  // Messages of one size that start at the same simulated instant between the
  // same two SimGrid hosts (so on one route: the 8 ranks of a host in a
  // data-parallel ring) go as one SimGrid communication that carries their
  // bytes with their weight: max-min gives k equal flows on one route the
  // same rate r each, and one flow whose sharing penalty is divided by k (and
  // its bound multiplied) rate k*r, so each ends when it would have. The
  // solver sees one flow instead of k (README "Scale"). Off: one
  // communication per message. Not with MLTCP, which weights its own pieces.
  bool coalesce = true;
  // Who shares the bandwidth: SimGrid's solver (kSimGrid), or dltrace's own
  // FluidNetwork (kIncremental: the same max-min sharing, CM02's and LV08's
  // penalties and bounds, re-solved only where something changed; much
  // faster at thousands of ranks, README "Scale"). The incremental solver
  // takes the network/ settings of simgrid_cfg it models (FluidParamsFrom),
  // and not MLTCP.
  enum class Solver { kSimGrid, kIncremental };
  Solver solver = Solver::kSimGrid;
  // Each connection's send buffer in bytes: a send is done (its step
  // completes on the sender) once what has not arrived of it fits the
  // buffer, as a socket's send returns once the kernel holds the bytes
  // (ns-3's TCP transport and the socket replayer): a message up to this
  // size is done as it starts, a larger one when all but its last
  // send_buffer bytes arrived. 0: a send is done when its last byte arrived.
  uint64_t send_buffer = models::kTcpSendBufferBytes;
  // Flows that share a link get equal shares once their latency is paid
  // (max-min with penalty 1), as TCP connections in a data centre do, whose
  // round trips are mostly the queue they share (docs: explanation/flow-model).
  // False: SimGrid's CM02/LV08 weighting, each flow's share going with 1 /
  // (its route's latency + weight-S / bandwidth over its links).
  bool equal_shares = true;
};

// The incremental solver's parameters from DefaultSimGridConfig and then
// CFG ("KEY:VALUE", as --cfg takes them): network/bandwidth-factor,
// latency-factor, weight-S, TCP-gamma, model (LV08 or CM02: weight-S's
// default) and crosstraffic (0 only). False, with *error naming the
// setting, for anything else.
bool FluidParamsFrom(const std::vector<std::string>& cfg, FluidParams* params, std::string* error);

constexpr int kMltcpStreamsPerF = 4;         // weight resolution: F in steps of 1/4
constexpr uint64_t kMltcpMinChunk = 1 << 16;  // bytes

// The number of parallel communications that carry a piece of weight F.
int MltcpStreams(double f);

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
  // What the run produced (source "flow"), for runs::WriteSimulationOutputs
  // and the summary; valid once Run returned.
  const runs::SimulationRecords& Records() const;
  // Every message, as flows.csv lists it (empty when written to flows_path).
  const std::vector<runs::FlowRecord>& flows() const;
  // Messages that went in another's SimGrid communication (FlowConfig::coalesce).
  uint64_t messages_coalesced() const;

  struct State;  // the SimGrid side, in the .cc

 private:
  std::unique_ptr<State> state_;
};

}  // namespace dltrace::flow
