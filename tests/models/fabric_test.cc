// SPDX-License-Identifier: GPL-2.0-only
// AI-cluster fabrics from one description: counts of a rail-optimized,
// dual-ToR and dual-plane fabric against closed forms, the NIC rules NCCL
// follows (rail alignment, PXN, cross-nic) as paths, faults, fabric files and
// their bad forms, and placement by GPUs per host.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include "dltrace/models/placement.h"
#include "dltrace/models/topology.h"

namespace dltrace::models {
namespace {

TopologyGraph Build(const std::string& text, uint32_t hosts_needed = 1) {
  TopologySpec spec;
  std::string error;
  EXPECT_TRUE(ParseTopology(text, hosts_needed, &spec, &error)) << error;
  return BuildTopology(spec);
}

std::string ParseError(const std::string& text, uint32_t hosts_needed = 1) {
  TopologySpec spec;
  std::string error;
  EXPECT_FALSE(ParseTopology(text, hosts_needed, &spec, &error)) << text;
  return error;
}

size_t Count(const TopologyGraph& g, bool (*pred)(const TopologyLink&)) {
  size_t n = 0;
  for (const auto& l : g.links) n += pred(l);
  return n;
}
bool IsNic(const TopologyLink& l) { return l.host_link; }
bool IsNvlink(const TopologyLink& l) { return l.scale_up; }
bool IsUplink(const TopologyLink& l) { return !l.host_link && !l.scale_up; }

// H hosts x G GPUs in segments of S hosts, P spines: H*G GPUs, H NVSwitches,
// ceil(H/S)*G rail leaves, H*G NIC links, H*G NVLink links, leaves*P uplinks.
TEST(Fabric, RailOptimizedHasTheClosedFormCounts) {
  const TopologyGraph g = Build("rail-optimized:hosts=6,gpus=8,hosts-per-leaf=4,spines=3");
  EXPECT_EQ(g.hosts, 48u);
  EXPECT_EQ(g.gpus_per_host, 8u);
  EXPECT_EQ(g.names.size(), 48u + 6u + 2u * 8u + 3u);
  EXPECT_EQ(Count(g, IsNic), 48u);
  EXPECT_EQ(Count(g, IsNvlink), 48u);
  EXPECT_EQ(Count(g, IsUplink), 16u * 3u);
  // GPU k of every host reaches the rail-k leaf of its segment.
  for (const auto& l : g.links)
    if (l.host_link) {
      const uint32_t host = l.a / 8, k = l.a % 8;
      EXPECT_EQ(l.rail, int32_t(k));
      EXPECT_EQ(g.names[l.b], "p0.s" + std::to_string(host / 4) + ".r" + std::to_string(k)) << l.name;
    }
  // 1:1 by default: a leaf's 4 x 100G downlinks over 3 uplinks.
  for (const auto& l : g.links) {
    if (IsUplink(l)) {
      EXPECT_EQ(l.rate_bps, 400000000000ull / 3);
    }
  }
}

TEST(Fabric, PresetsAreSizedLikeThePublicTemplatesAndCanBeOverridden) {
  const TopologyGraph sx = Build("spectrum-x:hosts=128");
  EXPECT_EQ(sx.hosts, 1024u);
  std::set<uint32_t> leaves;
  for (const auto& l : sx.links)
    if (l.host_link) {
      EXPECT_EQ(l.rate_bps, 400000000000ull);
      leaves.insert(l.b);
    }
  EXPECT_EQ(leaves.size(), 2u * 8u);  // 64 hosts (64 GPUs per leaf) per segment
  const TopologyGraph over = Build("spectrum-x:hosts=4,rate=200G,gpus=4");
  EXPECT_EQ(over.hosts, 16u);
  for (const auto& l : over.links) {
    if (l.host_link) {
      EXPECT_EQ(l.rate_bps, 200000000000ull);
    }
  }
}

TEST(Fabric, HpnDualTorGivesEachNicTwoPortsToTwoTors) {
  const TopologyGraph g = Build("hpn:hosts=2");
  std::map<uint32_t, std::set<uint32_t>> tors;
  for (const auto& l : g.links)
    if (l.host_link) {
      EXPECT_EQ(l.rate_bps, 200000000000ull);
      tors[l.a].insert(l.b);
    }
  ASSERT_EQ(tors.size(), 16u);
  for (const auto& [gpu, t] : tors) EXPECT_EQ(t.size(), 2u) << g.names[gpu];
}

TEST(Fabric, DualPlanePortsGoToTheirPlaneAndPlanesNeverMeet) {
  const TopologyGraph g = Build("hpn:hosts=4,planes=2,hosts-per-leaf=2");
  for (const auto& l : g.links) {
    if (l.scale_up) continue;
    const std::string b = g.names[l.b];
    EXPECT_EQ(b.substr(0, 2), "p" + std::to_string(l.plane)) << l.name;
    if (!l.host_link) {
      EXPECT_EQ(g.names[l.a].substr(0, 2), b.substr(0, 2)) << l.name;
    }
  }
}

struct Paths {
  TopologyGraph g;
  std::map<uint32_t, std::vector<uint32_t>> hops;
  std::vector<uint32_t> operator()(uint32_t src, uint32_t dst, uint32_t channel, RailMode mode) {
    return ConnectionPath(g, src, dst, channel, mode, FlowHash(src, dst, 0, channel),
                          [this](uint32_t n) -> const std::vector<uint32_t>& {
                            auto it = hops.find(n);
                            if (it == hops.end()) it = hops.emplace(n, g.HopsTo(n)).first;
                            return it->second;
                          });
  }
  // The NIC links a path uses, as (GPU, rail).
  std::vector<std::pair<uint32_t, int32_t>> Nics(const std::vector<uint32_t>& path) const {
    std::vector<std::pair<uint32_t, int32_t>> out;
    for (uint32_t l : path)
      if (g.links[l].host_link) out.push_back({g.links[l].a, g.links[l].rail});
    return out;
  }
};

TEST(Fabric, SameHostTrafficTakesTwoNvlinkLinksEvenWhereAToRIsAsShort) {
  for (const char* topo : {"rail-optimized:hosts=2,gpus=8", "dcn:hosts=2"}) {
    Paths p{Build(topo)};
    const auto path = p(1, 6, 0, RailMode::kPxn);
    ASSERT_EQ(path.size(), 2u) << topo;
    EXPECT_TRUE(p.g.links[path[0]].scale_up && p.g.links[path[1]].scale_up) << topo;
    EXPECT_EQ(p.g.links[path[0]].a, 1u);
    EXPECT_EQ(p.g.links[path[1]].a, 6u);
  }
}

// NCCL_CROSS_NIC 0/2: a collective's channel c leaves and enters every host
// through NIC c % 8, with an NVLink hop where the GPU is another.
TEST(Fabric, RailAlignedCollectivesUseTheChannelsNicOnBothHosts) {
  Paths p{Build("rail-optimized:hosts=2,gpus=8")};
  for (uint32_t c = 0; c < 16; ++c) {
    const auto path = p(7, 8, c, RailMode::kRail);  // host 0 GPU 7 -> host 1 GPU 0
    const auto nics = p.Nics(path);
    ASSERT_EQ(nics.size(), 2u);
    EXPECT_EQ(nics[0].first, c % 8);       // host 0's GPU of rail c
    EXPECT_EQ(nics[1].first, 8 + c % 8);   // host 1's
    EXPECT_EQ(nics[0].second, int32_t(c % 8));
    // Same rail, one segment: NIC, leaf, NIC; NVLink hops where the GPU is not the channel's.
    EXPECT_EQ(path.size(), 2u + (c % 8 != 7 ? 2u : 0u) + (c % 8 != 0 ? 2u : 0u)) << c;
  }
}

// A data-parallel group of one GPU per host (GPU 3 of each) keeps its rail on every channel.
TEST(Fabric, RingEdgesWithinARailKeepIt) {
  Paths p{Build("rail-optimized:hosts=2,gpus=8")};
  for (uint32_t c = 0; c < 8; ++c) {
    const auto path = p(3, 11, c, RailMode::kRail);
    EXPECT_EQ(path.size(), 2u);
    EXPECT_EQ(p.Nics(path), (std::vector<std::pair<uint32_t, int32_t>>{{3u, 3}, {11u, 3}}));
  }
}

// PXN: point-to-point to another rail goes over NVLink to the sender host's
// GPU on the receiver's rail, then stays on that rail (no spine).
TEST(Fabric, PxnSendsAcrossRailsThroughTheDestinationsRail) {
  Paths p{Build("rail-optimized:hosts=2,gpus=8")};
  const auto pxn = p(2, 13, 0, RailMode::kPxn);  // host 0 GPU 2 -> host 1 GPU 5
  ASSERT_EQ(p.Nics(pxn).size(), 2u);
  EXPECT_EQ(p.Nics(pxn)[0], std::make_pair(5u, 5));
  EXPECT_EQ(pxn.size(), 4u);  // NVLink, NVLink, NIC, NIC
  for (uint32_t l : pxn) EXPECT_FALSE(p.g.names[p.g.links[l].b].find("spine") != std::string::npos);
  // Without PXN (or with NCCL_CROSS_NIC=1): the GPUs' own NICs, across rails through a spine.
  const auto direct = p(2, 13, 0, RailMode::kDirect);
  EXPECT_EQ(p.Nics(direct), (std::vector<std::pair<uint32_t, int32_t>>{{2u, 2}, {13u, 5}}));
  EXPECT_EQ(direct.size(), 4u);  // NIC, leaf-spine, spine-leaf, NIC
}

TEST(Fabric, AFailedTorLeavesDualTorHostsOnTheirOtherPort) {
  const TopologyGraph whole = Build("hpn:hosts=2,hosts-per-leaf=2");
  const TopologyGraph failed = Build("hpn:hosts=2,hosts-per-leaf=2,fail=p0.s0.r3.t0");
  EXPECT_EQ(failed.links.size(), whole.links.size() - 2 /* two GPUs' ports */ - 8 /* its uplinks */);
  Paths p{failed};
  for (uint32_t seed = 0; seed < 32; ++seed) {
    const auto path = p(3, 11, seed * 8 + 3, RailMode::kRail);
    ASSERT_FALSE(path.empty());
    for (uint32_t l : path) EXPECT_EQ(p.g.names[p.g.links[l].b].find("p0.s0.r3.t0"), std::string::npos);
  }
  EXPECT_NE(ParseError("hpn:hosts=2,fail=p0.s0.r3.t0,fail=p0.s0.r3.t1").find("has no NIC link"),
            std::string::npos);
  const TopologyGraph half = Build("spectrum-x:hosts=2,degrade=h0.g1-p0.s0.r1@0.5");
  for (const auto& l : half.links) {
    if (l.name == "h0.g1-p0.s0.r1") {
      EXPECT_EQ(l.rate_bps, 200000000000ull);
    }
  }
  EXPECT_NE(ParseError("spectrum-x:hosts=2,fail=nosuch").find("fault 'nosuch'"), std::string::npos);
}

TEST(Fabric, BadSpecsSayWhatIsWrongInOneLine) {
  EXPECT_NE(ParseError("rail-optimized:planes=2,ports=1").find("planes=2 needs ports=2"), std::string::npos);
  EXPECT_NE(ParseError("spectrum-x:domain=12").find("domain=12"), std::string::npos);
  EXPECT_NE(ParseError("spectrum-x:gpus=0").find("bad value"), std::string::npos);
  EXPECT_NE(ParseError("star:ports=2").find("ports=2"), std::string::npos);
  EXPECT_NE(ParseError("torus").find("unknown topology"), std::string::npos);
}

TEST(Fabric, Nvl72DomainsSpanHosts) {
  const TopologyGraph g = Build("spectrum-x:hosts=36,gpus=4,domain=72");
  EXPECT_EQ(g.domain_gpus, 72u);
  EXPECT_TRUE(g.SameDomain(0, 71));
  EXPECT_FALSE(g.SameDomain(71, 72));
  Paths p{g};
  EXPECT_EQ(p(0, 70, 0, RailMode::kRail).size(), 2u);  // hosts 0 and 17: one NVLink domain
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

// F is the fabric of two hosts of two GPUs on two rail leaves and one spine (200G uplinks) as a spec gives it.
void ExpectTwoRails(const TopologyGraph& f) {
  const TopologyGraph s = Build("rail-optimized:hosts=2,gpus=2,hosts-per-leaf=2,spines=1,rate=100G,delay=1us");
  ASSERT_EQ(f.names, s.names);
  ASSERT_EQ(f.links.size(), s.links.size());
  for (size_t i = 0; i < f.links.size(); ++i) {
    EXPECT_EQ(f.links[i].name, s.links[i].name);
    EXPECT_EQ(f.links[i].rate_bps, s.links[i].rate_bps) << f.links[i].name;
    EXPECT_EQ(f.links[i].delay_ns, s.links[i].delay_ns) << f.links[i].name;
    EXPECT_EQ(f.links[i].rail, s.links[i].rail) << f.links[i].name;
  }
}

TEST(Fabric, AFileDescribesTheSameFabricAsASpec) {
  // Two hosts of two GPUs on two rail leaves and one spine, written out.
  const std::string path = WriteFile("two_rails.json", R"({
    "hosts": 2, "gpus_per_host": 2, "rate": "100Gbps", "delay": "1us",
    "switches": ["p0.s0.r0", "p0.s0.r1", "p0.spine0"],
    "links": [["h0.g0", "p0.s0.r0"], ["h0.g1", "p0.s0.r1"], ["h1.g0", "p0.s0.r0"], ["h1.g1", "p0.s0.r1"],
              {"a": "p0.s0.r0", "b": "p0.spine0", "rate": "200Gbps"}, ["p0.s0.r1", "p0.spine0", "200Gbps"]]})");
  ExpectTwoRails(Build(path));
}

TEST(Fabric, AYamlFileIsTheSameFabricAsItsJson) {
  // The JSON file above, written as YAML users write it: block lists, a flow
  // list per link, an item that is a mapping, comments and quoted names.
  const std::string path = WriteFile("two_rails.yaml", R"(---
# two hosts of two GPUs, two rail leaves, one spine
hosts: 2
gpus_per_host: 2
rate: 100Gbps   # every NIC port
delay: "1us"
switches:
- p0.s0.r0
- 'p0.s0.r1'
- {name: p0.spine0, plane: 0}
links:
  - [h0.g0, p0.s0.r0]
  - [h0.g1, p0.s0.r1]
  - [h1.g0, p0.s0.r0]
  - [h1.g1, p0.s0.r1]
  - a: p0.s0.r0
    b: p0.spine0
    rate: 200Gbps
  - [p0.s0.r1, p0.spine0, 200Gbps]
)");
  ExpectTwoRails(Build(path));
  // What the subset does not read, or a file that is not YAML, is one line naming the line.
  const std::map<std::string, std::string> bad = {
      {"hosts: 1\n\tswitches: [t]\n", "line 2: a tab"},
      {"hosts: 1\nswitches: [t\n", "line 2: '[' is not closed"},
      {"hosts: &h 1\n", "line 1: '&'"},
      {"hosts: 1\nhosts: 2\n", "line 2: key 'hosts' given twice"},
      {"hosts: 1\n  switches: [t]\n", "line 2"},
      {"hosts: 1\nswitches: [t]\nlinks: [[h0, x]]\n", "unknown node 'x'"},
  };
  int i = 0;
  for (const auto& [text, expected] : bad) {
    const std::string error = ParseError(WriteFile("bad" + std::to_string(i++) + ".yml", text));
    EXPECT_NE(error.find(expected), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

// A file's "lb" and "flowlet_gap", and lb= after its name, set the load balancer.
TEST(Fabric, AFileNamesItsLoadBalancer) {
  const std::string path = WriteFile("lb.json", R"({"hosts": 1, "switches": ["t"], "links": [["h0", "t"]],
    "lb": "flowlet", "flowlet_gap": "40us"})");
  const TopologyGraph g = Build(path);
  EXPECT_EQ(g.lb, LoadBalancer::kFlowlet);
  EXPECT_EQ(g.flowlet_gap_ns, 40000u);
  EXPECT_EQ(Build(path + ":lb=spray").lb, LoadBalancer::kSpray);
  EXPECT_NE(ParseError(WriteFile("lb_bad.json", R"({"hosts": 1, "switches": ["t"], "links": [["h0", "t"]],
    "lb": "random"})")).find("bad 'lb' (one of ecmp, eecmp, flowlet, ar, spray)"), std::string::npos);
}

TEST(Fabric, BadFilesGetOneLineNamingTheProblem) {
  const std::map<std::string, std::string> cases = {
      {R"({"hosts": 1, "gpus_per_host": 2, "switches": ["t"], "links": [["h0.g0", "t"], ["h0.g1", "x"]]})",
       "unknown node 'x'"},
      {R"({"hosts": 1, "gpus_per_host": 2, "switches": ["t"], "links": [["h0.g0", "t"]]})",
       "GPU h0.g1 has no NIC link"},
      {R"({"hosts": 1, "switches": ["t", "lonely"], "links": [["h0", "t"]]})", "switch lonely is disconnected"},
      {R"({"hosts": 1, "switches": ["t"], "links": [["h0", "t", 0]]})", "rate 0"},
      {R"({"hosts": 1, "switches": ["t"], "links": [["h0", "t"]], "color": 1})", "unknown key 'color'"},
      {R"({"hosts": 1, "switches": ["t"], "links": [["h0", "t"]})", "not JSON"},
  };
  int i = 0;
  for (const auto& [text, expected] : cases) {
    const std::string error = ParseError(WriteFile("bad" + std::to_string(i++) + ".json", text));
    EXPECT_NE(error.find(expected), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos);
  }
}

TEST(Placement, GpusPerHostPutsRanksOnGpusAndHostsDecideLocality) {
  std::vector<JobPlacement> jobs(2);
  jobs[0].gpus_per_host = 4;
  uint32_t needed = 0;
  std::string error;
  ASSERT_TRUE(PlaceJobs(&jobs, {10, 3}, &needed, &error, nullptr, 8)) << error;
  // Job 0: 4 per host on hosts 0-2 (GPUs 0-3); job 1: the next host, GPUs 0-2.
  EXPECT_EQ(jobs[0].hosts, (std::vector<uint32_t>{0, 1, 2, 3, 8, 9, 10, 11, 16, 17}));
  EXPECT_EQ(jobs[1].hosts, (std::vector<uint32_t>{24, 25, 26}));
  EXPECT_EQ(needed, 4u);
}

TEST(Placement, MoreRanksOnAHostThanItsGpusIsAnError) {
  std::vector<JobPlacement> jobs(1);
  jobs[0].trace = "t";
  jobs[0].trace_hosts = true;
  const std::vector<std::vector<int32_t>> groups = {{0, 0, 0, 0, 0, 0, 0, 0, 0}};  // 9 ranks recorded on one host
  uint32_t needed = 0;
  std::string error;
  EXPECT_FALSE(PlaceJobs(&jobs, {9}, &needed, &error, &groups, 8));
  EXPECT_NE(error.find("more endpoints on host 0 than its 8 GPUs"), std::string::npos) << error;
  std::vector<JobPlacement> too_many(1);
  too_many[0].gpus_per_host = 16;
  EXPECT_FALSE(PlaceJobs(&too_many, {16}, &needed, &error, nullptr, 8));
  EXPECT_NE(error.find("gpus-per-host=16"), std::string::npos) << error;
}

TEST(Placement, ARecordingOnOneMachineSpreadOverHostsCrossesTheNetwork) {
  Schedule s;
  s.ranks.resize(2);
  Step send;
  send.type = StepType::kSend;
  send.peer = 1;
  send.local = true;  // recorded on one machine
  s.ranks[0].steps.push_back(send);
  LocaliseSteps(&s, {0, 1});
  EXPECT_FALSE(s.ranks[0].steps[0].local);
  LocaliseSteps(&s, {3, 3});
  EXPECT_TRUE(s.ranks[0].steps[0].local);
}

TEST(Placement, JobSpecsTakeGpusPerHostAndNcclNicSettings) {
  JobPlacement p;
  std::string error;
  ASSERT_TRUE(ParseJobPlacement("t:gpus-per-host=4:cross-nic=1:pxn=0", &p, &error)) << error;
  EXPECT_EQ(p.gpus_per_host, 4u);
  EXPECT_EQ(p.nic.ModeFor(true), RailMode::kDirect);
  EXPECT_EQ(p.nic.ModeFor(false), RailMode::kDirect);
  JobPlacement d;
  EXPECT_EQ(d.nic.ModeFor(true), RailMode::kRail);
  EXPECT_EQ(d.nic.ModeFor(false), RailMode::kPxn);
  ASSERT_TRUE(ParseJobPlacement("t:qps=4:qp-split=1", &p, &error)) << error;
  EXPECT_EQ(p.nic.qps, 4u);
  EXPECT_TRUE(p.nic.qp_split);
  EXPECT_EQ(d.nic.qps, 1u);
  EXPECT_FALSE(d.nic.qp_split);
  for (const char* bad : {"t:qps=0", "t:qps=129", "t:qps=x", "t:qp-split=2"})
    EXPECT_FALSE(ParseJobPlacement(bad, &p, &error)) << bad;
  EXPECT_FALSE(ParseJobPlacement("t:cross-nic=3", &p, &error));
  EXPECT_FALSE(ParseJobPlacement("t:gpus-per-host=0", &p, &error));
}

// Two GPUs on each of two hosts (spectrum-x sized down): endpoint 0 on host
// 0 sends B bytes to endpoint 2 on host 1 (NCCL all-reduce, through a NIC)
// twice on channel 1, and to endpoint 1 on its own host once (NVLink).
Schedule QueuePairJob(uint64_t bytes) {
  Schedule s;
  s.ranks.resize(4);
  s.endpoints.resize(4);
  for (int32_t e = 0; e < 4; ++e) s.endpoints[size_t(e)].world_rank = e;
  s.world_size = 4;
  ScheduleOp op;
  op.kind = formats::OpKind::NcclAllReduce;
  s.ops.push_back(op);
  auto transfer = [&](int32_t from, int32_t to, uint32_t k, uint32_t dep_count) {
    Step send;
    send.type = StepType::kSend;
    send.peer = to;
    send.bytes = bytes;
    send.channel = 1;
    send.tag = MakeTag(0, k);
    for (uint32_t d = 0; d < dep_count; ++d) s.ranks[size_t(from)].deps.push_back(d);
    send.deps_end = uint32_t(s.ranks[size_t(from)].deps.size());
    s.ranks[size_t(from)].steps.push_back(send);
    Step recv = send;
    recv.type = StepType::kRecv;
    recv.peer = from;
    recv.deps_end = uint32_t(s.ranks[size_t(to)].deps.size());
    s.ranks[size_t(to)].steps.push_back(recv);
  };
  transfer(0, 2, 0, 0);
  transfer(0, 2, 1, 1);  // after the first
  transfer(0, 1, 2, 0);
  return s;
}

TEST(Placement, QueuePairsPerConnectionSplitOrTakeTurnsOnlyThroughNics) {
  TopologySpec spec;
  std::string error;
  ASSERT_TRUE(ParseTopology("spectrum-x:hosts=2,gpus=2", 4, &spec, &error)) << error;
  const TopologyGraph g = BuildTopology(spec);
  const std::vector<uint32_t> nodes = {0, 1, 2, 3};
  NcclNicOptions nic;
  nic.qps = 4;
  nic.qp_split = true;
  Schedule s = QueuePairJob(10);
  ASSERT_TRUE(SplitQueuePairs(&s, nodes, &g, nic, &error)) << error;
  // 2 messages x 4 parts through the NIC, the NVLink one whole: 10 bytes = 3 + 3 + 2 + 2.
  ASSERT_EQ(s.ranks[0].steps.size(), 9u);
  uint64_t sum = 0;
  std::set<uint64_t> tags;
  std::set<uint32_t> qps;
  for (size_t i = 0; i < 8; ++i) {
    const Step& st = s.ranks[0].steps[i];
    EXPECT_EQ(NcclChannelOf(st.channel), 1u);
    qps.insert(QueuePairOf(st.channel));
    tags.insert(st.tag);
    sum += st.bytes;
    EXPECT_EQ(st.bytes, (i % 4) < 2 ? 3u : 2u) << i;
  }
  EXPECT_EQ(sum, 20u);
  EXPECT_EQ(qps.size(), 4u);
  EXPECT_EQ(tags.size(), 8u);
  // Each part of the second message waits for every part of the first.
  const RankSchedule& r0 = s.ranks[0];
  EXPECT_EQ(r0.DepCount(r0.steps[4]), 4u);
  EXPECT_EQ(QueuePairOf(r0.steps[8].channel), 0u);
  EXPECT_EQ(r0.steps[8].bytes, 10u);
  // The receiver's parts match the sender's, and the schedule stays sound.
  ASSERT_EQ(s.ranks[2].steps.size(), 8u);
  EXPECT_TRUE(CheckSchedule(s).empty()) << CheckSchedule(s).front();

  // Round robin (NCCL's default): whole messages, queue pairs in turn, the receiver told which.
  nic.qp_split = false;
  Schedule rr = QueuePairJob(10);
  ASSERT_TRUE(SplitQueuePairs(&rr, nodes, &g, nic, &error)) << error;
  ASSERT_EQ(rr.ranks[0].steps.size(), 3u);
  EXPECT_EQ(QueuePairOf(rr.ranks[0].steps[0].channel), 0u);
  EXPECT_EQ(QueuePairOf(rr.ranks[0].steps[1].channel), 1u);
  EXPECT_EQ(rr.ranks[2].steps[1].channel, rr.ranks[0].steps[1].channel);
  EXPECT_TRUE(CheckSchedule(rr).empty());

  // Queue pairs leave by their channel's NIC, on paths of their own hash.
  const uint32_t lane1 = 1, lane1_qp2 = 1 | 2u << kQueuePairShift;
  EXPECT_EQ(ConnectionRelays(g, 0, 3, lane1, RailMode::kRail), ConnectionRelays(g, 0, 3, lane1_qp2, RailMode::kRail));
  EXPECT_NE(FlowHash(0, 3, 0, lane1), FlowHash(0, 3, 0, lane1_qp2));
}

}  // namespace
}  // namespace dltrace::models
