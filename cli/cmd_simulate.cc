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

}  // namespace

int RunSimulate(const Args& args) {
  const Command& self = FindCommand("simulate");
  ns3::DltraceScenarioConfig config;
  ns3::DltraceJobSpec defaults;  // what each job takes unless its --job spec says otherwise
  std::vector<std::string> traces, job_specs;
  std::string out_dir;
  bool pcap = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    double v = 0;
    auto value = [&]() { return i + 1 < args.size() && ParseNumber(args[++i], &v); };
    auto text = [&](std::string* out) {
      if (i + 1 >= args.size()) return false;
      *out = args[++i];
      return !out->empty();
    };
    std::string s;
    const int lowering = ParseLowerOption(args, &i, &defaults.lower);
    if (lowering < 0) return UsageError(self, "bad option or value: " + a);
    if (lowering > 0) continue;
    if (a == "--iterations" && value() && v >= 1) {
      defaults.iterations = uint32_t(v);
    } else if (a == "--time-scale" && value() && v >= 0) {
      defaults.timeScale = v;
    } else if (a == "--job" && text(&s)) {
      job_specs.push_back(s);
    } else if (a == "--topo" && text(&config.topology)) {
    } else if (a == "--cc" && text(&config.congestionControl)) {
    } else if (a == "--queue" && text(&config.queueDisc)) {
    } else if (a == "--queue-packets" && value() && v >= 1) {
      config.queuePackets = uint32_t(v);
    } else if (a == "--ecn-k" && value() && v >= 1) {
      config.ecnThresholdPackets = uint32_t(v);
    } else if (a == "--segment-size" && value() && v >= 64 && v <= 65000) {
      config.segmentSize = uint32_t(v);
    } else if (a == "--sndbuf" && value() && v >= 1024 && v < 4e9) {
      config.sndBufBytes = uint32_t(v);
    } else if (a == "--rcvbuf" && value() && v >= 1024 && v < 4e9) {
      config.rcvBufBytes = uint32_t(v);
    } else if (a == "--min-rto-ms" && value() && v > 0) {
      config.minRto = ns3::MicroSeconds(int64_t(v * 1000));
    } else if (a == "--recovery" && text(&config.recovery)) {
    } else if (a == "--scheduler" && text(&config.scheduler)) {
    } else if (a == "--stop" && value() && v >= 0) {
      config.stopTime = ns3::NanoSeconds(int64_t(v * 1e9));
    } else if (a == "--util-ms" && value() && v >= 0) {
      config.utilInterval = ns3::NanoSeconds(int64_t(v * 1e6));
    } else if (a == "--no-flowmon") {
      config.flowMonitor = false;
    } else if (a == "--pcap") {
      pcap = true;
    } else if ((a == "-o" || a == "--output") && text(&out_dir)) {
    } else if (!a.empty() && a[0] == '-') {
      return UsageError(self, "bad option or value: " + a);
    } else {
      traces.push_back(a);
    }
  }
  if (traces.size() > 1) return UsageError(self, "more than one TRACE given (use --job for several jobs)");
  if (traces.empty() && job_specs.empty()) return UsageError(self, "missing TRACE (or --job SPEC)");
  if (!models::FindAlgorithm(defaults.lower.algorithm)) {
    std::string names;
    for (const auto& al : models::AllAlgorithms()) names += std::string(names.empty() ? "" : ", ") + al.name;
    return UsageError(self, "unknown algorithm '" + defaults.lower.algorithm + "' (one of " + names + ")");
  }
  std::string error;
  if (!traces.empty()) job_specs.insert(job_specs.begin(), traces[0]);
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

}  // namespace dltrace::cli

#else  // built without ns-3: the command exists and says why it cannot run

namespace dltrace::cli {
int RunSimulate(const Args&) {
  return Fail("not built: ns-3 not found (apt-get install libns3-dev libgsl-dev ns3 and rebuild)");
}
}  // namespace dltrace::cli

#endif
