// Topology specs, their parser and the graphs they describe: the one place
// where star, dumbbell, ring, leaf-spine and fat-tree are defined.
#include "dltrace/models/topology.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <sstream>

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

const std::vector<std::string>& TopologyKinds() {
  static const std::vector<std::string> kinds = {"star", "dumbbell", "ring", "leaf-spine", "fat-tree"};
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

bool ParseTopology(const std::string& text, uint32_t hosts_needed, TopologySpec* out, std::string* error) {
  TopologySpec c;
  const size_t colon = text.find(':');
  c.kind = text.substr(0, colon);
  const auto& kinds = TopologyKinds();
  if (std::find(kinds.begin(), kinds.end(), c.kind) == kinds.end()) {
    *error = "unknown topology '" + c.kind + "' (one of star, dumbbell, ring, leaf-spine, fat-tree)";
    return false;
  }
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
    } else if (key == "hosts" && (c.kind == "star" || c.kind == "dumbbell" || c.kind == "ring")) {
      ok = ok && ParseCount(value, 1, &c.hosts);
    } else if (key == "switches" && c.kind == "ring") {
      ok = ok && ParseCount(value, 3, &c.switches);
    } else if (key == "leaves" && c.kind == "leaf-spine") {
      ok = ok && ParseCount(value, 1, &c.leaves);
    } else if (key == "spines" && c.kind == "leaf-spine") {
      ok = ok && ParseCount(value, 1, &c.spines);
    } else if (key == "hosts-per-leaf" && c.kind == "leaf-spine") {
      ok = ok && ParseCount(value, 1, &c.hosts_per_leaf);
    } else if (key == "oversub" && c.kind == "leaf-spine") {
      char* end = nullptr;
      c.oversubscription = std::strtod(value.c_str(), &end);
      ok = ok && !value.empty() && *end == '\0' && c.oversubscription >= 0.01 && c.oversubscription <= 1000;
    } else if (key == "k" && c.kind == "fat-tree") {
      ok = ok && ParseCount(value, 2, &c.k) && c.k % 2 == 0;
    } else {
      known = false;
    }
    if (!known) {
      *error = "topology " + c.kind + ": unknown parameter '" + key + "'";
      return false;
    }
    if (!ok) {
      *error = "topology " + c.kind + ": bad value in '" + item + "'";
      return false;
    }
  }
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
  }
  *out = c;
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
  s << kind << ": ";
  if (kind == "leaf-spine")
    s << leaves << " leaves x " << hosts_per_leaf << " hosts, " << spines << " spines, oversub " << oversubscription;
  else if (kind == "fat-tree")
    s << "k=" << k << ", " << HostCount() << " hosts";
  else if (kind == "ring")
    s << switches << " switches, " << hosts << " hosts";
  else
    s << hosts << " hosts";
  s << ", " << RateText(rate_bps) << " links, " << delay_ns / 1000.0 << " us delay";
  if (bottleneck_bps && (kind == "dumbbell" || kind == "ring")) s << ", bottleneck " << RateText(bottleneck_bps);
  return s.str();
}

TopologyGraph BuildTopology(const TopologySpec& c) {
  TopologyGraph g;
  g.hosts = c.HostCount();
  for (uint32_t h = 0; h < g.hosts; ++h) g.names.push_back("h" + std::to_string(h));
  auto add_switch = [&](const std::string& name) {
    g.names.push_back(name);
    return uint32_t(g.names.size() - 1);
  };
  auto connect = [&](uint32_t a, uint32_t b, uint64_t rate, bool host_link) {
    g.links.push_back({a, b, rate, c.delay_ns, host_link, g.names[a] + "-" + g.names[b]});
  };
  const uint64_t core = c.bottleneck_bps ? c.bottleneck_bps : c.rate_bps;
  if (c.kind == "star") {
    const uint32_t sw = add_switch("sw0");
    for (uint32_t h = 0; h < c.hosts; ++h) connect(h, sw, c.rate_bps, true);
  } else if (c.kind == "dumbbell") {
    const uint32_t left = add_switch("left"), right = add_switch("right");
    const uint32_t half = (c.hosts + 1) / 2;
    for (uint32_t h = 0; h < c.hosts; ++h) connect(h, h < half ? left : right, c.rate_bps, true);
    connect(left, right, core, false);
  } else if (c.kind == "ring") {
    const uint32_t first = uint32_t(g.names.size());
    for (uint32_t s = 0; s < c.switches; ++s) add_switch("sw" + std::to_string(s));
    const uint32_t per = (c.hosts + c.switches - 1) / c.switches;
    for (uint32_t h = 0; h < c.hosts; ++h) connect(h, first + h / per, c.rate_bps, true);
    for (uint32_t s = 0; s < c.switches; ++s) connect(first + s, first + (s + 1) % c.switches, core, false);
  } else if (c.kind == "leaf-spine") {
    const uint32_t first = uint32_t(g.names.size());
    for (uint32_t l = 0; l < c.leaves; ++l) add_switch("leaf" + std::to_string(l));
    for (uint32_t s = 0; s < c.spines; ++s) add_switch("spine" + std::to_string(s));
    // Uplink rate that gives the asked oversubscription: hosts' capacity over the leaf's uplink capacity.
    const double up = double(c.rate_bps) * c.hosts_per_leaf / (c.spines * c.oversubscription);
    for (uint32_t h = 0; h < g.hosts; ++h) connect(h, first + h / c.hosts_per_leaf, c.rate_bps, true);
    for (uint32_t l = 0; l < c.leaves; ++l)
      for (uint32_t s = 0; s < c.spines; ++s) connect(first + l, first + c.leaves + s, uint64_t(std::llround(up)), false);
  } else if (c.kind == "fat-tree") {
    const uint32_t half = c.k / 2, first = uint32_t(g.names.size());
    // Per pod: half edge, then half aggregation switches; then the cores.
    for (uint32_t p = 0; p < c.k; ++p) {
      for (uint32_t e = 0; e < half; ++e) add_switch("pod" + std::to_string(p) + "-edge" + std::to_string(e));
      for (uint32_t a = 0; a < half; ++a) add_switch("pod" + std::to_string(p) + "-agg" + std::to_string(a));
    }
    for (uint32_t x = 0; x < half * half; ++x) add_switch("core" + std::to_string(x));
    auto edge = [&](uint32_t p, uint32_t e) { return first + p * c.k + e; };
    auto agg = [&](uint32_t p, uint32_t a) { return first + p * c.k + half + a; };
    auto core_switch = [&](uint32_t x) { return first + c.k * c.k + x; };
    for (uint32_t h = 0; h < g.hosts; ++h) {
      const uint32_t e = h / half;  // global edge index
      connect(h, edge(e / half, e % half), c.rate_bps, true);
    }
    for (uint32_t p = 0; p < c.k; ++p) {
      for (uint32_t e = 0; e < half; ++e)
        for (uint32_t a = 0; a < half; ++a) connect(edge(p, e), agg(p, a), c.rate_bps, false);
      for (uint32_t a = 0; a < half; ++a)
        for (uint32_t j = 0; j < half; ++j) connect(agg(p, a), core_switch(a * half + j), c.rate_bps, false);
    }
  }
  g.adjacent.resize(g.names.size());
  for (uint32_t i = 0; i < g.links.size(); ++i) {
    g.adjacent[g.links[i].a].push_back({g.links[i].b, i});
    g.adjacent[g.links[i].b].push_back({g.links[i].a, i});
  }
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

uint32_t TopologyGraph::NextLink(uint32_t at, uint32_t dst, const std::vector<uint32_t>& hops,
                                 uint64_t flow_hash) const {
  if (at == dst || hops[at] == UINT32_MAX) return UINT32_MAX;
  uint32_t count = 0, pick = UINT32_MAX;
  auto downhill = [&](uint32_t next) { return hops[next] + 1 == hops[at] && (next == dst || IsSwitch(next)); };
  for (const auto& [next, link] : adjacent[at]) count += downhill(next);
  if (count == 0) return UINT32_MAX;
  uint64_t n = Mix(flow_hash ^ (uint64_t(at) + 1) * 0x9E3779B97F4A7C15ull) % count;
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
