// SPDX-License-Identifier: GPL-2.0-only
// NCCL's tuning model as data: the latency and bandwidth tables of NCCL
// 2.28.9 (src/graph/tuning.cc, ncclTunerConstantsDefaults), the model that
// turns them into a time per (algorithm, protocol) (ncclTopoTuneModel,
// ncclTopoGetAlgoTime) and the channel and chunk choice (src/enqueue.cc,
// topoGetAlgoInfo and calcCollChunking). Written from reading that source;
// NVLS, NVLS-Tree and CollNet are not modelled (they need NVSwitch multicast
// or a SHARP network and are off by default across nodes).
#include "dltrace/models/nccl.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <strings.h>

namespace dltrace::models {

using formats::Collective;

namespace {

constexpr int kTree = int(NcclAlgo::kTree), kRing = int(NcclAlgo::kRing), kPat = int(NcclAlgo::kPat);
constexpr int kLL = int(NcclProto::kLL), kLL128 = int(NcclProto::kLL128),
              kSimple = int(NcclProto::kSimple);

// NCCL's names (formats/), in the order of NcclAlgo and NcclProto.
const auto& kAlgoNames = formats::kNcclAlgorithmNames;
const auto& kProtoNames = formats::kNcclProtocolNames;
static_assert(std::size(formats::kNcclAlgorithmNames) == kNcclAlgos &&
              std::size(formats::kNcclProtocolNames) == kNcclProtos);
static_assert(int(formats::NcclAlgorithm::Pat) == int(NcclAlgo::kPat) &&
              int(formats::NcclProtocol::Simple) == int(NcclProto::kSimple));

// ---- NCCL 2.28.9, src/graph/tuning.cc, ncclTunerConstantsDefaults (us, GB/s).
// Rows: Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT;
// columns: LL, LL128, Simple.
constexpr double kBaseLatency[kNcclAlgos][kNcclProtos] = {
    {6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {8.0, 8.0, 8.0}};
enum Hw { kHwNvlink = 0, kHwPci = 1, kHwNet = 2 };
constexpr double kHwLatency[3][kNcclAlgos][kNcclProtos] = {
    // NVLink
    {{.6, 1.25, 4.0}, {.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}},
    // PCI
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}},
    // Network
    {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14}},
};
// [GPU generation or CPU vendor][1 node, 2 nodes, more]; generations Volta,
// Ampere, Hopper, Blackwell.
constexpr double kLLMaxBw[4][3] = {
    {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
constexpr double kPerChMaxRingLL128Bw[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {73.4, 34.6, 73.4}};
constexpr double kPerChMaxTreeLL128Bw[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double kPerChMaxTreeBw[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
// Tree all-reduce bandwidth correction per protocol, by log2(bytes / 64) from 0 to 22.
constexpr double kTreeCorrection[kNcclProtos][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

// ---- src/include/device.h, comm.h, init.cc (2.28.9).
constexpr int kWarp = 32;
constexpr int kMaxThreads = 640, kSimpleMaxThreads = 512, kLLMaxThreads = 512,
              kLL128MaxThreads = 640;
constexpr uint64_t kThreadThreshold[kNcclProtos] = {8, 8, 64};
constexpr int kSteps = 8;  // NCCL_STEPS: slots of a connection's buffer
constexpr uint64_t kLLBuffSize = 8ull * kLLMaxThreads * kSteps * 16;           // 512 KiB
constexpr uint64_t kLL128BuffSize = 120ull * kLL128MaxThreads * kSteps * 8;   // 4,915,200
constexpr uint64_t kSimpleBuffSize = 4ull << 20;
constexpr int kMaxChannels = 64;  // MAXCHANNELS
constexpr double kPciBw = 12.0;   // PCI_BW, GB/s (topo.h)

int Log2i(uint64_t n) {
  int l = -1;
  while (n) {
    ++l;
    n >>= 1;
  }
  return l;
}

// NCCL's function index for the lists NCCL_ALGO / NCCL_PROTO take.
const char* FuncName(Collective c) {
  switch (c) {
    case Collective::kBroadcast: return "Broadcast";
    case Collective::kReduce: return "Reduce";
    case Collective::kAllGather: return "AllGather";
    case Collective::kReduceScatter: return "ReduceScatter";
    case Collective::kAllReduce: return "AllReduce";
    default: return "SendRecv";
  }
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t b = 0;
  while (b <= s.size()) {
    size_t e = s.find(sep, b);
    if (e == std::string::npos) e = s.size();
    if (e > b) out.push_back(s.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

// NCCL_ALGO / NCCL_PROTO for one function: "elem,elem", "^elem" (all but),
// and "func:list;func:list" entries, the first one without a prefix
// applying to every function (tuning.cc's parseList). Returns the enabled
// mask over NAMES; ALL_ON when the setting is empty.
template <size_t N>
std::array<bool, N> EnabledBy(const std::string& setting, Collective c,
                              const char* const (&names)[N]) {
  std::array<bool, N> on;
  on.fill(true);
  for (const std::string& entry : Split(setting, ';')) {
    std::string list = entry;
    const size_t colon = entry.find(':');
    if (colon != std::string::npos) {
      if (strcasecmp(entry.substr(0, colon).c_str(), FuncName(c)) != 0) continue;
      list = entry.substr(colon + 1);
    }
    const bool negate = !list.empty() && list[0] == '^';
    if (negate) list.erase(0, 1);
    on.fill(negate);
    for (const std::string& e : Split(list, ','))
      for (size_t k = 0; k < N; ++k)
        if (strcasecmp(e.c_str(), names[k]) == 0) on[k] = !negate;
  }
  return on;
}

int GenerationIndex(int cc) { return cc >= 100 ? 3 : cc >= 90 ? 2 : cc >= 80 ? 1 : 0; }

const NcclGraph& GraphFor(const NcclSystem& sys, int algo, int nodes) {
  const bool tree = algo != kRing;  // PAT runs on the tree graph's channels
  if (nodes == 1) return tree ? sys.tree_single : sys.ring_single;
  return tree ? sys.tree_multi : sys.ring_multi;
}

// comm->nChannels: the ring graph's channels doubled (connect.cc,
// ncclTopoPostset), doubled again on Hopper across nodes when a channel is
// fast and few, then bounded by NCCL_MIN/MAX_NCHANNELS.
int CommChannels(const NcclCall& call, const NcclSettings& settings, const NcclSystem& sys) {
  const NcclGraph& ring = GraphFor(sys, kRing, call.nodes);
  int nc = std::min(kMaxChannels, 2 * ring.channels);
  if (sys.compute_capability >= 90 && call.nodes > 1 && ring.bw_intra > 45.0 && nc < 16) nc *= 2;
  if (settings.max_channels > 0) nc = std::min(nc, settings.max_channels);
  if (settings.min_channels > 0) nc = std::max(nc, std::min(settings.min_channels, kMaxChannels));
  return std::max(nc, 1);
}

int MaxThreads(int algo, int proto, const NcclSettings& settings, const NcclSystem& sys,
               int nodes) {
  auto env = [&](int max, int def) {
    const int nt = settings.nthreads;
    if (nt <= 0) return def;
    if (nt % kWarp != 0) return max;
    return std::min(std::max(nt, 2 * kWarp), max);
  };
  if (proto == kLL) return env(kLLMaxThreads, kLLMaxThreads);
  if (proto == kLL128) return kLL128MaxThreads;  // NCCL_LL128_NTHREADS is not recorded
  if (algo == kRing) {
    const NcclGraph& g = GraphFor(sys, kRing, nodes);
    return env(kSimpleMaxThreads, g.bw_intra * g.channels <= kPciBw ? 256 : kSimpleMaxThreads);
  }
  if (algo == kTree) return env(kSimpleMaxThreads, kSimpleMaxThreads);
  return kMaxThreads;
}

bool Defined(Collective c, int a, int p, const NcclCall& call, const NcclSettings& settings,
             const NcclSystem& sys) {
  if (a != kTree && a != kRing && a != kPat) return false;  // not modelled
  switch (c) {
    case Collective::kAllReduce:
      return a != kPat;
    case Collective::kBroadcast:
    case Collective::kReduce:
      return a == kRing;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
      if (a == kTree) return false;
      // PAT (2.23+): Simple only, one GPU per node, SM60 and up.
      if (a == kPat)
        return p == kSimple && call.nodes == call.ranks && sys.compute_capability >= 60 &&
               NcclVersionAtLeast(settings.version, 2, 23);
      return true;
    default:
      return false;
  }
}

}  // namespace

const char* NcclAlgoName(NcclAlgo algo) { return formats::NcclAlgorithmName(formats::NcclAlgorithm(algo)); }
const char* NcclProtoName(NcclProto proto) { return formats::NcclProtocolName(formats::NcclProtocol(proto)); }
NcclAlgo ParseNcclAlgo(const std::string& name) {
  return NcclAlgo(formats::ParseNcclAlgorithm(name.c_str()));
}
NcclProto ParseNcclProto(const std::string& name) {
  return NcclProto(formats::ParseNcclProtocol(name.c_str()));
}

const char* NcclReasonName(NcclReason reason) {
  switch (reason) {
    case NcclReason::kRecorded: return "recorded";
    case NcclReason::kAlgoSetting: return "NCCL_ALGO";
    case NcclReason::kProtoSetting: return "NCCL_PROTO";
    case NcclReason::kTuningModel: return "tuning model";
  }
  return "tuning model";
}

double NcclPayloadEfficiency(NcclProto proto) {
  switch (proto) {
    case NcclProto::kLL: return 0.5;             // 8-byte line: 4 data + 4 flag
    case NcclProto::kLL128: return 120.0 / 128;  // 128-byte line: 120 data + 8 flag
    default: return 1.0;
  }
}

uint64_t NcclWireBytes(NcclProto proto, uint64_t payload) {
  switch (proto) {
    case NcclProto::kLL: return 2 * payload;
    case NcclProto::kLL128: return (payload * 128 + 119) / 120;
    default: return payload;
  }
}

NcclSettings NcclSettingsFrom(const std::vector<std::pair<std::string, std::string>>& env,
                              const std::string& version) {
  NcclSettings s;
  s.version = version;
  for (const auto& [k, v] : env) {
    if (k == "NCCL_ALGO") s.algo = v;
    else if (k == "NCCL_PROTO") s.proto = v;
    else if (k == "NCCL_MIN_NCHANNELS") s.min_channels = std::atoi(v.c_str());
    else if (k == "NCCL_MAX_NCHANNELS") s.max_channels = std::atoi(v.c_str());
    else if (k == "NCCL_NTHREADS") s.nthreads = std::atoi(v.c_str());
    else if (k == "NCCL_BUFFSIZE") s.buffsize = std::strtoull(v.c_str(), nullptr, 0);
  }
  return s;
}

bool NcclVersionAtLeast(const std::string& version, int major, int minor) {
  int ma = 0, mi = 0;
  if (std::sscanf(version.c_str(), "%d.%d", &ma, &mi) != 2) return true;
  return ma > major || (ma == major && mi >= minor);
}

const NcclSystem& DefaultNcclSystem() {
  // An 8-GPU H100 SXM node (NVLink 4 through NVSwitch, 18 links of 20.6 GB/s
  // in NCCL's topo.h), Intel CPUs, one 400 Gb/s NIC per GPU. The graphs are
  // what NCCL's search (search.cc, sm90 speed arrays) typically prints on
  // such nodes: "nChannels 16, bw 20/20, type NVL/PIX" on one node (32
  // channels after ncclTopoPostset doubles them), "nChannels 8, bw 40/40"
  // across nodes (16 channels). Assumed, not measured here: print a
  // machine's own with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=GRAPH
  // (scripts/gpu-check.sh does).
  static const NcclSystem system = {
      "h100-8gpu-nvswitch-400g",
      90,
      false,
      true,
      {16, 20.0, 20.0},
      {16, 20.0, 20.0},
      {8, 40.0, 40.0},
      {8, 40.0, 40.0},
      "NCCL 2.28.9 src/graph/tuning.cc tables; graphs assumed for 8x H100 SXM + 8x 400 Gb/s NICs"};
  return system;
}

double NcclStepLatencyUs(NcclAlgo algo, NcclProto proto, bool inter_node, const NcclSystem& sys) {
  const int a = int(algo), p = int(proto);
  if (a < 0 || p < 0) return 0;
  const int hw = inter_node ? kHwNet : sys.nvlink ? kHwNvlink : kHwPci;
  return kHwLatency[hw][a][p];
}

double NcclBaseLatencyUs(NcclAlgo algo, NcclProto proto) {
  const int a = int(algo), p = int(proto);
  return a < 0 || p < 0 ? 0 : kBaseLatency[a][p];
}

NcclTuningTable NcclTuning(const NcclCall& call, const NcclSettings& settings,
                           const NcclSystem& sys) {
  NcclTuningTable t;
  const int n = call.ranks, nodes = std::max(call.nodes, 1);
  if (n <= 1) return t;
  const Collective c = call.collective;
  const int gen = GenerationIndex(sys.compute_capability);
  const int index2 = nodes <= 2 ? nodes - 1 : 2;
  const int index1 = nodes == 1 ? gen : sys.amd_cpu ? 1 : 0;
  const double ll_max = kLLMaxBw[index1][index2];
  const double ppn = double(n) / nodes;
  const int intra_hw = sys.nvlink ? kHwNvlink : kHwPci;
  const int hw = nodes == 1 ? intra_hw : kHwNet;
  const int nsteps = c == Collective::kAllReduce ? 2 * (n - 1)
                     : c == Collective::kReduceScatter || c == Collective::kAllGather ? n - 1
                                                                                       : n;
  for (int a = 0; a < kNcclAlgos; ++a) {
    const NcclGraph& g = GraphFor(sys, a, nodes);
    for (int p = 0; p < kNcclProtos; ++p) {
      if (!Defined(c, a, p, call, settings, sys)) continue;
      const double bw = nodes <= 2 ? g.bw_intra : g.bw_inter;
      double bus = g.channels * bw;
      if (a == kRing && p == kLL) bus = std::min(ll_max, bus * .5);
      if (a == kRing && p == kLL128) bus = std::min(bus * 0.92, g.channels * kPerChMaxRingLL128Bw[gen][index2]);
      if (a == kTree && c == Collective::kAllReduce) bus = std::min(bus * .92, g.channels * kPerChMaxTreeBw[gen][index2]);
      if (a == kTree && p == kLL) bus = std::min(bus / 3.8, ll_max);
      if (a == kTree && p == kLL128)
        bus = std::min(bus * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), g.channels * kPerChMaxTreeLL128Bw[gen][index2]);
      if (a == kPat) bus *= .75;
      // Bus bandwidth to algorithm bandwidth.
      if (!(a != kRing && (c == Collective::kAllGather || c == Collective::kReduceScatter)))
        bus *= a == kRing ? double(n) / nsteps : .5;
      t.bandwidth[a][p] = bus;

      double lat = kBaseLatency[a][p];
      double intra = kHwLatency[intra_hw][a][p];
      const double inter = ppn == 1 ? kHwLatency[kHwNet][kTree][p] : kHwLatency[kHwNet][a][p];
      if (a == kRing) {
        if (c == Collective::kReduce || c == Collective::kBroadcast) {
          lat += kHwLatency[hw][a][p];  // the graph's channels are the same on every node
        } else {
          double net_overhead = 0;
          if (nodes > 1) net_overhead = (sys.amd_cpu ? 2.0 : 1.0) * (p == kSimple ? 3 : 1);
          intra = std::max(intra, net_overhead);
          const int inter_steps = nodes == 1 ? 0 : c == Collective::kAllReduce ? 2 * (nodes - 1) : nodes - 1;
          lat += (nsteps - inter_steps) * intra + inter_steps * inter;
        }
      } else if (a == kTree) {
        if (c == Collective::kAllReduce) lat += 2 * ((n / nodes - 1) * intra + Log2i(uint64_t(nodes)) * inter);
      } else if (a == kPat) {
        lat += Log2i(uint64_t(nodes)) * (inter / 3.5) + n * 2.8;
      }
      t.latency_us[a][p] = lat;
    }
  }
  return t;
}

double NcclAlgoTime(const NcclTuningTable& t, const NcclCall& call, NcclAlgo algo, NcclProto proto,
                    const NcclSystem& sys, const NcclSettings& settings) {
  const int a = int(algo), p = int(proto);
  double bw = t.bandwidth[a][p];
  double lat = t.latency_us[a][p];
  if (bw == 0) return -1;
  const int log_size = Log2i(call.bytes >> 6);
  if (a == kTree && call.collective == Collective::kAllReduce && log_size >= 0 && log_size < 23)
    bw *= kTreeCorrection[p][log_size];
  const int nc = CommChannels(call, settings, sys);
  if (a == kRing && p == kSimple && call.nodes > 1 && call.collective == Collective::kAllReduce &&
      call.bytes / uint64_t(nc * call.ranks) >= 64)
    lat *= sys.compute_capability < 80 ? 1.9 : 1.4;  // the ring's plateau
  return lat + double(call.bytes) / (1000 * bw);
}

NcclChoice NcclChannelsFor(const NcclCall& call, NcclAlgo algo, NcclProto proto,
                           const NcclSettings& settings, const NcclSystem& sys) {
  NcclChoice ch;
  ch.algo = algo;
  ch.proto = proto;
  const int a = int(algo), p = int(proto);
  const int known_a = a == kTree || a == kRing || a == kPat ? a : kRing;
  const int known_p = p >= 0 ? p : kSimple;
  int nc = CommChannels(call, settings, sys);
  int nt = MaxThreads(known_a, known_p, settings, sys, call.nodes);
  uint64_t threshold = kThreadThreshold[known_p];
  if (known_a == kRing && known_p == kLL) threshold *= uint64_t(call.ranks);
  while (call.bytes < uint64_t(nc) * nt * threshold && nc >= 2) --nc;
  ch.channels = nc;

  // calcCollChunking: a connection's buffer holds kSteps steps; Simple rings
  // move 4 steps per chunk for all-reduce, all-gather and reduce-scatter.
  const uint64_t buff = known_p == kLL ? kLLBuffSize
                        : known_p == kLL128 ? kLL128BuffSize
                        : settings.buffsize > 0 ? settings.buffsize : kSimpleBuffSize;
  const uint64_t step = buff / kSteps;
  uint64_t chunk_steps = 1;
  if (known_p == kSimple && known_a == kRing)
    chunk_steps = call.collective == Collective::kBroadcast || call.collective == Collective::kReduce ? 1 : kSteps / 2;
  uint64_t chunk = step * chunk_steps;
  if (known_p == kLL) chunk /= 2;
  if (known_p == kLL128) chunk = chunk / 16 * 15;
  const uint64_t bytes = call.bytes;
  if (known_a == kTree && known_p == kLL128) {
    const double ppn = double(call.ranks) / std::max(call.nodes, 1);
    const double steps = 1 + Log2i(uint64_t(std::max(call.nodes, 1))) + 0.1 * ppn;
    while (double(bytes / (uint64_t(nc) * chunk)) < steps * 64 / ppn && chunk > 131072) chunk /= 2;
    while (double(bytes / (uint64_t(nc) * chunk)) < steps * 16 / ppn && chunk > 32768) chunk /= 2;
  } else if (known_a == kPat) {
    const uint64_t k = call.collective == Collective::kAllGather ? 32 : 16;
    while (chunk * nc * k > bytes && chunk > 65536) chunk /= 2;
  }
  ch.chunk_bytes = chunk;
  return ch;
}

NcclChoice ChooseNccl(const NcclCall& call, const NcclSettings& settings, const NcclSystem& sys) {
  const NcclTuningTable t = NcclTuning(call, settings, sys);
  const auto algo_on = EnabledBy(settings.algo, call.collective, kAlgoNames);
  const auto proto_on = EnabledBy(settings.proto, call.collective, kProtoNames);
  double best = -1, best_free = -1;
  int ba = -1, bp = -1, fa = -1, fp = -1;
  for (int a = 0; a < kNcclAlgos; ++a)
    for (int p = 0; p < kNcclProtos; ++p) {
      const double time = NcclAlgoTime(t, call, NcclAlgo(a), NcclProto(p), sys, settings);
      if (time < 0) continue;
      if (best_free < 0 || time < best_free) best_free = time, fa = a, fp = p;
      if (!algo_on[size_t(a)] || !proto_on[size_t(p)]) continue;
      if (best < 0 || time < best) best = time, ba = a, bp = p;
    }
  if (ba < 0) {  // one rank, a collective NCCL runs as point-to-point, or nothing enabled
    ba = fa >= 0 ? fa : kRing;
    bp = fp >= 0 ? fp : kSimple;
    best = std::max(best_free, 0.0);
  }
  NcclChoice ch = NcclChannelsFor(call, NcclAlgo(ba), NcclProto(bp), settings, sys);
  ch.time_us = best;
  ch.reason = NcclReason::kTuningModel;
  // Which setting made the choice: one that ruled out what the model would
  // have picked without it.
  if (fa >= 0 && (fa != ba || fp != bp)) {
    if (!algo_on[size_t(fa)]) ch.reason = NcclReason::kAlgoSetting;
    else ch.reason = NcclReason::kProtoSetting;
  }
  return ch;
}

}  // namespace dltrace::models
