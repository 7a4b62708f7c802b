// SPDX-License-Identifier: GPL-2.0-only
// The flow simulator behind the one simulator interface: `dltrace simulate
// --simulator flow`. Takes SimulationConfig, runs FlowSimulation, hands back
// its records.
#include "dltrace/flow/flow_simulation.h"
#include "dltrace/simulator/simulator.h"

namespace dltrace::simulator {

namespace {

class FlowSimulator final : public Simulator {
 public:
  bool Check(const SimulationConfig& config, std::string* error) override {
    if (config.transport != "tcp") {
      *error = "--transport " + config.transport + ": the flow simulator models tcp only";
      return false;
    }
    // No TCP windows here: --cc takes only MLTCP (as mltcp, mltcp-newreno or
    // mltcp-dctcp: bandwidth shares weighted by F).
    const std::string& cc = config.congestion_control;
    if (!(cc.empty() || cc == "mltcp" || cc == "mltcp-newreno" || cc == "mltcp-dctcp")) {
      *error = "--cc " + cc +
               ": the flow simulator shares bandwidth max-min; its only --cc is mltcp "
               "(also spelt mltcp-newreno, mltcp-dctcp)";
      return false;
    }
    return true;
  }

  bool Configure(const SimulationConfig& config, std::string* error) override {
    flow::FlowConfig flow;
    flow.topology = config.topology;
    flow.jobs = config.jobs;
    flow.simgrid_cfg = SettingValues(config, "cfg");
    flow.util_interval_ns = config.util_interval_ns;
    flow.progress = config.progress;
    flow.stream_dir = config.out_dir;  // made before Run
    flow.mltcp = !config.congestion_control.empty();
    flow.mltcp_function = config.mltcp;
    flow.coalesce = SettingValues(config, "no-coalesce").empty();
    const std::vector<std::string> send_buffer = SettingValues(config, "send-buffer");
    if (!send_buffer.empty()) flow.send_buffer = uint64_t(std::stod(send_buffer.back()));  // checked by the command line
    const std::vector<std::string> sharing = SettingValues(config, "sharing");
    if (!sharing.empty() && sharing.back() != "equal" && sharing.back() != "latency") {
      *error = "--sharing " + sharing.back() + ": the flow simulator's --sharing is equal or latency";
      return false;
    }
    flow.equal_shares = sharing.empty() || sharing.back() == "equal";
    const std::vector<std::string> solver = SettingValues(config, "solver");
    if (!solver.empty() && solver.back() == "incremental") {
      flow.solver = flow::FlowConfig::Solver::kIncremental;
    } else if (!solver.empty() && solver.back() != "simgrid") {
      *error = "--solver " + solver.back() + ": the flow simulator's solvers are simgrid and incremental";
      return false;
    }
    return simulation_.Setup(flow, error);
  }

  bool Run(std::string* error) override { return simulation_.Run(error); }
  const runs::SimulationRecords& Records() const override { return simulation_.Records(); }

 private:
  flow::FlowSimulation simulation_;
};

}  // namespace

void RegisterFlow() {
  SimulatorInfo info;
  info.name = "flow";
  info.title = "SimGrid";
  info.description =
      "flow-level SimGrid model (bandwidth sharing; thousands of ranks)";
  info.build = "SimGrid " + flow::SimGridVersion();
  SettingSpec cfg = Repeatable(Setting(
      "--cfg",
      "flow simulator: a SimGrid setting KEY:VALUE, e.g. network/bandwidth-factor:0.97 (repeatable; overrides "
      "dltrace's calibrated defaults)"));
  cfg.type_name = "KEY:VALUE";
  info.settings.push_back(cfg);
  info.settings.push_back(Setting(
      "--no-coalesce",
      "flow simulator: one SimGrid flow per message (default: equal messages that start together between the same "
      "two hosts go as one flow carrying their bytes and weight, which ends when each would have; faster at scale)",
      SettingSpec::Kind::kFlag));
  SettingSpec solver = Setting(
      "--solver",
      "flow simulator: who shares the bandwidth: SimGrid's max-min solver, or dltrace's own incremental one (the "
      "same sharing, re-solved only where a flow started or ended; much faster at thousands of ranks)");
  solver.type_name = "simgrid|incremental";
  solver.default_text = "simgrid";
  info.settings.push_back(solver);
  SettingSpec send_buffer = Number(
      "--send-buffer",
      "flow simulator: each connection's send buffer: a send is done once what has not arrived of it fits, as a "
      "socket's send returns once the kernel holds its bytes (ns-3's --sndbuf has the same default); 0: a send is "
      "done when its last byte arrived",
      SettingSpec::Bound::kNonNegative, std::to_string(models::kTcpSendBufferBytes));
  send_buffer.type_name = "BYTES";
  info.settings.push_back(send_buffer);
  SettingSpec sharing = Setting(
      "--sharing",
      "flow simulator: how flows share a link once their latency is paid: equal (max-min, as TCP connections whose "
      "round trips are mostly the queue they share) or latency (SimGrid's CM02/LV08 weighting: a share goes with 1 / "
      "(route latency + weight-S / bandwidth over its links), see --cfg network/weight-S)");
  sharing.type_name = "equal|latency";
  sharing.default_text = "equal";
  info.settings.push_back(sharing);
  info.make = [] { return std::make_unique<FlowSimulator>(); };
  RegisterSimulator(std::move(info));
}

}  // namespace dltrace::simulator
