// SPDX-License-Identifier: GPL-2.0-only
// Topologies every simulator builds: sizes against closed-form counts, and the
// per-flow ECMP rule (NextLink/Route) the ns-3 module and the flow engine share.
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

}  // namespace
}  // namespace dltrace::models
