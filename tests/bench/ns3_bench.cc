// dltrace-ns3-bench: wall time of one ResNet-50 data-parallel iteration
// (synthetic, 8 hosts, ring all-reduce) simulated on a 100 Gbit/s leaf-spine,
// for each event scheduler and TCP buffer size, as ratios against the
// module's defaults measured in the same run. Prints figures; asserts nothing
// about timings (only that every run finished with every byte).
//
//   dltrace-ns3-bench                 # the full comparison (minutes)
//   dltrace-ns3-bench --smoke         # 4 hosts, one 4 MB all-reduce per configuration
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "dltrace/models/algorithms.h"
#include "dltrace/models/synth.h"
#include "ns3/dltrace-scenario.h"

namespace {

struct Run {
  std::string label, scheduler;
  uint32_t buffer;
};

}  // namespace

int main(int argc, char** argv) {
  bool smoke = argc > 1 && std::strcmp(argv[1], "--smoke") == 0;
  std::string trace;
  std::shared_ptr<dltrace::models::Schedule> schedule;
  std::filesystem::path dir;
  if (smoke) {
    dltrace::models::LowerOptions o;
    o.algorithm = "ring";
    dltrace::models::CollectiveSpec spec;
    spec.bytes = 4000000;
    spec.members = {0, 1, 2, 3};
    schedule = std::make_shared<dltrace::models::Schedule>(dltrace::models::LowerSingleCollective(spec, 4, o));
  } else {
    dir = std::filesystem::temp_directory_path() / ("dltrace-ns3-bench-" + std::to_string(getpid()));
    dltrace::models::SynthOptions so;
    so.model = "resnet50";
    so.ranks = 8;
    so.ranks_per_host = 1;
    so.iterations = 1;
    std::string error;
    if (!dltrace::models::WriteSynthTraceSet(so, dir.string(), &error)) {
      std::fprintf(stderr, "dltrace-ns3-bench: %s\n", error.c_str());
      return 1;
    }
    trace = dir.string();
  }
  const uint32_t def = ns3::kDltraceDefaultSndBuf;
  std::vector<Run> runs = {{"defaults (heap, " + std::to_string(def >> 10) + " KiB buffers)", "heap", def},
                           {"map scheduler", "map", def},
                           {"calendar scheduler", "calendar", def},
                           {"1 MiB buffers", "heap", 1u << 20},
                           {"4 MiB buffers", "heap", 4u << 20},
                           {"16 MiB buffers", "heap", 16u << 20}};
  std::printf("# one %s, ring all-reduce, %s, TcpNewReno\n",
              smoke ? "4 MB all-reduce on 4 hosts" : "ResNet-50 iteration (synthetic, 8 hosts, 102 MB gradients)",
              smoke ? "star 100 Gbit/s" : "leaf-spine 100 Gbit/s (2 leaves x 4 hosts, 2 spines)");
  std::printf("%-32s %10s %12s %10s %12s %10s\n", "configuration", "wall_s", "simulated_ms", "vs_default",
              "sim_s/wall_s", "pkts/s");
  double baseline = 0;
  int status = 0;
  for (const Run& r : runs) {
    ns3::DltraceScenarioConfig c;
    c.topology = smoke ? "star:rate=100Gbps" : "leaf-spine:rate=100Gbps";
    c.scheduler = r.scheduler;
    c.sndBufBytes = c.rcvBufBytes = r.buffer;
    c.flowMonitor = false;
    c.utilInterval = ns3::Seconds(0);
    ns3::DltraceJobSpec job;
    job.trace = trace;
    job.schedule = schedule;
    job.lower.algorithm = "ring";
    c.jobs.push_back(job);
    ns3::DltraceScenario s;
    std::string error;
    if (!s.Setup(c, &error)) {
      std::fprintf(stderr, "dltrace-ns3-bench: %s\n", error.c_str());
      return 1;
    }
    auto t0 = std::chrono::steady_clock::now();
    s.Run();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (baseline == 0) baseline = wall;
    if (!s.AllJobsComplete()) {
      std::fprintf(stderr, "dltrace-ns3-bench: %s: the job did not finish\n", r.label.c_str());
      status = 1;
    }
    std::printf("%-32s %10.2f %12.3f %10.2f %12.4g %10.3g\n", r.label.c_str(), wall,
                s.GetJobDuration(0).GetSeconds() * 1e3, wall / baseline,
                s.GetSimulatedSeconds() / wall, s.GetLinkPackets() / wall);
    std::fflush(stdout);
    s.Destroy();
  }
  if (!dir.empty()) std::filesystem::remove_all(dir);
  return status;
}
