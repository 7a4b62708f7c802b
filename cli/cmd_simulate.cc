// dltrace simulate TRACE: replays a trace set's lowered schedule inside ns-3
// over a chosen topology and TCP congestion control (one or several jobs),
// writes results in the socket replayer's format plus network outputs, and
// prints simulated against recorded times and the simulation's speed.
#include "commands.h"

#ifdef DLTRACE_HAVE_NS3
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <iostream>

#include "ns3/dltrace-scenario.h"

namespace dltrace::cli {

namespace {

// True when DIR already holds results of a run (never overwritten).
bool HoldsResults(const std::string& dir) {
  return access((dir + "/flows.csv").c_str(), F_OK) == 0 ||
         access((dir + "/rank0.results.json").c_str(), F_OK) == 0 ||
         access((dir + "/job0").c_str(), F_OK) == 0;
}

struct SimulateOptions {
  ns3::DltraceScenarioConfig config;
  ns3::DltraceJobSpec defaults;  // what each job takes unless its --job spec says otherwise
  std::string trace;
  std::vector<std::string> job_specs;
  std::string out_dir;
  bool pcap = false;
};

int RunSimulate(SimulateOptions options) {
  const char* self = "simulate";
  ns3::DltraceScenarioConfig& config = options.config;
  const ns3::DltraceJobSpec& defaults = options.defaults;
  std::vector<std::string>& job_specs = options.job_specs;
  std::string& out_dir = options.out_dir;
  const bool pcap = options.pcap;
  if (options.trace.empty() && job_specs.empty()) return UsageError(self, "missing TRACE (or --job SPEC)");
  std::string error;
  if (!options.trace.empty()) job_specs.insert(job_specs.begin(), options.trace);
  for (const auto& spec_text : job_specs) {
    ns3::DltraceJobSpec job = defaults;
    if (!ns3::DltraceJobSpec::Parse(spec_text, &job, &error)) return UsageError(self, error);
    config.jobs.push_back(job);
  }
  for (const auto& job : config.jobs)
    if (access(job.trace.c_str(), F_OK) != 0) return Fail(job.trace + ": " + std::strerror(errno));

  if (out_dir.empty()) out_dir = FreshDirName("dltrace-simulate-");
  if (HoldsResults(out_dir)) return Fail(out_dir + " holds results of an earlier run: they are never overwritten");
  // Everything is checked (traces read, topology, congestion control) before
  // the output directory is made.
  if (pcap) config.pcapPrefix = out_dir + "/pcap/";
  ns3::DltraceScenario scenario;
  if (!scenario.Setup(config, &error)) return Fail(error);
  if (!MakeDirs(out_dir, &error) || (pcap && !MakeDirs(out_dir + "/pcap", &error))) return Fail(error);
  scenario.Run();
  scenario.PrintSummary(std::cout);
  if (!scenario.WriteOutputs(out_dir, &error)) return Fail(error);
  std::cout << "results: " << out_dir << " (rank*.results.json" << (config.jobs.size() > 1 ? " under job<J>/" : "")
            << ", flows.csv, links.csv" << (config.flowMonitor ? ", flowmon.xml" : "") << (pcap ? ", pcap/" : "")
            << ")" << std::endl;
  if (!scenario.AllJobsComplete()) return Fail("some endpoints did not finish; their results say complete: false");
  return kExitOk;
}

}  // namespace

Command AddSimulateCommand(CLI::App& dltrace) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* cmd =
      dltrace.add_subcommand("simulate", "simulate a trace set's traffic in ns-3 over a topology and TCP variant");
  ns3::DltraceScenarioConfig& config = o->config;
  cmd->add_option("TRACE", o->trace, "a trace set (or give --job SPEC)");
  cmd->add_option("--job", o->job_specs,
                  "a job: TRACE[:hosts=0-3][:start=0.5s][:algo=A][:channels=C][:iterations=N]; repeat for several "
                  "jobs on one network (default hosts: the next free ones)")
      ->type_name("SPEC")
      ->default_str("")
      ->allow_extra_args(false);
  cmd->add_option("--topo", config.topology,
                  "star, dumbbell, ring, leaf-spine or fat-tree, with optional parameters "
                  "KIND[:rate=100Gbps,delay=1us,...]; leaf-spine: leaves, spines, hosts-per-leaf, oversub; "
                  "fat-tree: k; star/dumbbell/ring: hosts; ring: switches; dumbbell/ring: bottleneck "
                  "(star is sized to the endpoints)")
      ->type_name("SPEC");
  cmd->add_option("--cc", config.congestionControl,
                  "ns-3 TCP congestion control: TcpNewReno, TcpDctcp, TcpBbr, TcpBic, TcpLinuxReno, ... or short "
                  "names (dctcp, bbr)");
  cmd->add_option("--queue", config.queueDisc,
                  "switch queues: auto (red-ecn for DCTCP, else fifo), fifo, red, red-ecn, codel, fq-codel, pie, "
                  "pfifo-fast");
  cmd->add_option("--queue-packets", config.queuePackets, "switch egress queue limit in packets")
      ->check(Positive());
  cmd->add_option("--ecn-k", config.ecnThresholdPackets, "red-ecn marking threshold K in packets (0: scaled to rate)")
      ->check(Positive());
  AddLowerOptions(cmd, &o->defaults.lower);
  cmd->add_option("--iterations", o->defaults.iterations, "simulate only the first N iterations")
      ->check(Positive())
      ->default_str("");
  cmd->add_option("--time-scale", o->defaults.timeScale, "multiply compute gaps (0 skips them)")
      ->check(NonNegative());
  cmd->add_option("--segment-size", config.segmentSize, "TCP segment size in bytes")->check(CLI::Range(64, 65000));
  cmd->add_option("--sndbuf", config.sndBufBytes, "TCP send buffer in bytes")
      ->check(CLI::Range(1024.0, 4e9))
      ->default_str(std::to_string(ns3::kDltraceDefaultSndBuf));
  cmd->add_option("--rcvbuf", config.rcvBufBytes, "TCP receive buffer in bytes")
      ->check(CLI::Range(1024.0, 4e9))
      ->default_str(std::to_string(ns3::kDltraceDefaultRcvBuf));
  cmd->add_option_function<double>(
         "--min-rto-ms", [o](double ms) { o->config.minRto = ns3::MicroSeconds(int64_t(ms * 1000)); },
         "TCP minimum retransmission timeout in ms")
      ->default_str(CLI::detail::to_string(config.minRto.GetMilliSeconds()))
      ->check(Positive());
  cmd->add_option("--recovery", config.recovery, "TCP loss recovery: classic or prr");
  cmd->add_option("--scheduler", config.scheduler, "ns-3 event scheduler: heap, map, list, calendar");
  cmd->add_option_function<double>(
         "--stop", [o](double s) { o->config.stopTime = ns3::NanoSeconds(int64_t(s * 1e9)); },
         "stop at this simulated time in seconds (0: when every job is done)")
      ->default_str("0")
      ->check(NonNegative());
  cmd->add_option_function<double>(
         "--util-ms", [o](double ms) { o->config.utilInterval = ns3::NanoSeconds(int64_t(ms * 1e6)); },
         "link utilisation sample period in ms (0: off)")
      ->default_str(CLI::detail::to_string(config.utilInterval.GetMilliSeconds()))
      ->check(NonNegative());
  cmd->add_flag_callback("--no-flowmon", [o] { o->config.flowMonitor = false; }, "no flowmon.xml (ns-3 FlowMonitor)");
  cmd->add_flag("--pcap", o->pcap, "a pcap of every link under DIR/pcap/");
  AddOutputDirOption(cmd, &o->out_dir,
                     "results: rank<E>.results.json (DIR/job<J>/ for several jobs), flows.csv, links.csv, "
                     "flowmon.xml, pcap/",
                     "dltrace-simulate-");
  cmd->footer("Exit status: 0 every endpoint finished, 1 error (bad trace, unknown --cc, a stalled run), 2 usage.");
  return {cmd, [o](const Args&) { return RunSimulate(*o); }};
}

}  // namespace dltrace::cli

#else  // built without ns-3: the command exists and says why it cannot run

namespace dltrace::cli {
Command AddSimulateCommand(CLI::App& dltrace) {
  CLI::App* cmd =
      dltrace.add_subcommand("simulate", "simulate a trace set's traffic in ns-3 over a topology and TCP variant");
  cmd->allow_extras();
  return {cmd, [](const Args&) {
            return Fail("not built: ns-3 not found (apt-get install libns3-dev libgsl-dev ns3 and rebuild)");
          }};
}
}  // namespace dltrace::cli

#endif
