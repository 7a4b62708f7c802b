// SPDX-License-Identifier: GPL-2.0-only
// Topology specs and their parser (kinds, presets, host model, faults), the
// graph's shortest paths and the per-flow ECMP rule. The graphs themselves are
// built in fabric.cc.
#include "dltrace/models/topology.h"

#include <algorithm>
#include <cstring>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <iterator>
#include <sstream>

#include "fabric.h"

namespace dltrace::models {

namespace {

bool ParseScaled(const std::string& text, const std::vector<std::pair<std::string, double>>& units, double* out) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || !(v >= 0)) return false;
  std::string unit(end);
  for (const auto& u : units)
    if (unit == u.first) {
      *out = v * u.second;
      return true;
    }
  return false;
}

bool ParseCount(const std::string& text, uint32_t min, uint32_t* out) {
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < long(min) || v > 100000) return false;
  *out = uint32_t(v);
  return true;
}

}  // namespace

namespace {
const char* const kLoadBalancerNames[] = {"ecmp", "eecmp", "flowlet", "ar", "spray"};
}  // namespace

bool ParseLoadBalancer(const std::string& text, LoadBalancer* out) {
  for (size_t i = 0; i < std::size(kLoadBalancerNames); ++i)
    if (text == kLoadBalancerNames[i]) {
      *out = LoadBalancer(i);
      return true;
    }
  return false;
}

const char* LoadBalancerName(LoadBalancer lb) { return kLoadBalancerNames[size_t(lb)]; }

const std::vector<std::string>& TopologyKinds() {
  static const std::vector<std::string> kinds = {"star",           "dumbbell", "ring",       "leaf-spine", "fat-tree",
                                                 "rail-optimized", "dcn",      "spectrum-x", "hpn",        "FILE.json",
                                                 "FILE.yaml"};
  return kinds;
}

bool ParseRate(const std::string& text, uint64_t* bps) {
  double v = 0;
  if (!ParseScaled(text,
                   {{"", 1}, {"bps", 1}, {"Kbps", 1e3}, {"kbps", 1e3}, {"K", 1e3}, {"Mbps", 1e6}, {"M", 1e6},
                    {"Gbps", 1e9}, {"G", 1e9}, {"Tbps", 1e12}, {"T", 1e12}},
                   &v) ||
      v < 1)
    return false;
  *bps = uint64_t(std::llround(v));
  return true;
}

bool ParseDuration(const std::string& text, uint64_t* ns) {
  double v = 0;
  if (!ParseScaled(text, {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}}, &v)) return false;
  *ns = uint64_t(std::llround(v));
  return true;
}

std::string RateText(uint64_t bps) {
  std::ostringstream s;
  if (bps >= 1000000000ull) s << double(bps) / 1e9 << " Gbit/s";
  else s << double(bps) / 1e6 << " Mbit/s";
  return s.str();
}

namespace {

// Presets are data: the kind and the parameters a public template uses
// (DESIGN "Facts for AI cluster fabrics"; SimAI's gen_Topo_Template.py).
// Everything a preset sets can be overridden in the spec.
struct Preset {
  const char* name;
  const char* kind;
  uint32_t gpus, ports, planes, hosts_per_leaf;
  uint64_t rate_bps, delay_ns;
};
const Preset kPresets[] = {
    // Rail-optimized, single ToR, 400G NIC per GPU, 64 GPUs per leaf (64 hosts per segment), 1:1.
    {"spectrum-x", "rail-optimized", 8, 1, 1, 64, 400000000000ull, 500},
    // Alibaba HPN: rail-optimized, two 200G ports per NIC to two non-stacked ToRs,
    // 1,024-GPU segments (128 hosts); planes=2 for the dual-plane variant.
    {"hpn", "rail-optimized", 8, 2, 1, 128, 200000000000ull, 500},
    // DCN+: not rail-optimized, all of a host's NICs to its ToR (ports=2: dual ToR), 128 GPUs per ToR.
    {"dcn", "dcn", 8, 1, 1, 16, 400000000000ull, 500},
};

bool ParseFraction(const std::string& text, double* out) {
  char* end = nullptr;
  *out = std::strtod(text.c_str(), &end);
  return !text.empty() && *end == '\0' && *out >= 0 && *out <= 1;
}

}  // namespace

bool ParseCommonKey(const std::string& key, const std::string& value, TopologySpec* c, bool* ok) {
  if (key == "gpus") {
    *ok = *ok && ParseCount(value, 1, &c->host.gpus);
  } else if (key == "domain") {
    *ok = *ok && ParseCount(value, 1, &c->host.domain);
  } else if (key == "ports") {
    *ok = *ok && ParseCount(value, 1, &c->host.ports) && c->host.ports <= 2;
  } else if (key == "nvlink") {
    *ok = *ok && ParseRate(value, &c->host.nvlink_bps);
  } else if (key == "nvlink-delay") {
    *ok = *ok && ParseDuration(value, &c->host.nvlink_delay_ns);
  } else if (key == "seed") {
    char* end = nullptr;
    c->ecmp_seed = std::strtoull(value.c_str(), &end, 10);
    *ok = *ok && !value.empty() && *end == '\0';
  } else if (key == "lb") {
    *ok = *ok && ParseLoadBalancer(value, &c->lb);
  } else if (key == "flowlet-gap") {
    *ok = *ok && ParseDuration(value, &c->flowlet_gap_ns) && c->flowlet_gap_ns > 0;
  } else if (key == "fail") {
    *ok = *ok && !value.empty();
    c->faults.push_back({value, 0});
  } else if (key == "degrade") {
    const size_t at = value.rfind('@');
    FabricFault f{value.substr(0, at), 0};
    *ok = *ok && at != std::string::npos && at > 0 && ParseFraction(value.substr(at + 1), &f.fraction) &&
          f.fraction > 0;
    c->faults.push_back(f);
  } else {
    return false;
  }
  return true;
}

bool ParseTopology(const std::string& text, uint32_t hosts_needed, TopologySpec* out, std::string* error) {
  TopologySpec c;
  const size_t colon = text.find(':');
  c.kind = text.substr(0, colon);
  auto ends_with = [&](const char* suffix) {
    const size_t n = std::strlen(suffix);
    return c.kind.size() > n && c.kind.compare(c.kind.size() - n, n, suffix) == 0;
  };
  if (ends_with(".json") || ends_with(".yaml") || ends_with(".yml"))
    return ParseFabricFile(c.kind, text.substr(colon == std::string::npos ? text.size() : colon + 1), hosts_needed,
                           out, error);
  for (const Preset& p : kPresets)
    if (c.kind == p.name) {
      c.preset = p.name;
      c.kind = p.kind;
      c.host.gpus = p.gpus;
      c.host.ports = p.ports;
      c.planes = p.planes;
      c.hosts_per_leaf = p.hosts_per_leaf;
      c.rate_bps = p.rate_bps;
      c.delay_ns = p.delay_ns;
    }
  static const std::vector<std::string> kinds = {"star",     "dumbbell",       "ring", "leaf-spine",
                                                 "fat-tree", "rail-optimized", "dcn"};
  if (std::find(kinds.begin(), kinds.end(), c.kind) == kinds.end()) {
    *error = "unknown topology '" + c.kind +
             "' (one of star, dumbbell, ring, leaf-spine, fat-tree, rail-optimized, dcn, the presets spectrum-x, "
             "hpn, dcn, or a fabric file ending in .json, .yaml or .yml)";
    return false;
  }
  const bool ai = c.AiFabric();
  std::stringstream ss(colon == std::string::npos ? "" : text.substr(colon + 1));
  for (std::string item; std::getline(ss, item, ',');) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    bool ok = eq != std::string::npos;
    bool known = true;
    if (key == "rate") {
      ok = ok && ParseRate(value, &c.rate_bps);
    } else if (key == "delay") {
      ok = ok && ParseDuration(value, &c.delay_ns);
    } else if (key == "bottleneck" && (c.kind == "dumbbell" || c.kind == "ring")) {
      ok = ok && ParseRate(value, &c.bottleneck_bps);
    } else if (key == "hosts" && (c.kind == "star" || c.kind == "dumbbell" || c.kind == "ring" || ai)) {
      ok = ok && ParseCount(value, 1, &c.hosts);
    } else if (key == "switches" && c.kind == "ring") {
      ok = ok && ParseCount(value, 3, &c.switches);
    } else if (key == "leaves" && c.kind == "leaf-spine") {
      ok = ok && ParseCount(value, 1, &c.leaves);
    } else if (key == "spines" && (c.kind == "leaf-spine" || ai)) {
      ok = ok && ParseCount(value, 1, &c.spines);
    } else if ((key == "hosts-per-leaf" && (c.kind == "leaf-spine" || ai)) || (key == "hosts-per-segment" && ai)) {
      ok = ok && ParseCount(value, 1, &c.hosts_per_leaf);
    } else if (key == "planes" && ai) {
      ok = ok && ParseCount(value, 1, &c.planes) && c.planes <= 2;
    } else if (key == "oversub" && (c.kind == "leaf-spine" || ai)) {
      char* end = nullptr;
      c.oversubscription = std::strtod(value.c_str(), &end);
      ok = ok && !value.empty() && *end == '\0' && c.oversubscription >= 0.01 && c.oversubscription <= 1000;
    } else if (key == "k" && c.kind == "fat-tree") {
      ok = ok && ParseCount(value, 2, &c.k) && c.k % 2 == 0;
    } else {
      known = ParseCommonKey(key, value, &c, &ok);
    }
    if (!known) {
      *error = "topology " + c.kind + ": unknown parameter '" + key + "'";
      return false;
    }
    if (!ok) {
      *error = "topology " + c.kind + ": bad value in '" + item + "'" +
               (key == "lb"            ? " (load balancers: ecmp, eecmp, flowlet, ar, spray)"
                : key == "flowlet-gap" ? " (a duration above 0, e.g. 20us)"
                                       : "");
      return false;
    }
  }
  if (!CheckHostModel(c, error)) return false;
  const uint32_t n = std::max<uint32_t>(hosts_needed, 2);
  if (c.kind == "star") {
    c.hosts = c.hosts ? c.hosts : n;
  } else if (c.kind == "dumbbell") {
    c.hosts = c.hosts ? c.hosts : n + n % 2;
  } else if (c.kind == "ring") {
    c.switches = c.switches ? c.switches : std::max<uint32_t>(3, std::min<uint32_t>(4, n));
    c.hosts = c.hosts ? c.hosts : n;
  } else if (c.kind == "leaf-spine") {
    c.hosts_per_leaf = c.hosts_per_leaf ? c.hosts_per_leaf : std::min<uint32_t>(4, n);
    c.leaves = c.leaves ? c.leaves : std::max<uint32_t>(2, (n + c.hosts_per_leaf - 1) / c.hosts_per_leaf);
    c.spines = c.spines ? c.spines : 2;
  } else if (c.kind == "fat-tree" && !c.k) {
    c.k = 4;
    while (c.k * c.k * c.k / 4 < n) c.k += 2;
  } else if (ai) {
    c.hosts = c.hosts ? c.hosts : std::max<uint32_t>(hosts_needed, 1);
    c.hosts_per_leaf = c.hosts_per_leaf ? c.hosts_per_leaf : std::min<uint32_t>(4, c.hosts);
    c.spines = c.spines ? c.spines : c.host.gpus;
  }
  if (!c.faults.empty()) {
    TopologyGraph g;
    if (!BuildFabric(c, &g, error)) return false;
  }
  *out = c;
  return true;
}

bool TopologyGpusPerHost(const std::string& text, uint32_t* gpus, std::string* error) {
  TopologySpec spec;
  if (!ParseTopology(text, 1, &spec, error)) return false;
  *gpus = spec.host.gpus;
  return true;
}

uint32_t TopologySpec::HostCount() const {
  if (kind == "leaf-spine") return leaves * hosts_per_leaf;
  if (kind == "fat-tree") return k * k * k / 4;
  return hosts;
}

bool TopologySpec::Fits(uint32_t hosts_needed, std::string* error) const {
  if (HostCount() >= hosts_needed) return true;
  *error = "topology " + Describe() + " has " + std::to_string(HostCount()) + " hosts, the jobs need " +
           std::to_string(hosts_needed);
  return false;
}

std::string TopologySpec::Describe() const {
  std::ostringstream s;
  s << (preset.empty() ? kind : preset + " (" + kind + ")") << ": ";
  if (kind == "leaf-spine")
    s << leaves << " leaves x " << hosts_per_leaf << " hosts, " << spines << " spines, oversub " << oversubscription;
  else if (kind == "fat-tree")
    s << "k=" << k << ", " << HostCount() << " hosts";
  else if (kind == "ring")
    s << switches << " switches, " << hosts << " hosts";
  else if (AiFabric())
    s << hosts << " hosts in segments of " << hosts_per_leaf << ", " << planes << " plane" << (planes > 1 ? "s" : "")
      << " of " << spines << " spines, oversub " << oversubscription;
  else if (kind == "file")
    s << file << ", " << hosts << " hosts";
  else
    s << hosts << " hosts";
  if (host.gpus > 1)
    s << ", " << host.gpus << " GPUs per host on " << RateText(host.nvlink_bps) << " NVLink"
      << (host.domain > host.gpus ? " (domains of " + std::to_string(host.domain) + " GPUs)" : "") << ", "
      << host.ports << " port" << (host.ports > 1 ? "s" : "") << " per NIC";
  s << ", " << RateText(rate_bps) << " links, " << delay_ns / 1000.0 << " us delay";
  if (bottleneck_bps && (kind == "dumbbell" || kind == "ring")) s << ", bottleneck " << RateText(bottleneck_bps);
  if (!faults.empty()) s << ", " << faults.size() << " fault" << (faults.size() > 1 ? "s" : "");
  if (ecmp_seed) s << ", ECMP seed " << ecmp_seed;
  if (lb != LoadBalancer::kEcmp) s << ", load balancing " << LoadBalancerName(lb);
  if (lb == LoadBalancer::kFlowlet) s << " (gap " << flowlet_gap_ns / 1000.0 << " us)";
  return s.str();
}

TopologyGraph BuildTopology(const TopologySpec& c) {
  TopologyGraph g;
  std::string error;
  if (!BuildFabric(c, &g, &error)) std::abort();  // ParseTopology checked it; a spec made in code must be whole
  return g;
}

std::vector<uint32_t> TopologyGraph::HopsTo(uint32_t dst) const {
  std::vector<uint32_t> hops(names.size(), UINT32_MAX);
  std::deque<uint32_t> queue{dst};
  hops[dst] = 0;
  while (!queue.empty()) {
    const uint32_t n = queue.front();
    queue.pop_front();
    if (n != dst && !IsSwitch(n)) continue;
    for (const auto& [next, link] : adjacent[n])
      if (hops[next] == UINT32_MAX) {
        hops[next] = hops[n] + 1;
        queue.push_back(next);
      }
  }
  return hops;
}

namespace {

uint64_t Mix(uint64_t h) {  // MurmurHash3's 64-bit finaliser
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

}  // namespace

uint64_t FlowHash(uint32_t src_host, uint32_t dst_host, uint32_t job, uint32_t channel) {
  return Mix(Mix(uint64_t(src_host) << 32 | dst_host) ^ (uint64_t(job) << 32 | channel));
}

uint64_t EEcmpHash(uint32_t dst_host, uint64_t flow_hash) {
  return Mix((uint64_t(dst_host) << 24 | (flow_hash & 0xFFFFFF)) ^ 0xEECC0000000000ull);
}

uint32_t TopologyGraph::HashPick(uint32_t at, uint32_t count, uint64_t key) const {
  return uint32_t(Mix(key ^ (uint64_t(at) + 1) * 0x9E3779B97F4A7C15ull ^ ecmp_seed * 0xC2B2AE3D27D4EB4Full) % count);
}

std::vector<uint32_t> TopologyGraph::EqualCostLinks(uint32_t at, uint32_t dst, const std::vector<uint32_t>& hops) const {
  std::vector<uint32_t> out;
  if (at == dst || hops[at] == UINT32_MAX) return out;
  for (const auto& [next, link] : adjacent[at])
    if (hops[next] + 1 == hops[at] && (next == dst || IsSwitch(next))) out.push_back(link);
  return out;
}

std::vector<std::vector<uint32_t>> TopologyGraph::SprayStages(uint32_t src, uint32_t dst,
                                                             const std::vector<uint32_t>& hops) const {
  std::vector<std::vector<uint32_t>> stages;
  std::vector<uint32_t> at{src};  // the nodes this stage starts from, each with an equal share
  while (!(at.size() == 1 && at[0] == dst)) {
    std::vector<uint32_t> links, next;
    for (uint32_t n : at)
      for (uint32_t l : EqualCostLinks(n, dst, hops)) {
        const bool forward = this->links[l].a == n;
        links.push_back(2 * l + (forward ? 0 : 1));
        next.push_back(forward ? this->links[l].b : this->links[l].a);
      }
    if (links.empty()) return {};
    std::sort(next.begin(), next.end());
    next.erase(std::unique(next.begin(), next.end()), next.end());
    stages.push_back(std::move(links));
    at = std::move(next);
  }
  return stages;
}

uint32_t TopologyGraph::NextLink(uint32_t at, uint32_t dst, const std::vector<uint32_t>& hops,
                                 uint64_t flow_hash) const {
  if (at == dst || hops[at] == UINT32_MAX) return UINT32_MAX;
  uint32_t count = 0, pick = UINT32_MAX;
  auto downhill = [&](uint32_t next) { return hops[next] + 1 == hops[at] && (next == dst || IsSwitch(next)); };
  for (const auto& [next, link] : adjacent[at]) count += downhill(next);
  if (count == 0) return UINT32_MAX;
  uint64_t n = HashPick(at, count, lb == LoadBalancer::kEEcmp ? EEcmpHash(dst, flow_hash) : flow_hash);
  for (const auto& [next, link] : adjacent[at])
    if (downhill(next) && n-- == 0) {
      pick = link;
      break;
    }
  return pick;
}

std::vector<uint32_t> TopologyGraph::Route(uint32_t src, uint32_t dst, const std::vector<uint32_t>& hops,
                                           uint64_t flow_hash) const {
  std::vector<uint32_t> path;
  for (uint32_t at = src, link; (link = NextLink(at, dst, hops, flow_hash)) != UINT32_MAX;) {
    path.push_back(link);
    at = links[link].a == at ? links[link].b : links[link].a;
  }
  return path;
}

}  // namespace dltrace::models
