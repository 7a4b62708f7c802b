// dltrace simulate TRACE: replays a trace set's lowered schedule inside a
// simulator over a chosen topology (one or several jobs): ns-3 at packet
// level (TCP variants, queues, ECN), or the flow-level engine on SimGrid for
// cluster scale. Both write results in the socket replayer's format plus
// flows.csv and links.csv, and print simulated against recorded times.
#include "commands.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>

#include "dltrace/models/placement.h"
#include "dltrace/runs/json.h"
#include "dltrace/models/mltcp.h"
#ifdef DLTRACE_HAVE_NS3
#include "ns3/config.h"
#include "ns3/dltrace-scenario.h"
#include "ns3/double.h"
#endif
#ifdef DLTRACE_HAVE_FLOW
#include "dltrace/flow/flow_simulation.h"
#endif

namespace dltrace::cli {

namespace {

// True when DIR already holds results of a run (never overwritten).
bool HoldsResults(const std::string& dir) {
  return access((dir + "/flows.csv").c_str(), F_OK) == 0 ||
         access((dir + "/rank0.results.json").c_str(), F_OK) == 0 ||
         access((dir + "/job0").c_str(), F_OK) == 0;
}

struct SimulateOptions {
  std::string engine = "ns3";
  models::JobPlacement defaults;  // what each job takes unless its --job spec says otherwise
  std::string trace;
  std::vector<std::string> job_specs;
  std::string plan;  // dltrace place -o: its jobs' specs and topology
  std::string topology = "star";
  bool topology_given = false;
  double util_ms = 1;
  std::string out_dir;
  std::vector<std::string> simgrid_cfg;
  std::string cc;                  // --cc: an ns-3 congestion control, or mltcp for the flow engine
  models::MltcpFunction mltcp;     // --mltcp-slope, --mltcp-intercept
#ifdef DLTRACE_HAVE_NS3
  ns3::DltraceScenarioConfig config;
  bool pcap = false;
#endif
};

#ifdef DLTRACE_HAVE_NS3
int RunNs3(SimulateOptions& options, const std::vector<models::JobPlacement>& jobs) {
  ns3::DltraceScenarioConfig& config = options.config;
  if (config.transport == "rdma") {
    if (!options.cc.empty()) config.rdmaCongestionControl = options.cc;
  } else if (!options.cc.empty()) {
    config.congestionControl = options.cc;
  }
  for (const char* type : {"ns3::TcpMltcpNewReno", "ns3::TcpMltcpDctcp"}) {
    ns3::Config::SetDefault(std::string(type) + "::Slope", ns3::DoubleValue(options.mltcp.slope));
    ns3::Config::SetDefault(std::string(type) + "::Intercept", ns3::DoubleValue(options.mltcp.intercept));
  }
  config.topology = options.topology;
  config.utilInterval = ns3::NanoSeconds(int64_t(options.util_ms * 1e6));
  for (const auto& job : jobs) config.jobs.push_back(ns3::DltraceJobSpec::FromPlacement(job));
  const std::string& out_dir = options.out_dir;
  const bool pcap = options.pcap;
  std::string error;
  // Everything is checked (traces read, topology, congestion control) before
  // the output directory is made.
  if (pcap) config.pcapPrefix = out_dir + "/pcap/";
  ns3::DltraceScenario scenario;
  if (!scenario.Setup(config, &error)) return Fail(error);
  if (!MakeDirs(out_dir, &error) || (pcap && !MakeDirs(out_dir + "/pcap", &error))) return Fail(error);
  scenario.Run();
  scenario.PrintSummary(std::cout);
  if (!scenario.WriteOutputs(out_dir, &error)) return Fail(error);
  const bool rdma = config.transport == "rdma";
  std::cout << "results: " << out_dir << " (rank*.results.json" << (config.jobs.size() > 1 ? " under job<J>/" : "")
            << ", flows.csv, links.csv" << (config.flowMonitor && !rdma ? ", flowmon.xml" : "")
            << (rdma ? ", queues.csv, pfc.csv, qps.csv, messages.csv" : "") << (pcap ? ", pcap/" : "")
            << ")" << std::endl;
  if (!scenario.AllJobsComplete()) return Fail("some endpoints did not finish; their results say complete: false");
  return kExitOk;
}
#endif

#ifdef DLTRACE_HAVE_FLOW
int RunFlow(const SimulateOptions& options, const std::vector<models::JobPlacement>& jobs) {
  flow::FlowConfig config;
  config.topology = options.topology;
  config.jobs = jobs;
  config.simgrid_cfg = options.simgrid_cfg;
  config.util_interval_ns = uint64_t(options.util_ms * 1e6);
  config.mltcp = !options.cc.empty();  // checked by FlowSharing: mltcp or nothing
  config.mltcp_function = options.mltcp;
  std::string error;
  flow::FlowSimulation simulation;
  if (!simulation.Setup(config, &error)) return Fail(error);
  if (!MakeDirs(options.out_dir, &error)) return Fail(error);
  const bool complete = simulation.Run(&error);
  std::cout << simulation.Summary();
  std::string write_error;
  if (!simulation.WriteOutputs(options.out_dir, &write_error)) return Fail(write_error);
  std::cout << "results: " << options.out_dir << " (rank*.results.json" << (jobs.size() > 1 ? " under job<J>/" : "")
            << ", flows.csv, links.csv)" << std::endl;
  if (!complete) return Fail(error + "; their results say complete: false");
  return kExitOk;
}
#endif

}  // namespace

std::string Ns3BuildDescription() {
#ifdef DLTRACE_HAVE_NS3
  return ns3::DltraceNs3Build();
#else
  return "not built (ns-3 not found)";
#endif
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
    options->topology = plan["topology"].get<std::string>();
  return true;
}

// The flow engine has no TCP windows: --cc there takes only MLTCP (as
// mltcp, mltcp-newreno or mltcp-dctcp: bandwidth shares weighted by F).
bool FlowSharingKnown(const std::string& cc) {
  return cc.empty() || cc == "mltcp" || cc == "mltcp-newreno" || cc == "mltcp-dctcp";
}

int RunSimulate(SimulateOptions options) {
  const char* self = "simulate";
#ifndef DLTRACE_HAVE_FLOW
  if (options.engine == "flow")
    return Fail("--engine flow is not built: SimGrid not found (apt-get install libsimgrid-dev and rebuild)");
#endif
#ifndef DLTRACE_HAVE_NS3
  if (options.engine == "ns3")
    return Fail("--engine ns3 is not built: ns-3 not found (apt-get install libns3-dev libgsl-dev ns3 and rebuild)");
#endif
  std::string error;
  if (!options.plan.empty() && !ReadPlan(&options, &error)) return Fail(error);
  std::vector<std::string>& job_specs = options.job_specs;
  if (options.trace.empty() && job_specs.empty()) return UsageError(self, "missing TRACE (or --job SPEC)");
  if (!options.trace.empty()) job_specs.insert(job_specs.begin(), options.trace);
  std::vector<models::JobPlacement> jobs;
  for (const auto& spec_text : job_specs) {
    models::JobPlacement job = options.defaults;
    if (!models::ParseJobPlacement(spec_text, &job, &error)) return UsageError(self, error);
    jobs.push_back(job);
  }
  for (const auto& job : jobs)
    if (access(job.trace.c_str(), F_OK) != 0) return Fail(job.trace + ": " + std::strerror(errno));
  if (options.out_dir.empty()) options.out_dir = FreshDirName("dltrace-simulate-");
  if (HoldsResults(options.out_dir))
    return Fail(options.out_dir + " holds results of an earlier run: they are never overwritten");
  if (options.engine == "flow" && !FlowSharingKnown(options.cc))
    return UsageError(self, "--cc " + options.cc +
                                ": the flow engine shares bandwidth max-min; its only --cc is mltcp "
                                "(also spelt mltcp-newreno, mltcp-dctcp)");
#ifdef DLTRACE_HAVE_FLOW
  if (options.engine == "flow") return RunFlow(options, jobs);
#endif
  if (!options.simgrid_cfg.empty()) return UsageError(self, "--cfg goes with --engine flow (SimGrid settings)");
#ifdef DLTRACE_HAVE_NS3
  return RunNs3(options, jobs);
#else
  return kExitError;  // unreachable: an engine that is not built was refused above
#endif
}

}  // namespace

Command AddSimulateCommand(CLI::App& dltrace) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* cmd = dltrace.add_subcommand(
      "simulate", "simulate a trace set's traffic over a topology: ns-3 (packet level) or SimGrid (flow level)");
  cmd->add_option("TRACE", o->trace, "a trace set (or give --job SPEC)");
  cmd->add_option("--engine", o->engine,
                  "ns3: packet-level ns-3 TCP (congestion control, queues, ECN; tens of hosts); flow: flow-level "
                  "SimGrid model (bandwidth sharing; thousands of ranks)")
      ->check(CLI::IsMember({"ns3", "flow"}))
      ->capture_default_str();
  cmd->add_option("--job", o->job_specs,
                  "a job: TRACE[:hosts=0-3][:start=0.5s][:algo=A][:channels=C][:iterations=N]; repeat for several "
                  "jobs on one network (default hosts: the next free ones)")
      ->type_name("SPEC")
      ->default_str("")
      ->allow_extra_args(false);
  cmd->add_option("--topo", o->topology,
                  "star, dumbbell, ring, leaf-spine or fat-tree, with optional parameters "
                  "KIND[:rate=100Gbps,delay=1us,...]; leaf-spine: leaves, spines, hosts-per-leaf, oversub; "
                  "fat-tree: k; star/dumbbell/ring: hosts; ring: switches; dumbbell/ring: bottleneck "
                  "(star is sized to the endpoints)")
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
  cmd->add_option("--cfg", o->simgrid_cfg,
                  "flow engine: a SimGrid setting KEY:VALUE, e.g. network/bandwidth-factor:0.97 (repeatable; "
                  "overrides dltrace's calibrated defaults)")
      ->type_name("KEY:VALUE")
      ->allow_extra_args(false);
  cmd->add_option("--cc", o->cc,
                  "ns-3: TCP congestion control (TcpNewReno default, TcpDctcp, TcpBbr, TcpLinuxReno, ..., short "
                  "names dctcp, bbr, and MLTCP's mltcp-newreno, mltcp-dctcp); flow engine: mltcp (bandwidth shares "
                  "weighted by MLTCP's F; default max-min)");
  cmd->add_option("--mltcp-slope", o->mltcp.slope, "MLTCP: S of F(bytes_ratio) = S * bytes_ratio + I")
      ->check(NonNegative())
      ->capture_default_str();
  cmd->add_option("--mltcp-intercept", o->mltcp.intercept, "MLTCP: I of F(bytes_ratio) = S * bytes_ratio + I")
      ->check(Positive())
      ->capture_default_str();
#ifdef DLTRACE_HAVE_NS3
  ns3::DltraceScenarioConfig& config = o->config;
  CLI::App* packet = cmd->add_option_group("ns-3 engine");
  packet->add_option("--queue", config.queueDisc,
                  "switch queues: auto (red-ecn for DCTCP, else fifo), fifo, red, red-ecn, codel, fq-codel, pie, "
                  "pfifo-fast");
  packet->add_option("--queue-packets", config.queuePackets, "switch egress queue limit in packets")
      ->check(Positive());
  packet->add_option("--ecn-k", config.ecnThresholdPackets, "red-ecn marking threshold K in packets (0: scaled to rate)")
      ->check(Positive());
  packet->add_option("--segment-size", config.segmentSize, "TCP segment size in bytes")->check(CLI::Range(64, 65000));
  packet->add_option("--sndbuf", config.sndBufBytes, "TCP send buffer in bytes")
      ->check(CLI::Range(1024.0, 4e9))
      ->default_str(std::to_string(ns3::kDltraceDefaultSndBuf));
  packet->add_option("--rcvbuf", config.rcvBufBytes, "TCP receive buffer in bytes")
      ->check(CLI::Range(1024.0, 4e9))
      ->default_str(std::to_string(ns3::kDltraceDefaultRcvBuf));
  packet->add_option_function<double>(
         "--min-rto-ms", [o](double ms) { o->config.minRto = ns3::MicroSeconds(int64_t(ms * 1000)); },
         "TCP minimum retransmission timeout in ms (delayed ACKs wait a fifth of it)")
      ->default_str(CLI::detail::to_string(config.minRto.GetMilliSeconds()))
      ->check(Positive());
  packet->add_option("--recovery", config.recovery, "TCP loss recovery: classic or prr");
  packet->add_option("--scheduler", config.scheduler, "ns-3 event scheduler: heap, map, list, calendar");
  packet->add_option_function<double>(
         "--stop", [o](double s) { o->config.stopTime = ns3::NanoSeconds(int64_t(s * 1e9)); },
         "stop at this simulated time in seconds (0: when every job is done)")
      ->default_str("0")
      ->check(NonNegative());
  packet->add_option("--transport", config.transport,
                     "tcp (default) or rdma: RoCEv2 queue pairs over PFC switches; --cc then picks none, dcqcn "
                     "(default), hpcc or timely")
      ->check(CLI::IsMember({"tcp", "rdma"}));
  packet->add_option("--cc-param", config.ccParams,
                     "rdma: NAME=VALUE, an attribute of the congestion control (e.g. RateAi=40000000, Eta=0.9)")
      ->type_name("NAME=VALUE");
  packet->add_option("--rdma-egress", config.rdmaEgress,
                     "rdma: switch egress over traffic classes: strict (priority 7 first) or wrr[:W0,...,W7] "
                     "(weighted round robin)")
      ->capture_default_str();
  packet->add_flag_callback("--no-pfc", [o] { o->config.pfc = false; },
                            "rdma: lossy RoCE (no PFC; drops counted, go-back-N recovers)");
  packet->add_flag_callback("--no-flowmon", [o] { o->config.flowMonitor = false; }, "no flowmon.xml (ns-3 FlowMonitor)");
  packet->add_flag("--pcap", o->pcap, "a pcap of every link under DIR/pcap/");
#endif
  AddOutputDirOption(cmd, &o->out_dir,
                     "results: rank<E>.results.json (DIR/job<J>/ for several jobs), flows.csv, links.csv "
                     "(ns-3 also flowmon.xml, pcap/)",
                     "dltrace-simulate-");
  cmd->footer("Exit status: 0 every endpoint finished, 1 error (bad trace, unknown --cc, a stalled run), 2 usage.");
  return {cmd, [o](const Args&) { return RunSimulate(*o); }};
}

}  // namespace dltrace::cli
