// SPDX-License-Identifier: GPL-2.0-only
// dltrace-ns3-bench: wall time of one ResNet-50 data-parallel iteration
// (synthetic, 8 hosts, ring all-reduce) simulated on a 100 Gbit/s leaf-spine,
// for each event scheduler and TCP buffer size, as ratios against the
// module's defaults measured in the same run; and the module's packets per
// wall second against a plain ns-3 program (BulkSendApplication + PacketSink,
// one connection per pair of hosts that exchange bytes, each carrying what the
// schedule sends between them) on the same topology, TCP settings and ns-3
// build. Prints figures; asserts nothing about timings (only that every run
// finished with every byte).
//
//   dltrace-ns3-bench                 # the full comparison (minutes)
//   dltrace-ns3-bench --vs-plain      # only the module's defaults and the plain program
//   dltrace-ns3-bench --only module|plain   # one of the two alone (to profile it: perf record)
//   dltrace-ns3-bench --smoke         # 4 hosts, one 4 MB all-reduce per configuration
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dltrace/models/algorithms.h"
#include "dltrace/models/synth.h"
#include "ns3/bulk-send-application.h"
#include "ns3/dltrace-scenario.h"
#include "ns3/inet-socket-address.h"
#include "ns3/ipv4.h"
#include "ns3/packet-sink.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

namespace {

struct Run {
  std::string label, scheduler;
  uint32_t buffer;
  std::string rdmaCc;  // non-empty: --transport rdma with this congestion control
};

struct Figures {
  double wall_s = 0, cpu_s = 0, simulated_ms = 0;
  uint64_t packets = 0;
  bool complete = false;
};

// This process's CPU seconds: on a shared machine the wall time counts the
// other processes' share of the cores too; the CPU time does not.
double CpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

void PrintRow(const std::string& label, const Figures& f, double baseline) {
  std::printf("%-32s %8.2f %8.2f %12.3f %10.2f %12.4g %10.3g %10.3g\n", label.c_str(), f.wall_s, f.cpu_s,
              f.simulated_ms, f.wall_s / baseline, f.simulated_ms / 1e3 / f.wall_s, double(f.packets) / f.wall_s,
              double(f.packets) / f.cpu_s);
  std::fflush(stdout);
}

double LoadAverage() {
  double load = -1;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1) load = -1;
    std::fclose(f);
  }
  return load;
}

// The plain program: what a user would write with ns-3's own applications.
// Every byte the schedule sends from host a to host b goes over one
// BulkSendApplication -> PacketSink connection, all started at time 0; the
// run stops when every sink has its bytes. The network (topology, stack,
// routing, queue discs, TCP defaults) and the packet counter are the module's
// own helpers with the scenario's defaults, so only the applications differ.
class PlainProgram {
 public:
  Figures Run(const dltrace::models::Schedule& schedule, const std::string& topology) {
    Figures f;
    // Endpoint e runs on host e (one rank per host, placed in order).
    std::map<std::pair<int32_t, int32_t>, uint64_t> bytes;
    for (size_t r = 0; r < schedule.ranks.size(); ++r)
      for (const auto& step : schedule.ranks[r].steps)
        if (step.type == dltrace::models::StepType::kSend) bytes[{int32_t(r), step.peer}] += step.bytes;
    std::string error;
    ns3::DltraceScenarioConfig defaults;
    auto network = ns3::CreateObject<ns3::DltraceNetworkHelper>();
    ns3::DltraceTopologyConfig config;
    if (!network->ConfigureTcp(&error) ||
        !ns3::DltraceTopologyConfig::Parse(topology, uint32_t(schedule.ranks.size()), &config, &error)) {
      std::fprintf(stderr, "dltrace-ns3-bench: plain program: %s\n", error.c_str());
      return f;
    }
    ns3::ObjectFactory scheduler;
    scheduler.SetTypeId("ns3::DltraceCanonicalScheduler");  // the module's default (DltraceScenarioConfig::scheduler)
    ns3::Simulator::SetScheduler(scheduler);
    ns3::DltraceTopologyHelper topo;
    topo.Build(config);
    if (!network->Install(topo, &error)) {
      std::fprintf(stderr, "dltrace-ns3-bench: plain program: %s\n", error.c_str());
      return f;
    }
    auto links = ns3::CreateObject<ns3::DltraceLinkMonitor>();
    links->SetAttribute("Interval", ns3::TimeValue(ns3::Seconds(0)));
    for (const auto& link : topo.GetLinks()) links->AddLink(link.name, link.reverseName, link.rateBps, link.a, link.b);
    uint16_t port = 9000;
    for (const auto& [pair, n] : bytes) {
      ns3::Ptr<ns3::Node> src = topo.GetHosts().Get(pair.first), dst = topo.GetHosts().Get(pair.second);
      ns3::InetSocketAddress to(dst->GetObject<ns3::Ipv4>()->GetAddress(1, 0).GetLocal(), port++);
      auto sink = ns3::CreateObject<ns3::PacketSink>();
      sink->SetAttribute("Protocol", ns3::StringValue("ns3::TcpSocketFactory"));
      sink->SetAttribute("Local", ns3::AddressValue(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), to.GetPort())));
      dst->AddApplication(sink);
      auto send = ns3::CreateObject<ns3::BulkSendApplication>();
      send->SetAttribute("Protocol", ns3::StringValue("ns3::TcpSocketFactory"));
      send->SetAttribute("Remote", ns3::AddressValue(to));
      send->SetAttribute("MaxBytes", ns3::UintegerValue(n));
      send->SetAttribute("SendSize", ns3::UintegerValue(defaults.segmentSize));  // one segment per Send
      src->AddApplication(send);
      flows_.push_back({sink, n});
      sink->TraceConnectWithoutContext("Rx", ns3::MakeCallback(&PlainProgram::Received, this));
    }
    remaining_ = flows_.size();
    auto t0 = std::chrono::steady_clock::now();
    double c0 = CpuSeconds();
    ns3::Simulator::Run();
    f.cpu_s = CpuSeconds() - c0;
    f.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    f.simulated_ms = last_rx_.GetSeconds() * 1e3;
    f.packets = links->GetLinkPackets();
    f.complete = remaining_ == 0;
    flows_.clear();
    network->Dispose();
    ns3::Simulator::Destroy();
    return f;
  }

 private:
  struct Flow {
    ns3::Ptr<ns3::PacketSink> sink;
    uint64_t bytes;
  };
  // A sink received data: stop when the last flow has all its bytes.
  void Received(ns3::Ptr<const ns3::Packet>, const ns3::Address&) {
    size_t done = 0;
    for (const Flow& fl : flows_) done += fl.sink->GetTotalRx() >= fl.bytes;
    if (done == flows_.size() && remaining_ != 0) {
      remaining_ = 0;
      last_rx_ = ns3::Simulator::Now();
      ns3::Simulator::Stop();
    }
  }

  std::vector<Flow> flows_;
  size_t remaining_ = 0;
  ns3::Time last_rx_;
};

}  // namespace

int main(int argc, char** argv) {
  bool smoke = argc > 1 && std::strcmp(argv[1], "--smoke") == 0;
  bool vs_plain = argc > 1 && std::strcmp(argv[1], "--vs-plain") == 0;
  std::string only = argc > 2 && std::strcmp(argv[1], "--only") == 0 ? argv[2] : "";
  if (argc > 1 && !smoke && !vs_plain && only != "module" && only != "plain") {
    std::fprintf(stderr, "usage: dltrace-ns3-bench [--smoke | --vs-plain | --only module|plain]\n");
    return 2;
  }
  vs_plain = vs_plain || !only.empty();
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
  std::vector<Run> runs = {{"defaults (heap, " + std::to_string(def >> 10) + " KiB buffers)", "heap", def}};
  if (!vs_plain) {
    runs.insert(runs.end(), {{"map scheduler", "map", def},
                             {"calendar scheduler", "calendar", def},
                             {"1 MiB buffers", "heap", 1u << 20},
                             {"4 MiB buffers", "heap", 4u << 20},
                             {"16 MiB buffers", "heap", 16u << 20},
                             {"rdma dcqcn (RoCEv2, PFC)", "heap", def, "dcqcn"},
                             {"rdma hpcc (RoCEv2, PFC)", "heap", def, "hpcc"}});
  }
  const std::string topology = smoke ? "star:rate=100Gbps" : "leaf-spine:rate=100Gbps";
  std::printf("# one %s, ring all-reduce, %s, TcpNewReno\n",
              smoke ? "4 MB all-reduce on 4 hosts" : "ResNet-50 iteration (synthetic, 8 hosts, 102 MB gradients)",
              smoke ? "star 100 Gbit/s" : "leaf-spine 100 Gbit/s (2 leaves x 4 hosts, 2 spines)");
  std::printf("# on %s\n", ns3::DltraceNs3Build().c_str());
  std::printf("# load average %.2f at the start (%u cores)\n", LoadAverage(), std::thread::hardware_concurrency());
  std::printf("%-32s %8s %8s %12s %10s %12s %10s %10s\n", "configuration", "wall_s", "cpu_s", "simulated_ms",
              "vs_default", "sim_s/wall_s", "pkts/s", "pkts/cpu_s");
  double baseline = 0;
  Figures module_defaults;
  Figures rdma_dcqcn;
  int status = 0;
  for (const Run& r : runs) {
    ns3::DltraceScenarioConfig c;
    c.topology = topology;
    c.scheduler = r.scheduler;
    c.sndBufBytes = c.rcvBufBytes = r.buffer;
    if (!r.rdmaCc.empty()) {
      c.transport = "rdma";
      c.rdmaCongestionControl = r.rdmaCc;
    }
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
    if (!schedule) schedule = std::make_shared<dltrace::models::Schedule>(s.GetJob(0)->GetSchedule());
    if (only == "plain") break;
    Figures f;
    auto t0 = std::chrono::steady_clock::now();
    double c0 = CpuSeconds();
    s.Run();
    f.cpu_s = CpuSeconds() - c0;
    f.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    f.simulated_ms = s.GetJobDuration(0).GetSeconds() * 1e3;
    f.packets = s.GetLinkPackets();
    if (baseline == 0) {
      baseline = f.wall_s;
      module_defaults = f;
    }
    if (r.rdmaCc == "dcqcn") rdma_dcqcn = f;
    if (!s.AllJobsComplete()) {
      std::fprintf(stderr, "dltrace-ns3-bench: %s: the job did not finish\n", r.label.c_str());
      status = 1;
    }
    PrintRow(r.label, f, baseline);
    s.Destroy();
  }
  if (rdma_dcqcn.wall_s > 0)
    std::printf("rdma (dcqcn) vs tcp (defaults): %.3g vs %.3g packets (on links, ACKs included) per wall second "
                "= %.2fx; the job %.2fx the wall time, %.2fx the CPU time\n",
                rdma_dcqcn.packets / rdma_dcqcn.wall_s, module_defaults.packets / module_defaults.wall_s,
                (rdma_dcqcn.packets / rdma_dcqcn.wall_s) / (module_defaults.packets / module_defaults.wall_s),
                rdma_dcqcn.wall_s / module_defaults.wall_s, rdma_dcqcn.cpu_s / module_defaults.cpu_s);
  // The plain program last, with the same schedule's bytes between the same hosts.
  if (baseline == 0) baseline = 1;
  Figures plain;
  if (only == "module") {
    plain.complete = true;
  } else if (plain = PlainProgram().Run(*schedule, topology); !plain.complete) {
    std::fprintf(stderr, "dltrace-ns3-bench: the plain BulkSend program did not deliver every byte\n");
    status = 1;
  } else if (only.empty() || only == "plain") {
    PrintRow("plain BulkSend + PacketSink", plain, baseline);
    if (only.empty())
      std::printf("module vs plain ns-3: %.3g vs %.3g packets (on links) per wall second = %.2fx, "
                "per CPU second %.2fx (%llu vs %llu packets)\n",
                module_defaults.packets / module_defaults.wall_s, plain.packets / plain.wall_s,
                (module_defaults.packets / module_defaults.wall_s) / (plain.packets / plain.wall_s),
                (module_defaults.packets / module_defaults.cpu_s) / (plain.packets / plain.cpu_s),
                (unsigned long long)module_defaults.packets, (unsigned long long)plain.packets);
  }
  std::printf("# load average %.2f at the end\n", LoadAverage());
  if (!dir.empty()) std::filesystem::remove_all(dir);
  return status;
}
