// SPDX-License-Identifier: GPL-2.0-only
// The fabric every simulator and `place` build from one description: hosts
// with GPUs (the endpoints), their scale-up domain (NVSwitch) and NICs with
// one or two ports; switches in planes; point-to-point links. Classic kinds
// (star, dumbbell, ring, leaf-spine, fat-tree: one GPU, one link per host),
// AI-cluster kinds (rail-optimized, not rail-optimized "dcn") with presets
// (spectrum-x, hpn, dcn) and fabrics read from a JSON file; the
// "KIND:key=value,..." spec parser with defaults sized to the hosts needed;
// faults; and the routing rules both simulators share.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dltrace::models {

struct TopologyGraph;

// Hosts: GPUS endpoints each, joined by a scale-up domain of DOMAIN GPUs (an
// NVSwitch node; DOMAIN > GPUS spans hosts, NVL72), one NIC per GPU with
// PORTS ports (2: dual ToR, or one port per plane).
struct HostModel {
  uint32_t gpus = 1;                       // gpus=
  uint32_t domain = 0;                     // domain= GPUs per scale-up domain (0: gpus)
  uint32_t ports = 1;                      // ports= per NIC (1 or 2)
  uint64_t nvlink_bps = 3600000000000ull;  // nvlink= per GPU per direction (450 GB/s, NVLink 4)
  uint64_t nvlink_delay_ns = 25;           // nvlink-delay=
  uint32_t DomainGpus() const { return domain ? domain : gpus; }
};

// A fault applied after the fabric is built: the named link (or every link
// of the named switch) at FRACTION of its rate; 0 removes it.
struct FabricFault {
  std::string name;   // a link name ("h0.g1-p0.s0.r1") or a switch name ("p0.s0.r1")
  double fraction = 0;
};

// How switches spread traffic over the equal-cost next links (lb=): the
// rule both simulators share (docs/reference/topology.md "Load balancing").
enum class LoadBalancer : uint8_t {
  kEcmp,      // per-flow hash of the connection (FlowHash, its 5-tuple), salted by seed=
  kEEcmp,     // per-flow hash of the destination host and queue pair number (E-ECMP)
  kFlowlet,   // a flow keeps its port until it pauses flowlet-gap=, then takes the least-loaded one
  kAdaptive,  // per packet, the equal-cost port with the fewest queued bytes (adaptive routing)
  kSpray,     // per packet, a hash of the packet's sequence number (oblivious spraying)
};
// "ecmp", "eecmp", "flowlet", "ar", "spray".
bool ParseLoadBalancer(const std::string& text, LoadBalancer* out);
const char* LoadBalancerName(LoadBalancer lb);
// Whether LB may put one flow's packets on several paths (they may arrive out of order).
inline bool SpreadsFlows(LoadBalancer lb) { return lb == LoadBalancer::kAdaptive || lb == LoadBalancer::kSpray; }

struct TopologySpec {
  // star, dumbbell, ring, leaf-spine, fat-tree; rail-optimized, dcn; file
  // (the fabric of a JSON file, `file` below).
  std::string kind = "star";
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
  HostModel host;                   // gpus=, domain=, ports=, nvlink=, nvlink-delay=
  // rail-optimized and dcn: hosts, hosts_per_leaf (hosts per segment: a leaf
  // group), spines (per plane), oversubscription (leaf downlink / uplink
  // capacity), planes (1 or 2; with 2, NIC port p goes to plane p).
  uint32_t planes = 1;
  uint64_t ecmp_seed = 0;           // seed= mixed into every switch's ECMP hash (0: as before)
  LoadBalancer lb = LoadBalancer::kEcmp;  // lb=
  uint64_t flowlet_gap_ns = 20000;        // flowlet-gap= (lb=flowlet): the idle time that starts a new flowlet
  std::string preset;               // spectrum-x, hpn, dcn: what the defaults came from
  std::string file;                 // kind "file": the JSON fabric's path
  std::shared_ptr<const TopologyGraph> file_graph;  // kind "file": what it describes, checked
  std::vector<FabricFault> faults;  // fail=NAME, degrade=NAME@FRACTION (repeatable)

  bool RailOptimized() const { return kind == "rail-optimized"; }
  bool AiFabric() const { return kind == "rail-optimized" || kind == "dcn"; }

  // Host count this spec builds (machines; GPUs are HostCount() * host.gpus).
  uint32_t HostCount() const;
  // Whether it has the HOSTS_NEEDED hosts the jobs were placed on; false with one line in *error.
  bool Fits(uint32_t hosts_needed, std::string* error) const;
  // One line, e.g. "leaf-spine: 2 leaves x 4 hosts, 2 spines, oversub 1, 100 Gbit/s links, 1 us delay".
  std::string Describe() const;
};

// The kinds and presets ParseTopology knows, for messages and help.
const std::vector<std::string>& TopologyKinds();

// Parses TEXT ("leaf-spine:hosts-per-leaf=4,oversub=2,rate=10Gbps",
// "spectrum-x:hosts=16", "rail-optimized:gpus=8,planes=2,ports=2", or a
// path ending in .json); what it leaves out is sized to HOSTS_NEEDED hosts.
// False with a one-line *error otherwise.
bool ParseTopology(const std::string& text, uint32_t hosts_needed, TopologySpec* out, std::string* error);

// GPUs per host of the fabric TEXT describes, before it is sized: placement
// needs it to count hosts. False with a one-line *error for a bad spec.
bool TopologyGpusPerHost(const std::string& text, uint32_t* gpus, std::string* error);

// "100Gbps", "10G", "400Mbps", "1e9" (bit/s); "1us", "500ns", "2ms", "0.5s".
bool ParseRate(const std::string& text, uint64_t* bps);
bool ParseDuration(const std::string& text, uint64_t* ns);
// "100 Gbit/s", "400 Mbit/s".
std::string RateText(uint64_t bps);

struct TopologyLink {
  uint32_t a = 0, b = 0;  // nodes; a is on the lower tier (the GPU of a NIC or NVLink link)
  uint64_t rate_bps = 0;
  uint64_t delay_ns = 0;
  bool host_link = false;  // a NIC port's link (GPU to its first switch)
  bool scale_up = false;   // a GPU's NVLink to its scale-up domain
  int32_t rail = -1;       // NIC links: the GPU's index in its host (its NIC, its rail)
  int32_t plane = 0;       // the switch plane the link is in
  std::string name;        // e.g. "h3-leaf0", "leaf1-spine0", "h3.g5-p0.s0.r5"
};

// Nodes 0 .. hosts-1 are the endpoints ("h<i>" with one GPU per host,
// "h<i>.g<k>" with several: GPU k of host i is node i * gpus_per_host + k),
// the rest switches (names[i]): scale-up domains first, then the network's.
struct TopologyGraph {
  uint32_t hosts = 0;              // endpoint nodes (GPUs)
  uint32_t gpus_per_host = 1;
  uint32_t domain_gpus = 1;        // GPUs per scale-up domain (1: none)
  uint32_t planes = 1;
  uint64_t ecmp_seed = 0;          // TopologySpec::ecmp_seed
  LoadBalancer lb = LoadBalancer::kEcmp;  // TopologySpec::lb
  uint64_t flowlet_gap_ns = 20000;        // TopologySpec::flowlet_gap_ns
  std::vector<std::string> names;  // per node
  std::vector<TopologyLink> links;
  // Per node: (neighbour, link index), in link order.
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> adjacent;
  std::vector<uint32_t> scale_up_link;  // per endpoint its NVLink link (with a scale-up domain)

  bool IsSwitch(uint32_t node) const { return node >= hosts; }
  uint32_t Machines() const { return hosts / gpus_per_host; }
  uint32_t MachineOf(uint32_t endpoint) const { return endpoint / gpus_per_host; }
  uint32_t RailOf(uint32_t endpoint) const { return endpoint % gpus_per_host; }
  // Endpoints A and B share a scale-up domain (their traffic never needs a NIC).
  bool SameDomain(uint32_t a, uint32_t b) const {
    return domain_gpus > 1 && a / domain_gpus == b / domain_gpus;
  }
  // Hops from every node to host DST over switches (hosts never forward);
  // UINT32_MAX where DST cannot be reached. One search serves every route to DST.
  std::vector<uint32_t> HopsTo(uint32_t dst) const;
  // Per-flow ECMP, the one rule every simulator routes by, so the ns-3 module
  // and the flow engine put each connection on the same path: at node AT the
  // next link towards host DST (HOPS = HopsTo(DST)) among the equal-cost ones
  // (in link order), picked by FLOW_HASH mixed with AT (each switch hashes
  // independently, as real ones are salted against polarisation).
  // UINT32_MAX where AT is DST or cannot reach it.
  // With lb=eecmp the hash is EEcmpHash(DST, FLOW_HASH); every other load
  // balancer starts a flow where ECMP puts it (the path of static routes).
  uint32_t NextLink(uint32_t at, uint32_t dst, const std::vector<uint32_t>& hops, uint64_t flow_hash) const;
  // The equal-cost next links at AT towards DST, in link order: what NextLink
  // and the switches' load balancers choose among. Empty where AT is DST.
  std::vector<uint32_t> EqualCostLinks(uint32_t at, uint32_t dst, const std::vector<uint32_t>& hops) const;
  // Which of COUNT equal-cost links switch AT's hash of KEY picks (salted by
  // AT and the seed, so switches hash independently).
  uint32_t HashPick(uint32_t at, uint32_t count, uint64_t key) const;
  // Traffic spread evenly at every switch (lb=spray or ar in the flow
  // simulator): the links from SRC to DST grouped by stage (hop), as
  // directed ids (2 x link, + 1 where it is crossed from b to a). Each
  // stage's links carry equal shares where every node of a stage has as
  // many equal-cost links (leaf-spine, fat-tree, rail-optimized fabrics).
  // Empty when unreachable.
  std::vector<std::vector<uint32_t>> SprayStages(uint32_t src, uint32_t dst, const std::vector<uint32_t>& hops) const;
  // The links of the path from host SRC to host DST that NextLink gives hop by
  // hop. Empty when SRC == DST or unreachable.
  std::vector<uint32_t> Route(uint32_t src, uint32_t dst, const std::vector<uint32_t>& hops, uint64_t flow_hash) const;
};

// How a connection between GPUs of different scale-up domains uses the NICs,
// as NCCL does (models/README "Fabric"):
// - kDirect: each GPU's own NIC (NCCL_CROSS_NIC=1 for collectives,
//   NCCL_PXN_DISABLE=1 for point-to-point).
// - kRail: a collective's channel C leaves and enters every host through NIC
//   C % gpus (rail-aligned rings and trees, NCCL_CROSS_NIC 0 and 2): an
//   NVLink hop to that rail's GPU where the sender or receiver is another.
//   An edge between GPUs of one rail keeps that rail (a group of one GPU per
//   host uses its GPU's NIC).
// - kPxn: point-to-point and all-to-all through the sender's host GPU on the
//   receiver's rail (an NVLink hop), then that rail's NIC (PXN, the default).
enum class RailMode : uint8_t { kDirect, kRail, kPxn };

// NCCL's settings that decide RailMode, per job (--job ...:cross-nic=:pxn=).
struct NcclNicOptions {
  int cross_nic = 2;  // NCCL_CROSS_NIC: 0, 1 or 2
  bool pxn = true;    // !NCCL_PXN_DISABLE
  // NCCL_IB_QPS_PER_CONNECTION: queue pairs per connection between GPUs of
  // different scale-up domains, each its own flow for ECMP; QP_SPLIT:
  // NCCL_IB_SPLIT_DATA_ON_QPS (1: every message split over them; 0, NCCL's
  // default since 2.20: one message per queue pair, round robin).
  uint32_t qps = 1;
  bool qp_split = false;
  // The mode of a collective's traffic (COLLECTIVE true) or of
  // point-to-point and all-to-all traffic.
  RailMode ModeFor(bool collective) const {
    if (collective) return cross_nic == 1 ? RailMode::kDirect : RailMode::kRail;
    return pxn ? RailMode::kPxn : RailMode::kDirect;
  }
};

// What a run moved through the fabric's NICs and scale-up links, from the
// bytes each link direction carried (DIRECTION_BYTES[2i]: link i's a to b,
// [2i+1]: b to a). Sent bytes count at the GPU's side of each link.
struct FabricLoad {
  struct Port {
    uint32_t link = 0, gpu = 0;  // the NIC link and its endpoint node
    int32_t rail = -1, plane = 0;
    double sent = 0, received = 0;
  };
  std::vector<Port> ports;          // every NIC port, in link order
  std::vector<double> per_nic;      // sent, per GPU (its NIC's ports together)
  std::vector<double> per_rail;     // sent, per rail
  std::vector<double> per_plane;    // sent, per plane
  double nic_sent = 0, nvlink_sent = 0;
  // max / mean of V (0 when nothing moved): 1 is perfect balance.
  static double Imbalance(const std::vector<double>& v);
};
FabricLoad ComputeFabricLoad(const TopologyGraph& graph, const std::vector<double>& direction_bytes);

// The ECMP hash of one connection's direction: its source and destination
// hosts, its job (index in the simulation) and its channel. All endpoints of a
// job on one host share a job's connections to another host for this purpose.
uint64_t FlowHash(uint32_t src_host, uint32_t dst_host, uint32_t job, uint32_t channel);
// E-ECMP's key: the destination host and the queue pair number (24 bits, as
// RoCE's BTH carries it) a connection's FLOW_HASH stands for.
uint64_t EEcmpHash(uint32_t dst_host, uint64_t flow_hash);

// The links, in order, of one connection from endpoint SRC to endpoint DST
// on CHANNEL under MODE (RailMode): within a scale-up domain its two NVLink
// links; otherwise NextLink's ECMP path between the GPUs whose NICs carry it
// (ConnectionRelays), with an NVLink hop (two links) to and from a relay GPU
// where that is not SRC or DST. The one route rule both simulators use.
// HOPS_TO(N) must return graph.HopsTo(N) (callers cache it; it is asked only
// for the network part's end). Empty when SRC == DST or unreachable.
std::vector<uint32_t> ConnectionPath(const TopologyGraph& graph, uint32_t src, uint32_t dst, uint32_t channel,
                                     RailMode mode, uint64_t flow_hash,
                                     const std::function<const std::vector<uint32_t>&(uint32_t)>& hops_to);

// ConnectionPath's route with its network part spread over the equal-cost
// paths (TopologyGraph::SprayStages): per stage its directed links; the
// NVLink hops are stages of one link. Empty when SRC == DST or unreachable.
std::vector<std::vector<uint32_t>> ConnectionStages(
    const TopologyGraph& graph, uint32_t src, uint32_t dst, uint32_t channel, RailMode mode,
    const std::function<const std::vector<uint32_t>&(uint32_t)>& hops_to);

// The relay GPUs of that path: (GPU on SRC's host the traffic leaves by,
// GPU on DST's host it enters by); SRC and DST themselves where no relay.
std::pair<uint32_t, uint32_t> ConnectionRelays(const TopologyGraph& graph, uint32_t src, uint32_t dst,
                                               uint32_t channel, RailMode mode);

// The graph SPEC describes, its faults applied; false with one line (a
// fault naming no link or switch, a file's fabric that does not connect).
bool BuildFabric(const TopologySpec& spec, TopologyGraph* graph, std::string* error);
// BuildFabric of a spec ParseTopology accepted (aborts on one it would not).
TopologyGraph BuildTopology(const TopologySpec& spec);

}  // namespace dltrace::models
