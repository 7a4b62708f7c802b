// Data-centre topologies every simulator builds from one description: star
// (one switch), dumbbell, ring, leaf-spine (with oversubscription) and
// fat-tree, as a graph of hosts, switches and point-to-point links; the
// "KIND:key=value,..." spec parser with defaults sized to the hosts needed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dltrace::models {

struct TopologySpec {
  std::string kind = "star";        // star, dumbbell, ring, leaf-spine, fat-tree
  uint64_t rate_bps = 100000000000ull;  // host link rate (rate=)
  uint64_t delay_ns = 1000;         // every link's propagation delay (delay=)
  uint32_t hosts = 0;               // star, dumbbell (total), ring (total)
  uint32_t switches = 0;            // ring: switches on the ring
  uint32_t leaves = 0;              // leaf-spine
  uint32_t spines = 0;              // leaf-spine
  uint32_t hosts_per_leaf = 0;      // leaf-spine
  double oversubscription = 1.0;    // leaf-spine: host capacity / uplink capacity per leaf
  uint32_t k = 0;                   // fat-tree: ports per switch (even)
  uint64_t bottleneck_bps = 0;      // dumbbell (bottleneck=) and ring links; 0: rate

  // Host count this spec builds.
  uint32_t HostCount() const;
  // Whether it has the HOSTS_NEEDED hosts the jobs were placed on; false with one line in *error.
  bool Fits(uint32_t hosts_needed, std::string* error) const;
  // One line, e.g. "leaf-spine: 2 leaves x 4 hosts, 2 spines, oversub 1, 100 Gbit/s links, 1 us delay".
  std::string Describe() const;
};

// The kinds ParseTopology knows, for messages and help.
const std::vector<std::string>& TopologyKinds();

// Parses TEXT ("leaf-spine:hosts-per-leaf=4,oversub=2,rate=10Gbps"); what it
// leaves out is sized to HOSTS_NEEDED. False with a one-line *error otherwise.
bool ParseTopology(const std::string& text, uint32_t hosts_needed, TopologySpec* out, std::string* error);

// "100Gbps", "10G", "400Mbps", "1e9" (bit/s); "1us", "500ns", "2ms", "0.5s".
bool ParseRate(const std::string& text, uint64_t* bps);
bool ParseDuration(const std::string& text, uint64_t* ns);
// "100 Gbit/s", "400 Mbit/s".
std::string RateText(uint64_t bps);

struct TopologyLink {
  uint32_t a = 0, b = 0;  // nodes; a is on the lower tier (the host of a host link)
  uint64_t rate_bps = 0;
  uint64_t delay_ns = 0;
  bool host_link = false;
  std::string name;       // e.g. "h3-leaf0", "leaf1-spine0"
};

// Nodes 0 .. hosts-1 are the hosts ("h<i>"), the rest switches (names[i]).
struct TopologyGraph {
  uint32_t hosts = 0;
  std::vector<std::string> names;  // per node
  std::vector<TopologyLink> links;
  // Per node: (neighbour, link index), in link order.
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> adjacent;

  bool IsSwitch(uint32_t node) const { return node >= hosts; }
  // Hops from every node to host DST over switches (hosts never forward);
  // UINT32_MAX where DST cannot be reached. One search serves every route to DST.
  std::vector<uint32_t> HopsTo(uint32_t dst) const;
  // Per-flow ECMP, the one rule every simulator routes by, so the ns-3 module
  // and the flow engine put each connection on the same path: at node AT the
  // next link towards host DST (HOPS = HopsTo(DST)) among the equal-cost ones
  // (in link order), picked by FLOW_HASH mixed with AT (each switch hashes
  // independently, as real ones are salted against polarisation).
  // UINT32_MAX where AT is DST or cannot reach it.
  uint32_t NextLink(uint32_t at, uint32_t dst, const std::vector<uint32_t>& hops, uint64_t flow_hash) const;
  // The links of the path from host SRC to host DST that NextLink gives hop by
  // hop. Empty when SRC == DST or unreachable.
  std::vector<uint32_t> Route(uint32_t src, uint32_t dst, const std::vector<uint32_t>& hops, uint64_t flow_hash) const;
};

// The ECMP hash of one connection's direction: its source and destination
// hosts, its job (index in the simulation) and its channel. All endpoints of a
// job on one host share a job's connections to another host for this purpose.
uint64_t FlowHash(uint32_t src_host, uint32_t dst_host, uint32_t job, uint32_t channel);

TopologyGraph BuildTopology(const TopologySpec& spec);

}  // namespace dltrace::models
