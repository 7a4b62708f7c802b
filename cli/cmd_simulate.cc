// SPDX-License-Identifier: GPL-2.0-only
// dltrace simulate TRACE: replays a trace set's lowered schedule inside a
// simulator over a chosen topology (one or several jobs). The simulator is
// picked by name from the registry every built backend added itself to
// (dltrace/simulator/simulator.h); its records go through the one writer in
// runs/ (results files, flows.csv, links.csv, the summary). No backend is
// named here.
#include "commands.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>

#include "dltrace/models/mltcp.h"
#include "dltrace/models/placement.h"
#include "dltrace/runs/json.h"
#include "dltrace/runs/simulation_output.h"
#include "dltrace/simulator/simulator.h"

namespace dltrace::cli {

namespace {

// True when DIR already holds results of a run (never overwritten).
bool HoldsResults(const std::string& dir) {
  return access((dir + "/flows.csv").c_str(), F_OK) == 0 ||
         access((dir + "/rank0.results.json").c_str(), F_OK) == 0 ||
         access((dir + "/job0").c_str(), F_OK) == 0;
}

struct SimulateOptions {
  std::string simulator = "ns3";
  models::JobPlacement defaults;  // what each job takes unless its --job spec says otherwise
  std::string trace;
  std::vector<std::string> job_specs;
  std::string plan;  // dltrace place -o: its jobs' specs and topology
  bool topology_given = false;
  double util_ms = 1;
  simulator::SimulationConfig config;
  // Per backend setting given: the backend that declared it (for "goes with").
  std::map<std::string, std::string> setting_owner;
};

}  // namespace

std::vector<std::string> SimulatorBuildLines() {
  simulator::RegisterBuiltInSimulators();
  return simulator::SimulatorBuildLines();
}

namespace {

// Adds the --job specs and the topology of a plan `dltrace place -o` wrote.
bool ReadPlan(SimulateOptions* options, std::string* error) {
  std::ifstream in(options->plan);
  if (!in) {
    *error = options->plan + ": " + std::strerror(errno);
    return false;
  }
  runs::Json plan = runs::Json::parse(in, nullptr, false);
  if (plan.is_discarded() || !plan.is_object() || !plan.contains("jobs") || !plan["jobs"].is_array()) {
    *error = options->plan + ": not a plan written by dltrace place -o";
    return false;
  }
  for (const auto& job : plan["jobs"]) {
    if (!job.is_object() || !job.contains("spec") || !job["spec"].is_string()) {
      *error = options->plan + ": a job without its spec";
      return false;
    }
    options->job_specs.push_back(job["spec"].get<std::string>());
  }
  if (!options->topology_given && plan.contains("topology") && plan["topology"].is_string())
    options->config.topology = plan["topology"].get<std::string>();
  return true;
}

int RunSimulate(SimulateOptions options) {
  const char* self = "simulate";
  std::string error, missing;
  const simulator::SimulatorInfo* info = simulator::FindSimulator(options.simulator, &missing);
  if (!info) return Fail("--simulator " + options.simulator + " is not built: " + missing);
  simulator::SimulationConfig& config = options.config;
  for (const auto& [name, value] : config.settings) {
    (void)value;
    const std::string& owner = options.setting_owner[name];
    if (owner != info->name) return UsageError(self, "--" + name + " goes with --engine " + owner);
  }
  if (!options.plan.empty() && !ReadPlan(&options, &error)) return Fail(error);
  std::vector<std::string>& job_specs = options.job_specs;
  if (options.trace.empty() && job_specs.empty()) return UsageError(self, "missing TRACE (or --job SPEC)");
  if (!options.trace.empty()) job_specs.insert(job_specs.begin(), options.trace);
  for (const auto& spec_text : job_specs) {
    models::JobPlacement job = options.defaults;
    if (!models::ParseJobPlacement(spec_text, &job, &error)) return UsageError(self, error);
    config.jobs.push_back(job);
  }
  for (const auto& job : config.jobs)
    if (access(job.trace.c_str(), F_OK) != 0) return Fail(job.trace + ": " + std::strerror(errno));
  if (config.out_dir.empty()) config.out_dir = FreshDirName("dltrace-simulate-");
  if (HoldsResults(config.out_dir))
    return Fail(config.out_dir + " holds results of an earlier run: they are never overwritten");
  config.util_interval_ns = uint64_t(options.util_ms * 1e6);
  std::unique_ptr<simulator::Simulator> sim = info->make();
  if (!sim->Check(config, &error)) return UsageError(self, error);
  // Everything is checked (traces read, topology, congestion control) before
  // the output directory is made.
  if (!sim->Configure(config, &error)) return Fail(error);
  if (!MakeDirs(config.out_dir, &error)) return Fail(error);
  std::string run_error;
  const bool complete = sim->Run(&run_error);
  if (!sim->WritesOutputs()) return complete ? kExitOk : Fail(run_error);
  const runs::SimulationRecords& records = sim->Records();
  std::cout << runs::FormatSimulationSummary(records);
  if (!runs::WriteSimulationOutputs(records, config.out_dir, &error) || !sim->WriteOwnOutputs(config.out_dir, &error))
    return Fail(error);
  std::cout << "results: " << config.out_dir << " (rank*.results.json"
            << (config.jobs.size() > 1 ? " under job<J>/" : "") << ", flows.csv, links.csv"
            << (runs::FormatFabricLoad(records).empty() ? "" : ", nics.csv");
  for (const auto& name : sim->OwnOutputNames()) std::cout << ", " << name;
  std::cout << ")" << std::endl;
  if (!complete) return Fail(run_error + "; their results say complete: false");
  return kExitOk;
}

// Declares each built backend's own settings; their values go to
// SimulationConfig::settings as (name, value), opaque to this command.
void AddSimulatorSettings(CLI::App* cmd, const std::shared_ptr<SimulateOptions>& o) {
  for (const auto& info : simulator::Simulators()) {
    if (info.settings.empty()) continue;
    CLI::App* group = cmd->add_option_group(info.title + " simulator");
    for (const auto& spec : info.settings) {
      const std::string name = spec.flag.substr(2);
      o->setting_owner[name] = info.name;
      if (spec.kind == simulator::SettingSpec::Kind::kFlag) {
        group->add_flag_callback(spec.flag, [o, name] { o->config.settings.emplace_back(name, "1"); }, spec.help);
        continue;
      }
      CLI::Option* opt;
      if (spec.repeatable) {
        opt = group->add_option_function<std::vector<std::string>>(
            spec.flag,
            [o, name](const std::vector<std::string>& values) {
              for (const auto& v : values) o->config.settings.emplace_back(name, v);
            },
            spec.help);
        opt->allow_extra_args(false);
      } else if (spec.kind == simulator::SettingSpec::Kind::kNumber) {
        opt = group->add_option_function<double>(
            spec.flag, [o, name](double) {}, spec.help);
        // The text as given (the backend parses it), once CLI11 checked it is a number in bounds.
        opt->each([o, name](const std::string& v) { o->config.settings.emplace_back(name, v); });
      } else {
        opt = group->add_option_function<std::string>(
            spec.flag, [o, name](const std::string& v) { o->config.settings.emplace_back(name, v); }, spec.help);
      }
      using Bound = simulator::SettingSpec::Bound;
      if (spec.bound == Bound::kPositive) opt->check(Positive());
      if (spec.bound == Bound::kNonNegative) opt->check(NonNegative());
      if (spec.bound == Bound::kRange) opt->check(CLI::Range(spec.min, spec.max));
      if (!spec.default_text.empty()) opt->default_str(spec.default_text);
      if (!spec.type_name.empty()) opt->type_name(spec.type_name);
    }
  }
}

}  // namespace

Command AddSimulateCommand(CLI::App& dltrace) {
  simulator::RegisterBuiltInSimulators();
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* cmd = dltrace.add_subcommand(
      "simulate", "simulate a trace set's traffic over a topology: ns-3 (packet level) or SimGrid (flow level)");
  cmd->add_option("TRACE", o->trace, "a trace set (or give --job SPEC)");
  std::string which;
  for (const auto& info : simulator::Simulators()) which += (which.empty() ? "" : "; ") + info.name + ": " + info.description;
  const std::vector<std::string> names = simulator::SimulatorNames();
  cmd->add_option("--engine,--simulator", o->simulator,
                  "the simulator (--simulator is the same option): " + (which.empty() ? "none built" : which))
      ->check(CLI::IsMember(names))
      ->capture_default_str();
  cmd->add_option("--transport", o->config.transport,
                  "the transport the simulator models: tcp, rdma (ns-3: RoCEv2 queue pairs over PFC switches; "
                  "--cc then picks none, dcqcn (default), hpcc or timely), or uet (ns-3: the Ultra Ethernet "
                  "transport, packet spraying and trimming without PFC; --cc nscc (default) or rccc)")
      ->check(CLI::IsMember({"tcp", "rdma", "uet"}))
      ->capture_default_str();
  cmd->add_option("--job", o->job_specs,
                  "a job: TRACE[:hosts=0-3|trace][:gpus-per-host=N][:start=0.5s][:algo=A][:channels=C][:iterations=N]"
                  "[:priority=P][:cross-nic=0|1|2][:pxn=0|1][:qps=N][:qp-split=0|1]; repeat for several jobs on one network (default hosts: "
                  "the next free ones, as many ranks per host as it has GPUs)")
      ->type_name("SPEC")
      ->default_str("")
      ->allow_extra_args(false);
  cmd->add_option("--topo", o->config.topology,
                  "star, dumbbell, ring, leaf-spine, fat-tree, rail-optimized, dcn, a preset (spectrum-x, hpn, dcn) "
                  "or a fabric file (FILE.json or FILE.yaml), with optional parameters KIND[:rate=100Gbps,delay=1us,...]; "
                  "leaf-spine: leaves, spines, hosts-per-leaf, oversub; fat-tree: k; star/dumbbell/ring: hosts; "
                  "ring: switches; dumbbell/ring: bottleneck; rail-optimized/dcn: hosts, hosts-per-leaf, spines, "
                  "oversub, planes; every kind: gpus, domain, ports, nvlink, nvlink-delay, seed, fail=NAME, "
                  "degrade=NAME@FRACTION (sized to the endpoints)")
      ->type_name("SPEC")
      ->capture_default_str()
      ->each([o](const std::string&) { o->topology_given = true; });
  cmd->add_option("--plan", o->plan,
                  "the jobs (and, unless --topo says otherwise, the topology) of a plan dltrace place -o wrote")
      ->type_name("PLAN.json");
  AddLowerOptions(cmd, &o->defaults.lower);
  cmd->add_option("--iterations", o->defaults.iterations, "simulate only the first N iterations")
      ->check(Positive())
      ->default_str("");
  cmd->add_option("--time-scale", o->defaults.time_scale, "multiply compute gaps (0 skips them)")
      ->check(NonNegative());
  cmd->add_option("--util-ms", o->util_ms, "link utilisation sample period in ms (0: off)")
      ->check(NonNegative())
      ->capture_default_str();
  cmd->add_option("--cc", o->config.congestion_control,
                  "ns-3: TCP congestion control (TcpNewReno default, TcpDctcp, TcpBbr, TcpLinuxReno, ..., short "
                  "names dctcp, bbr, and MLTCP's mltcp-newreno, mltcp-dctcp); flow simulator: mltcp (bandwidth shares "
                  "weighted by MLTCP's F; default max-min)");
  cmd->add_option("--mltcp-slope", o->config.mltcp.slope, "MLTCP: S of F(bytes_ratio) = S * bytes_ratio + I")
      ->check(NonNegative())
      ->capture_default_str();
  cmd->add_option("--mltcp-intercept", o->config.mltcp.intercept, "MLTCP: I of F(bytes_ratio) = S * bytes_ratio + I")
      ->check(Positive())
      ->capture_default_str();
  AddSimulatorSettings(cmd, o);
  AddOutputDirOption(cmd, &o->config.out_dir,
                     "results: rank<E>.results.json (DIR/job<J>/ for several jobs), flows.csv, links.csv, "
                     "nics.csv on fabrics with NICs (ns-3 also flowmon.xml, pcap/)",
                     "dltrace-simulate-");
  cmd->footer("Exit status: 0 every endpoint finished, 1 error (bad trace, unknown --cc, a stalled run, a simulator "
              "not built), 2 usage.");
  return {cmd, [o](const Args&) { return RunSimulate(*o); }};
}

}  // namespace dltrace::cli
