// SPDX-License-Identifier: GPL-2.0-only
// The graphs topology specs describe: the classic kinds (star, dumbbell,
// ring, leaf-spine, fat-tree), AI-cluster fabrics (rail-optimized, dcn) with
// multi-GPU hosts and their scale-up domains, fabrics read from JSON files,
// faults, and the NIC rules (rail alignment, PXN) connections follow.
#include <algorithm>
#include <cmath>
#include <deque>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "dltrace/models/schedule.h"
#include "dltrace/models/topology.h"
#include "fabric.h"
#include "yaml_subset.h"

namespace dltrace::models {

bool CheckHostModel(const TopologySpec& c, std::string* error) {
  const HostModel& h = c.host;
  auto fail = [&](const std::string& what) {
    *error = "topology " + c.kind + ": " + what;
    return false;
  };
  if (h.domain && h.domain % h.gpus != 0)
    return fail("domain=" + std::to_string(h.domain) + " is not a whole number of hosts of " +
                std::to_string(h.gpus) + " GPUs");
  if (c.planes == 2 && h.ports != 2) return fail("planes=2 needs ports=2 (NIC port p goes to plane p)");
  if (!c.AiFabric() && h.ports != 1 && c.kind != "file")
    return fail("ports=2 (dual ToR) needs an AI fabric kind (rail-optimized, dcn, or a preset)");
  return true;
}

namespace {

// Builds a graph node by node: endpoints first (host-major), then scale-up
// domains, then the network's switches.
class FabricBuilder {
 public:
  FabricBuilder(const TopologySpec& spec, uint32_t hosts) : c_(spec) {
    g_.gpus_per_host = spec.host.gpus;
    g_.domain_gpus = spec.host.gpus > 1 || spec.host.domain > 1 ? spec.host.DomainGpus() : 1;
    g_.planes = spec.planes;
    g_.ecmp_seed = spec.ecmp_seed;
    g_.lb = spec.lb;
    g_.flowlet_gap_ns = spec.flowlet_gap_ns;
    g_.hosts = hosts * spec.host.gpus;
    for (uint32_t h = 0; h < hosts; ++h)
      for (uint32_t k = 0; k < spec.host.gpus; ++k)
        g_.names.push_back(spec.host.gpus == 1 ? "h" + std::to_string(h)
                                               : "h" + std::to_string(h) + ".g" + std::to_string(k));
    if (g_.domain_gpus > 1) {
      const uint32_t domains = (g_.hosts + g_.domain_gpus - 1) / g_.domain_gpus;
      const uint32_t first = uint32_t(g_.names.size());
      for (uint32_t d = 0; d < domains; ++d)
        AddSwitch(g_.domain_gpus == spec.host.gpus ? "h" + std::to_string(d) + ".nvs" : "nvl" + std::to_string(d));
      for (uint32_t e = 0; e < g_.hosts; ++e) {
        Connect(e, first + e / g_.domain_gpus, spec.host.nvlink_bps, spec.host.nvlink_delay_ns);
        g_.links.back().scale_up = true;
      }
    }
  }

  uint32_t AddSwitch(const std::string& name) {
    g_.names.push_back(name);
    return uint32_t(g_.names.size() - 1);
  }
  void Connect(uint32_t a, uint32_t b, uint64_t rate, uint64_t delay_ns, int32_t plane = 0) {
    TopologyLink l;
    l.a = a;
    l.b = b;
    l.rate_bps = rate;
    l.delay_ns = delay_ns;
    l.plane = plane;
    l.name = g_.names[a] + "-" + g_.names[b];
    g_.links.push_back(std::move(l));
  }
  // GPU K of host H's NIC port to switch SW.
  void ConnectNic(uint32_t h, uint32_t k, uint32_t sw, uint64_t rate, int32_t plane = 0) {
    Connect(h * c_.host.gpus + k, sw, rate, c_.delay_ns, plane);
    g_.links.back().host_link = true;
    g_.links.back().rail = int32_t(k);
  }
  // Every GPU of host H to switch SW (the classic kinds: the host's link, one per GPU).
  void ConnectHost(uint32_t h, uint32_t sw, uint64_t rate) {
    for (uint32_t k = 0; k < c_.host.gpus; ++k) ConnectNic(h, k, sw, rate);
  }
  TopologyGraph& graph() { return g_; }

 private:
  const TopologySpec& c_;
  TopologyGraph g_;
};

void BuildClassic(const TopologySpec& c, FabricBuilder& b) {
  const uint32_t hosts = c.HostCount();
  const uint64_t core = c.bottleneck_bps ? c.bottleneck_bps : c.rate_bps;
  auto connect = [&](uint32_t x, uint32_t y, uint64_t rate) { b.Connect(x, y, rate, c.delay_ns); };
  if (c.kind == "star") {
    const uint32_t sw = b.AddSwitch("sw0");
    for (uint32_t h = 0; h < hosts; ++h) b.ConnectHost(h, sw, c.rate_bps);
  } else if (c.kind == "dumbbell") {
    const uint32_t left = b.AddSwitch("left"), right = b.AddSwitch("right");
    const uint32_t half = (hosts + 1) / 2;
    for (uint32_t h = 0; h < hosts; ++h) b.ConnectHost(h, h < half ? left : right, c.rate_bps);
    connect(left, right, core);
  } else if (c.kind == "ring") {
    const uint32_t first = uint32_t(b.graph().names.size());
    for (uint32_t s = 0; s < c.switches; ++s) b.AddSwitch("sw" + std::to_string(s));
    const uint32_t per = (hosts + c.switches - 1) / c.switches;
    for (uint32_t h = 0; h < hosts; ++h) b.ConnectHost(h, first + h / per, c.rate_bps);
    for (uint32_t s = 0; s < c.switches; ++s) connect(first + s, first + (s + 1) % c.switches, core);
  } else if (c.kind == "leaf-spine") {
    const uint32_t first = uint32_t(b.graph().names.size());
    for (uint32_t l = 0; l < c.leaves; ++l) b.AddSwitch("leaf" + std::to_string(l));
    for (uint32_t s = 0; s < c.spines; ++s) b.AddSwitch("spine" + std::to_string(s));
    // Uplink rate that gives the asked oversubscription: hosts' capacity over the leaf's uplink capacity.
    const double up = double(c.rate_bps) * c.hosts_per_leaf * c.host.gpus / (c.spines * c.oversubscription);
    for (uint32_t h = 0; h < hosts; ++h) b.ConnectHost(h, first + h / c.hosts_per_leaf, c.rate_bps);
    for (uint32_t l = 0; l < c.leaves; ++l)
      for (uint32_t s = 0; s < c.spines; ++s) connect(first + l, first + c.leaves + s, uint64_t(std::llround(up)));
  } else if (c.kind == "fat-tree") {
    const uint32_t half = c.k / 2, first = uint32_t(b.graph().names.size());
    // Per pod: half edge, then half aggregation switches; then the cores.
    for (uint32_t p = 0; p < c.k; ++p) {
      for (uint32_t e = 0; e < half; ++e) b.AddSwitch("pod" + std::to_string(p) + "-edge" + std::to_string(e));
      for (uint32_t a = 0; a < half; ++a) b.AddSwitch("pod" + std::to_string(p) + "-agg" + std::to_string(a));
    }
    for (uint32_t x = 0; x < half * half; ++x) b.AddSwitch("core" + std::to_string(x));
    auto edge = [&](uint32_t p, uint32_t e) { return first + p * c.k + e; };
    auto agg = [&](uint32_t p, uint32_t a) { return first + p * c.k + half + a; };
    auto core_switch = [&](uint32_t x) { return first + c.k * c.k + x; };
    for (uint32_t h = 0; h < hosts; ++h) {
      const uint32_t e = h / half;  // global edge index
      b.ConnectHost(h, edge(e / half, e % half), c.rate_bps);
    }
    for (uint32_t p = 0; p < c.k; ++p) {
      for (uint32_t e = 0; e < half; ++e)
        for (uint32_t a = 0; a < half; ++a) connect(edge(p, e), agg(p, a), c.rate_bps);
      for (uint32_t a = 0; a < half; ++a)
        for (uint32_t j = 0; j < half; ++j) connect(agg(p, a), core_switch(a * half + j), c.rate_bps);
    }
  }
}

// Rail-optimized and dcn fabrics: segments of hosts_per_leaf hosts; per plane
// and segment, one leaf per rail (rail-optimized) or one for the segment
// (dcn), doubled for dual ToR (ports=2 in one plane); every leaf to every
// spine of its plane. NIC port P goes to plane P with two planes, else to ToR P.
void BuildAiFabric(const TopologySpec& c, FabricBuilder& b) {
  const uint32_t hosts = c.hosts, gpus = c.host.gpus, ports = c.host.ports;
  const uint32_t segments = (hosts + c.hosts_per_leaf - 1) / c.hosts_per_leaf;
  const uint32_t tors = c.planes == 2 ? 1 : ports;  // ToRs a rail (or segment) has per plane
  const uint32_t rails = c.RailOptimized() ? gpus : 1;
  auto leaf_name = [&](uint32_t p, uint32_t s, uint32_t r, uint32_t t) {
    std::string n = "p" + std::to_string(p) + ".s" + std::to_string(s);
    if (c.RailOptimized()) n += ".r" + std::to_string(r);
    if (tors > 1) n += ".t" + std::to_string(t);
    return n;
  };
  // leaf[((p * segments + s) * rails + r) * tors + t]
  std::vector<uint32_t> leaf;
  for (uint32_t p = 0; p < c.planes; ++p)
    for (uint32_t s = 0; s < segments; ++s)
      for (uint32_t r = 0; r < rails; ++r)
        for (uint32_t t = 0; t < tors; ++t) leaf.push_back(b.AddSwitch(leaf_name(p, s, r, t)));
  std::vector<uint32_t> spine;
  for (uint32_t p = 0; p < c.planes; ++p)
    for (uint32_t x = 0; x < c.spines; ++x) spine.push_back(b.AddSwitch("p" + std::to_string(p) + ".spine" + std::to_string(x)));
  for (uint32_t h = 0; h < hosts; ++h)
    for (uint32_t k = 0; k < gpus; ++k)
      for (uint32_t port = 0; port < ports; ++port) {
        const uint32_t p = c.planes == 2 ? port : 0, t = c.planes == 2 ? 0 : port;
        const uint32_t s = h / c.hosts_per_leaf, r = c.RailOptimized() ? k : 0;
        b.ConnectNic(h, k, leaf[((p * segments + s) * rails + r) * tors + t], c.rate_bps, int32_t(p));
      }
  // A leaf's downlink capacity over its uplinks' gives the oversubscription.
  const double down = double(c.rate_bps) * c.hosts_per_leaf * (c.RailOptimized() ? 1 : gpus);
  const uint64_t up = uint64_t(std::llround(down / (c.spines * c.oversubscription)));
  for (uint32_t p = 0; p < c.planes; ++p)
    for (uint32_t i = 0; i < segments * rails * tors; ++i)
      for (uint32_t x = 0; x < c.spines; ++x)
        b.Connect(leaf[p * segments * rails * tors + i], spine[p * c.spines + x], up, c.delay_ns, int32_t(p));
}

void Index(TopologyGraph* g) {
  g->adjacent.assign(g->names.size(), {});
  g->scale_up_link.assign(g->domain_gpus > 1 ? g->hosts : 0, UINT32_MAX);
  for (uint32_t i = 0; i < g->links.size(); ++i) {
    if (g->links[i].scale_up) g->scale_up_link[g->links[i].a] = i;
    g->adjacent[g->links[i].a].push_back({g->links[i].b, i});
    g->adjacent[g->links[i].b].push_back({g->links[i].a, i});
  }
}

bool ApplyFaults(const std::vector<FabricFault>& faults, TopologyGraph* g, std::string* error) {
  if (faults.empty()) return true;
  std::vector<double> fraction(g->links.size(), 1.0);
  for (const auto& f : faults) {
    bool found = false;
    for (size_t i = 0; i < g->links.size(); ++i) {
      const auto& l = g->links[i];
      if (l.name == f.name || g->names[l.a] == f.name || g->names[l.b] == f.name) {
        fraction[i] = std::min(fraction[i], f.fraction);
        found = true;
      }
    }
    if (!found) {
      *error = "fault '" + f.name + "': no link or switch of that name in the fabric (links are named like '" +
               (g->links.empty() ? std::string("a-b") : g->links.front().name) + "')";
      return false;
    }
  }
  std::vector<TopologyLink> kept;
  for (size_t i = 0; i < g->links.size(); ++i) {
    if (fraction[i] <= 0) continue;
    kept.push_back(g->links[i]);
    kept.back().rate_bps = uint64_t(std::llround(double(kept.back().rate_bps) * fraction[i]));
  }
  g->links = std::move(kept);
  return true;
}

// Every GPU still has a NIC link (a fault can take all of a host's ports).
bool EveryGpuHasANic(const TopologyGraph& g, const std::string& what, std::string* error) {
  std::vector<bool> nic(g.hosts, false);
  for (const auto& l : g.links)
    if (l.host_link) nic[l.a] = true;
  for (uint32_t e = 0; e < g.hosts; ++e)
    if (!nic[e]) {
      *error = what + ": GPU " + g.names[e] + " has no NIC link";
      return false;
    }
  return true;
}

}  // namespace

bool BuildFabric(const TopologySpec& c, TopologyGraph* out, std::string* error) {
  if (c.kind == "file") {
    if (!c.file_graph) {
      *error = "topology file: not read";
      return false;
    }
    *out = *c.file_graph;
    out->ecmp_seed = c.ecmp_seed;
    out->lb = c.lb;
    out->flowlet_gap_ns = c.flowlet_gap_ns;
  } else {
    FabricBuilder b(c, c.HostCount());
    if (c.AiFabric()) BuildAiFabric(c, b);
    else BuildClassic(c, b);
    *out = std::move(b.graph());
  }
  if (!ApplyFaults(c.faults, out, error)) return false;
  if (!c.faults.empty() && !EveryGpuHasANic(*out, "after the faults", error)) return false;
  Index(out);
  return true;
}

namespace {

// "400Gbps" or a number of bit/s; "500ns" or a number of nanoseconds.
bool JsonRate(const nlohmann::json& v, uint64_t* bps) {
  if (v.is_number()) {
    const double d = v.get<double>();
    *bps = d >= 1 ? uint64_t(std::llround(d)) : 0;
    return d >= 1;
  }
  return v.is_string() && ParseRate(v.get<std::string>(), bps);
}
bool JsonDuration(const nlohmann::json& v, uint64_t* ns) {
  if (v.is_number()) {
    const double d = v.get<double>();
    *ns = d >= 0 ? uint64_t(std::llround(d)) : 0;
    return d >= 0;
  }
  return v.is_string() && ParseDuration(v.get<std::string>(), ns);
}

}  // namespace

// A fabric file (docs: reference "Fabric files"):
//   {"hosts": 4, "gpus_per_host": 8, "nvlink": "3600Gbps", "nvlink_delay": "25ns",
//    "domain": 8, "rate": "400Gbps", "delay": "500ns",
//    "switches": ["leaf0", {"name": "spine0", "plane": 0}],
//    "links": [["h0.g0", "leaf0"], {"a": "leaf0", "b": "spine0", "rate": "800Gbps", "delay": "1us"}]}
// GPUs are named h<host>.g<k> (h<host> with one GPU per host); the NVLink
// links are implied by the host model; every other link is listed.
bool ParseFabricFile(const std::string& path, const std::string& overrides, uint32_t hosts_needed,
                     TopologySpec* out, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "topology file " + path + ": cannot open it";
    return false;
  }
  nlohmann::json j;
  const bool yaml = path.size() > 5 && (path.compare(path.size() - 5, 5, ".yaml") == 0 ||
                                        path.compare(path.size() - 4, 4, ".yml") == 0);
  if (yaml) {
    std::string what;
    if (!ParseYamlSubset(in, &j, &what)) {
      *error = "topology file " + path + ": not the YAML a fabric file is written in (" + what + ")";
      return false;
    }
  } else {
    try {
      j = nlohmann::json::parse(in);
    } catch (const std::exception& e) {
      std::string what = e.what();
      *error = "topology file " + path + ": not JSON (" + what.substr(what.find(']') + 2) + ")";
      return false;
    }
  }
  auto fail = [&](const std::string& what) {
    *error = "topology file " + path + ": " + what;
    return false;
  };
  if (!j.is_object()) return fail("the top level must be an object");
  static const std::vector<std::string> keys = {"hosts",    "gpus_per_host", "nvlink", "nvlink_delay",
                                                "domain",   "rate",          "delay",  "switches",
                                                "links",    "ports",         "lb",     "flowlet_gap"};
  for (const auto& [key, value] : j.items())
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) return fail("unknown key '" + key + "'");
  TopologySpec c;
  c.kind = "file";
  c.file = path;
  try {
    c.hosts = j.value("hosts", 0u);
    c.host.gpus = j.value("gpus_per_host", 1u);
    c.host.domain = j.value("domain", 0u);
    c.host.ports = j.value("ports", 1u);
  } catch (const std::exception&) {
    return fail("hosts, gpus_per_host, domain and ports must be whole numbers");
  }
  if (c.hosts == 0) return fail("'hosts' must be a positive number");
  if (c.host.gpus == 0) return fail("'gpus_per_host' must be a positive number");
  if (j.contains("nvlink") && !JsonRate(j["nvlink"], &c.host.nvlink_bps)) return fail("bad 'nvlink' rate");
  if (j.contains("nvlink_delay") && !JsonDuration(j["nvlink_delay"], &c.host.nvlink_delay_ns))
    return fail("bad 'nvlink_delay'");
  if (j.contains("rate") && !JsonRate(j["rate"], &c.rate_bps)) return fail("bad default 'rate'");
  if (j.contains("delay") && !JsonDuration(j["delay"], &c.delay_ns)) return fail("bad default 'delay'");
  if (j.contains("lb") && !(j["lb"].is_string() && ParseLoadBalancer(j["lb"].get<std::string>(), &c.lb)))
    return fail("bad 'lb' (one of ecmp, eecmp, flowlet, ar, spray)");
  if (j.contains("flowlet_gap") && !(JsonDuration(j["flowlet_gap"], &c.flowlet_gap_ns) && c.flowlet_gap_ns > 0))
    return fail("bad 'flowlet_gap' (a duration above 0)");
  if (!CheckHostModel(c, error)) return fail(error->substr(error->find(": ") + 2));

  // Overrides from the spec: faults, and the host model's NVLink.
  std::stringstream ss(overrides);
  for (std::string item; std::getline(ss, item, ',');) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    bool ok = eq != std::string::npos;
    const std::string key = item.substr(0, eq);
    if ((key != "fail" && key != "degrade" && key != "nvlink" && key != "nvlink-delay" && key != "seed" &&
         key != "lb" && key != "flowlet-gap") ||
        !ParseCommonKey(key, ok ? item.substr(eq + 1) : "", &c, &ok))
      return fail("unknown parameter '" + key +
                  "' after the file name (fail, degrade, nvlink, nvlink-delay, seed, lb, flowlet-gap)");
    if (!ok) return fail("bad value in '" + item + "'");
  }

  FabricBuilder b(c, c.hosts);
  std::map<std::string, uint32_t> node;
  for (uint32_t i = 0; i < b.graph().names.size(); ++i) node[b.graph().names[i]] = i;
  std::map<uint32_t, int32_t> plane_of;
  if (j.contains("switches")) {
    if (!j["switches"].is_array()) return fail("'switches' must be a list");
    for (const auto& s : j["switches"]) {
      std::string name;
      int32_t plane = 0;
      if (s.is_string()) {
        name = s.get<std::string>();
      } else if (s.is_object() && s.contains("name") && s["name"].is_string()) {
        name = s["name"].get<std::string>();
        if (s.contains("plane")) {
          if (!s["plane"].is_number_unsigned()) return fail("switch " + name + ": 'plane' must be 0 or more");
          plane = s["plane"].get<int32_t>();
        }
      } else {
        return fail("a switch must be a name or {\"name\": ..., \"plane\": ...}");
      }
      if (node.count(name)) return fail("node '" + name + "' is named twice");
      const uint32_t id = b.AddSwitch(name);
      node[name] = id;
      plane_of[id] = plane;
      c.planes = std::max<uint32_t>(c.planes, uint32_t(plane) + 1);
    }
  }
  if (!j.contains("links") || !j["links"].is_array()) return fail("'links' must be a list");
  const uint32_t gpus = c.host.gpus;
  for (const auto& l : j["links"]) {
    std::string a, bname;
    uint64_t rate = c.rate_bps, delay = c.delay_ns;
    bool ok = true;
    if (l.is_array() && l.size() >= 2 && l.size() <= 4 && l[0].is_string() && l[1].is_string()) {
      a = l[0].get<std::string>();
      bname = l[1].get<std::string>();
      if (l.size() > 2) ok = ok && JsonRate(l[2], &rate);
      if (l.size() > 3) ok = ok && JsonDuration(l[3], &delay);
    } else if (l.is_object() && l.contains("a") && l.contains("b") && l["a"].is_string() && l["b"].is_string()) {
      a = l["a"].get<std::string>();
      bname = l["b"].get<std::string>();
      if (l.contains("rate")) ok = ok && JsonRate(l["rate"], &rate);
      if (l.contains("delay")) ok = ok && JsonDuration(l["delay"], &delay);
    } else {
      return fail("a link must be [A, B, RATE?, DELAY?] or {\"a\":..., \"b\":..., \"rate\":..., \"delay\":...}");
    }
    const std::string name = a + "-" + bname;
    if (!ok) return fail("link " + name + ": bad rate or delay (rate 0 is not a link; use a fault to fail one)");
    for (const std::string& n : {a, bname})
      if (!node.count(n)) return fail("link " + name + ": unknown node '" + n + "'");
    uint32_t x = node[a], y = node[bname];
    const TopologyGraph& g = b.graph();
    if (!g.IsSwitch(x) && !g.IsSwitch(y))
      return fail("link " + name + ": joins two GPUs (GPUs of a host share their NVLink domain; list NIC links)");
    if (g.IsSwitch(x) && !g.IsSwitch(y)) std::swap(x, y);
    if (!g.IsSwitch(x)) {
      if (!plane_of.count(y)) return fail("link " + name + ": a GPU's NIC must reach a listed switch");
      b.ConnectNic(x / gpus, x % gpus, y, rate, plane_of[y]);
      b.graph().links.back().delay_ns = delay;
    } else {
      if (!plane_of.count(x) || !plane_of.count(y)) return fail("link " + name + ": a scale-up switch is implied");
      b.Connect(x, y, rate, delay, plane_of[x]);
    }
  }
  TopologyGraph g = std::move(b.graph());
  if (!EveryGpuHasANic(g, "topology file " + path, error)) return false;
  // Every listed switch is reached from the GPUs over the network (not over NVLink).
  std::vector<bool> seen(g.names.size(), false);
  std::deque<uint32_t> queue;
  for (uint32_t e = 0; e < g.hosts; ++e) {
    seen[e] = true;
    queue.push_back(e);
  }
  Index(&g);
  while (!queue.empty()) {
    const uint32_t n = queue.front();
    queue.pop_front();
    for (const auto& [next, link] : g.adjacent[n])
      if (!seen[next] && !g.links[link].scale_up) {
        seen[next] = true;
        queue.push_back(next);
      }
  }
  for (const auto& [id, plane] : plane_of)
    if (!seen[id]) return fail("switch " + g.names[id] + " is disconnected (no link reaches it from a GPU)");
  c.file_graph = std::make_shared<const TopologyGraph>(std::move(g));
  if (c.hosts < hosts_needed) return c.Fits(hosts_needed, error);
  if (!c.faults.empty()) {
    TopologyGraph check;
    if (!BuildFabric(c, &check, error)) return false;
  }
  *out = c;
  return true;
}

double FabricLoad::Imbalance(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double sum = 0, most = 0;
  for (double x : v) {
    sum += x;
    most = std::max(most, x);
  }
  return sum > 0 ? most / (sum / double(v.size())) : 0;
}

FabricLoad ComputeFabricLoad(const TopologyGraph& g, const std::vector<double>& bytes) {
  FabricLoad load;
  load.per_nic.assign(g.hosts, 0);
  load.per_rail.assign(g.gpus_per_host, 0);
  load.per_plane.assign(g.planes, 0);
  for (uint32_t i = 0; i < g.links.size() && 2 * i + 1 < bytes.size(); ++i) {
    const TopologyLink& l = g.links[i];
    if (l.scale_up) load.nvlink_sent += bytes[2 * i];
    if (!l.host_link) continue;
    FabricLoad::Port p{i, l.a, l.rail, l.plane, bytes[2 * i], bytes[2 * i + 1]};
    load.nic_sent += p.sent;
    load.per_nic[l.a] += p.sent;
    if (p.rail >= 0 && size_t(p.rail) < load.per_rail.size()) load.per_rail[size_t(p.rail)] += p.sent;
    if (size_t(p.plane) < load.per_plane.size()) load.per_plane[size_t(p.plane)] += p.sent;
    load.ports.push_back(p);
  }
  return load;
}

std::pair<uint32_t, uint32_t> ConnectionRelays(const TopologyGraph& g, uint32_t src, uint32_t dst, uint32_t channel,
                                               RailMode mode) {
  if (mode == RailMode::kDirect || g.gpus_per_host == 1 || g.domain_gpus == 1 || g.SameDomain(src, dst))
    return {src, dst};
  const uint32_t src_base = g.MachineOf(src) * g.gpus_per_host, dst_base = g.MachineOf(dst) * g.gpus_per_host;
  if (mode == RailMode::kRail) {
    // A ring edge between GPUs of one rail stays on it (a data-parallel
    // group of one GPU per host uses that GPU's NIC, as NCCL's search finds).
    if (g.RailOf(src) == g.RailOf(dst)) return {src, dst};
    const uint32_t rail = NcclChannelOf(channel) % g.gpus_per_host;  // queue pairs share their channel's NIC
    return {src_base + rail, dst_base + rail};
  }
  return {src_base + g.RailOf(dst), dst};  // kPxn
}

std::vector<uint32_t> ConnectionPath(const TopologyGraph& g, uint32_t src, uint32_t dst, uint32_t channel,
                                     RailMode mode, uint64_t flow_hash,
                                     const std::function<const std::vector<uint32_t>&(uint32_t)>& hops_to) {
  // Within a scale-up domain NCCL always uses NVLink, even where a ToR would
  // be as short (a dcn host's GPUs share their ToR).
  auto scale_up = [&](uint32_t a, uint32_t b, std::vector<uint32_t>* path) {
    if (a == b) return;
    path->push_back(g.scale_up_link[a]);
    path->push_back(g.scale_up_link[b]);
  };
  std::vector<uint32_t> path;
  if (g.SameDomain(src, dst)) {
    scale_up(src, dst, &path);
    return path;
  }
  const auto [out, in] = ConnectionRelays(g, src, dst, channel, mode);
  scale_up(src, out, &path);
  const std::vector<uint32_t> network = g.Route(out, in, hops_to(in), flow_hash);
  if (network.empty()) return {};
  path.insert(path.end(), network.begin(), network.end());
  scale_up(in, dst, &path);
  return path;
}

std::vector<std::vector<uint32_t>> ConnectionStages(
    const TopologyGraph& g, uint32_t src, uint32_t dst, uint32_t channel, RailMode mode,
    const std::function<const std::vector<uint32_t>&(uint32_t)>& hops_to) {
  // A GPU is its NVLink's end a: up is a to b, down b to a.
  auto scale_up = [&](uint32_t a, uint32_t b, std::vector<std::vector<uint32_t>>* stages) {
    if (a == b) return;
    stages->push_back({2 * g.scale_up_link[a]});
    stages->push_back({2 * g.scale_up_link[b] + 1});
  };
  std::vector<std::vector<uint32_t>> stages;
  if (src == dst) return stages;
  if (g.SameDomain(src, dst)) {
    scale_up(src, dst, &stages);
    return stages;
  }
  const auto [out, in] = ConnectionRelays(g, src, dst, channel, mode);
  scale_up(src, out, &stages);
  std::vector<std::vector<uint32_t>> network = g.SprayStages(out, in, hops_to(in));
  if (network.empty()) return {};
  for (auto& stage : network) stages.push_back(std::move(stage));
  scale_up(in, dst, &stages);
  return stages;
}

}  // namespace dltrace::models
