// SPDX-License-Identifier: GPL-2.0-only
// Topologies every simulator builds: sizes against closed-form counts, and the
// per-flow ECMP rule (NextLink/Route) the ns-3 module and the flow engine share,
// and the load balancers (lb=) and spraying stages built on it.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "dltrace/models/topology.h"

namespace dltrace::models {
namespace {

TopologyGraph Build(const std::string& text, uint32_t hosts_needed) {
  TopologySpec spec;
  std::string error;
  EXPECT_TRUE(ParseTopology(text, hosts_needed, &spec, &error)) << error;
  return BuildTopology(spec);
}

TEST(Topology, FatTreeHasTheTextbookCounts) {
  for (uint32_t k : {4u, 8u}) {
    const TopologyGraph g = Build("fat-tree:k=" + std::to_string(k), 1);
    EXPECT_EQ(g.hosts, k * k * k / 4);
    EXPECT_EQ(g.names.size() - g.hosts, 5 * k * k / 4);  // k^2/2 edge + k^2/2 aggregation + k^2/4 core
    EXPECT_EQ(g.links.size(), 3 * k * k * k / 4);          // hosts-edge, edge-agg, agg-core: k^3/4 each
  }
}

TEST(Topology, LeafSpineUplinksCarryTheOversubscription) {
  const TopologyGraph g = Build("leaf-spine:leaves=2,spines=2,hosts-per-leaf=4,oversub=4,rate=10Gbps", 8);
  ASSERT_EQ(g.hosts, 8u);
  for (const auto& l : g.links) {
    if (!l.host_link) {
      EXPECT_EQ(l.rate_bps, 4 * 10000000000ull / (2 * 4));  // 4 hosts' rate / (2 spines x 4:1)
    }
  }
}

// Every route is a connected shortest path that ends at its destination.
TEST(Topology, RoutesAreShortestConnectedPaths) {
  const TopologyGraph g = Build("fat-tree:k=4", 16);
  for (uint32_t dst = 0; dst < g.hosts; ++dst) {
    const auto hops = g.HopsTo(dst);
    for (uint32_t src = 0; src < g.hosts; ++src) {
      for (uint32_t job = 0; job < 3; ++job) {
        const auto path = g.Route(src, dst, hops, FlowHash(src, dst, job, 0));
        if (src == dst) {
          EXPECT_TRUE(path.empty());
          continue;
        }
        // Same edge switch: 2 links; same pod: 4; other pod: 6 (k=4 fat-tree, 2 hosts per edge, 4 per pod).
        const uint32_t expected = src / 2 == dst / 2 ? 2 : src / 4 == dst / 4 ? 4 : 6;
        ASSERT_EQ(path.size(), expected) << src << "->" << dst;
        uint32_t at = src;
        for (uint32_t li : path) {
          const auto& l = g.links[li];
          ASSERT_TRUE(l.a == at || l.b == at);
          at = l.a == at ? l.b : l.a;
        }
        EXPECT_EQ(at, dst);
      }
    }
  }
}

// Different connections between the same hosts spread over the spines; one
// connection always takes the same path.
TEST(Topology, FlowHashSpreadsConnectionsAndKeepsEachOnOnePath) {
  const TopologyGraph g = Build("leaf-spine:leaves=2,spines=4,hosts-per-leaf=2", 4);
  const auto hops = g.HopsTo(3);
  std::map<uint32_t, int> per_uplink;
  const int connections = 4000;
  for (int c = 0; c < connections; ++c) {
    const auto path = g.Route(0, 3, hops, FlowHash(0, 3, uint32_t(c), 0));
    ASSERT_EQ(path.size(), 4u);
    EXPECT_EQ(path, g.Route(0, 3, hops, FlowHash(0, 3, uint32_t(c), 0)));
    ++per_uplink[path[1]];
  }
  ASSERT_EQ(per_uplink.size(), 4u);
  for (const auto& [link, n] : per_uplink) {
    EXPECT_GT(n, connections / 4 * 0.9) << g.links[link].name;
    EXPECT_LT(n, connections / 4 * 1.1) << g.links[link].name;
  }
  // Directions and channels hash apart.
  std::set<uint64_t> hashes = {FlowHash(0, 3, 0, 0), FlowHash(3, 0, 0, 0), FlowHash(0, 3, 0, 1), FlowHash(0, 3, 1, 0)};
  EXPECT_EQ(hashes.size(), 4u);
}

TEST(Topology, LoadBalancerIsAFabricKeyWithOneLineErrors) {
  TopologySpec spec;
  std::string error;
  ASSERT_TRUE(ParseTopology("leaf-spine:lb=flowlet,flowlet-gap=50us,seed=3", 8, &spec, &error)) << error;
  EXPECT_EQ(spec.lb, LoadBalancer::kFlowlet);
  EXPECT_EQ(spec.flowlet_gap_ns, 50000u);
  EXPECT_NE(spec.Describe().find("load balancing flowlet (gap 50 us)"), std::string::npos) << spec.Describe();
  const TopologyGraph g = BuildTopology(spec);
  EXPECT_EQ(g.lb, LoadBalancer::kFlowlet);
  EXPECT_EQ(g.flowlet_gap_ns, 50000u);
  for (const char* name : {"ecmp", "eecmp", "flowlet", "ar", "spray"}) {
    ASSERT_TRUE(ParseTopology(std::string("rail-optimized:gpus=2,lb=") + name, 4, &spec, &error)) << error;
    EXPECT_STREQ(LoadBalancerName(spec.lb), name);
  }
  EXPECT_FALSE(ParseTopology("leaf-spine:lb=foo", 8, &spec, &error));
  EXPECT_EQ(error, "topology leaf-spine: bad value in 'lb=foo' (load balancers: ecmp, eecmp, flowlet, ar, spray)");
  EXPECT_FALSE(ParseTopology("leaf-spine:lb=flowlet,flowlet-gap=0", 8, &spec, &error));
  EXPECT_EQ(error, "topology leaf-spine: bad value in 'flowlet-gap=0' (a duration above 0, e.g. 20us)");
  EXPECT_EQ(error.find('\n'), std::string::npos);
}

// E-ECMP hashes the destination and queue pair instead of the 5-tuple: the
// same flows land elsewhere, still one path per flow and spread evenly.
TEST(Topology, EEcmpHashesTheQueuePairOnOnePath) {
  const TopologyGraph ecmp = Build("leaf-spine:leaves=2,spines=4,hosts-per-leaf=2", 4);
  const TopologyGraph eecmp = Build("leaf-spine:leaves=2,spines=4,hosts-per-leaf=2,lb=eecmp", 4);
  const auto hops = ecmp.HopsTo(3);
  std::map<uint32_t, int> per_uplink;
  int differ = 0;
  const int connections = 4000;
  for (int c = 0; c < connections; ++c) {
    const uint64_t h = FlowHash(0, 3, uint32_t(c), 0);
    const auto path = eecmp.Route(0, 3, hops, h);
    ASSERT_EQ(path.size(), 4u);
    EXPECT_EQ(path, eecmp.Route(0, 3, hops, h));
    differ += path != ecmp.Route(0, 3, hops, h);
    ++per_uplink[path[1]];
  }
  EXPECT_GT(differ, connections / 2);  // 3/4 expected: an independent draw among 4 spines
  ASSERT_EQ(per_uplink.size(), 4u);
  for (const auto& [link, n] : per_uplink) EXPECT_NEAR(n, connections / 4, connections / 40);
}

// The seed moves flows between spines: with two spines and two flows out
// of one leaf, some seeds put both on one spine (a collision, hash
// polarisation) and others split them.
TEST(Topology, EcmpSeedDecidesCollisions) {
  int collide = 0, apart = 0;
  for (uint64_t seed = 1; seed <= 64; ++seed) {
    const TopologyGraph g = Build("leaf-spine:leaves=2,spines=2,hosts-per-leaf=2,seed=" + std::to_string(seed), 4);
    const auto a = g.Route(0, 2, g.HopsTo(2), FlowHash(0, 2, 0, 0));
    const auto b = g.Route(1, 3, g.HopsTo(3), FlowHash(1, 3, 0, 0));
    (a[1] == b[1] ? collide : apart)++;  // both leave leaf0 by one uplink
  }
  EXPECT_GT(collide, 16);  // 1/2 each: 32 expected of 64
  EXPECT_GT(apart, 16);
}

// Spraying: per stage the equal-cost links, each carrying an equal share.
TEST(Topology, SprayStagesAreTheEqualCostLinksOfEachHop) {
  const TopologyGraph ls = Build("leaf-spine:leaves=2,spines=4,hosts-per-leaf=2", 4);
  const auto stages = ls.SprayStages(0, 3, ls.HopsTo(3));
  ASSERT_EQ(stages.size(), 4u);  // host-leaf, leaf-spines, spines-leaf, leaf-host
  EXPECT_EQ(stages[0].size(), 1u);
  EXPECT_EQ(stages[1].size(), 4u);
  EXPECT_EQ(stages[2].size(), 4u);
  EXPECT_EQ(stages[3].size(), 1u);
  for (const auto& stage : stages)
    for (uint32_t d : stage) {
      const auto& l = ls.links[d / 2];
      // Directed: from the end farther from the destination.
      const auto hops = ls.HopsTo(3);
      const uint32_t from = d % 2 ? l.b : l.a, to = d % 2 ? l.a : l.b;
      EXPECT_EQ(hops[from], hops[to] + 1) << l.name;
    }
  // k=4 fat-tree across pods: 1 host link, 2 edge-agg, 4 agg-core, 4 core-agg, 2 agg-edge, 1 edge-host.
  const TopologyGraph ft = Build("fat-tree:k=4", 16);
  std::vector<size_t> sizes;
  for (const auto& stage : ft.SprayStages(0, 15, ft.HopsTo(15))) sizes.push_back(stage.size());
  EXPECT_EQ(sizes, (std::vector<size_t>{1, 2, 4, 4, 2, 1}));
  EXPECT_TRUE(ft.SprayStages(0, 0, ft.HopsTo(0)).empty());
}

}  // namespace
}  // namespace dltrace::models
