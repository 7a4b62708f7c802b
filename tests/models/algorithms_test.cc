// SPDX-License-Identifier: GPL-2.0-only
// Every algorithm, for every collective it defines, on 2..64 ranks: every send
// has exactly one receive, and bytes per rank match the textbook formulas.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "dltrace/models/algorithms.h"

namespace dltrace::models {
namespace {

using formats::Collective;

constexpr int kMaxRanks = 64;

// Divisible by every n <= 64 and by 2 and 3: per-rank formulas are exact.
uint64_t SizeFor(int n) { return uint64_t(n) * 3072; }

std::string Name(const std::string& algo, Collective c, int n) {
  return algo + " " + formats::CollectiveName(c) + " n=" + std::to_string(n);
}

void ExpectSound(const Schedule& s, const std::string& what) {
  auto problems = CheckSchedule(s);
  EXPECT_TRUE(problems.empty()) << what << ": " << problems.front();
}

// ALGO's schedule of collective C of BYTES on N ranks, expected sound: every
// send has its receive (a failure names the algorithm, collective and N).
Schedule Lower(const std::string& algo, Collective c, int n, uint64_t bytes, int root = 0,
               LowerOptions o = {}) {
  o.algorithm = algo;
  CollectiveSpec spec;
  spec.collective = c;
  spec.bytes = bytes;
  spec.root = root;
  for (int i = 0; i < n; ++i) spec.members.push_back(i);
  Schedule s = LowerSingleCollective(spec, n, o);
  return s;
}

uint64_t TotalSent(const std::vector<RankTotals>& t) {
  uint64_t sum = 0;
  for (const auto& r : t) sum += r.sent_bytes;
  return sum;
}

// Per rank sent == received == EXPECTED for all workers.
void ExpectEveryRank(const Schedule& s, int n, uint64_t expected, const std::string& what) {
  auto t = ComputeTotals(s);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(t[size_t(r)].sent_bytes, expected) << what << " rank " << r;
    EXPECT_EQ(t[size_t(r)].recv_bytes, expected) << what << " rank " << r;
  }
}

TEST(Algorithms, TableListsEveryAlgorithmOnce) {
  std::vector<std::string> names;
  for (const auto& a : AllAlgorithms()) names.push_back(a.name);
  EXPECT_EQ(names, (std::vector<std::string>{"recorded", "ring", "tree", "hd", "ps", "stepwise",
                                             "gossip", "pairwise", "nccl"}));
  EXPECT_EQ(FindAlgorithm("ring")->name, std::string("ring"));
  EXPECT_EQ(FindAlgorithm("nope"), nullptr);
}

TEST(Algorithms, RingAllReduceSends2NMinus1OverNOfTheBufferPerRank) {
  for (int n = 2; n <= kMaxRanks; ++n) {
    uint64_t S = SizeFor(n);
    Schedule s = Lower("ring", Collective::kAllReduce, n, S);
    ExpectEveryRank(s, n, 2 * (n - 1) * S / n, Name("ring", Collective::kAllReduce, n));
    EXPECT_EQ(ComputeTotals(s)[0].sends, uint64_t(2 * (n - 1)));
  }
}

TEST(Algorithms, RingAllGatherAndReduceScatterSendNMinus1OverN) {
  for (Collective c : {Collective::kAllGather, Collective::kReduceScatter, Collective::kAllToAll}) {
    for (int n = 2; n <= kMaxRanks; ++n) {
      uint64_t S = SizeFor(n);
      Schedule s = Lower("ring", c, n, S);
      ExpectEveryRank(s, n, (n - 1) * S / n, Name("ring", c, n));
    }
  }
}

TEST(Algorithms, ChainBroadcastAndReduceMoveTheBufferNMinus1Times) {
  for (Collective c : {Collective::kBroadcast, Collective::kReduce, Collective::kScan}) {
    for (int n = 2; n <= kMaxRanks; ++n) {
      uint64_t S = SizeFor(n);
      int root = n / 3;
      Schedule s = Lower("ring", c, n, S, root);
      auto t = ComputeTotals(s);
      EXPECT_EQ(TotalSent(t), uint64_t(n - 1) * S) << Name("ring", c, n);
      if (c == Collective::kBroadcast) {
        EXPECT_EQ(t[size_t(root)].recv_bytes, 0u);
      }
      if (c == Collective::kReduce) {
        EXPECT_EQ(t[size_t(root)].sent_bytes, 0u);
      }
    }
  }
}

TEST(Algorithms, GatherAndScatterGoDirectlyToAndFromTheRoot) {
  for (int n = 2; n <= kMaxRanks; ++n) {
    uint64_t S = SizeFor(n);
    int root = n - 1;
    Schedule g = Lower("ring", Collective::kGather, n, S, root);
    Schedule sc = Lower("ring", Collective::kScatter, n, S, root);
    EXPECT_EQ(ComputeTotals(g)[size_t(root)].recv_bytes, (n - 1) * S / n);
    EXPECT_EQ(ComputeTotals(sc)[size_t(root)].sent_bytes, (n - 1) * S / n);
    EXPECT_EQ(ComputeTotals(g)[0].sent_bytes, n == 1 ? 0 : S / n);
  }
}

TEST(Algorithms, BarrierIsLog2NRoundsOfEmptyMessages) {
  for (int n = 2; n <= kMaxRanks; ++n) {
    Schedule s = Lower("ring", Collective::kBarrier, n, 0);
    uint64_t rounds = 0;
    while ((1 << rounds) < n) ++rounds;
    auto t = ComputeTotals(s);
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(t[size_t(r)].sends, rounds);
      EXPECT_EQ(t[size_t(r)].sent_bytes, 0u);
    }
  }
}

TEST(Algorithms, DoubleBinaryTreesSpanAllRanksWithAtMostTwoChildren) {
  for (int n = 1; n <= kMaxRanks; ++n) {
    for (int tree = 0; tree < 2; ++tree) {
      std::vector<int> children(size_t(n), 0);
      int roots = 0;
      for (int r = 0; r < n; ++r) {
        int p = TreeParent(n, r, tree);
        if (p < 0) ++roots;
        else {
          ASSERT_LT(p, n);
          ++children[size_t(p)];
        }
        // Walking up reaches the root within n steps (no cycles).
        int v = r, hops = 0;
        while (v >= 0 && hops <= n) v = TreeParent(n, v, tree), ++hops;
        EXPECT_LE(hops, n) << "n=" << n << " tree " << tree << " rank " << r;
      }
      EXPECT_EQ(roots, 1);
      for (int c : children) EXPECT_LE(c, 2) << "n=" << n;
    }
  }
}

TEST(Algorithms, TreeAllReduceMovesEachHalfUpAndDownEveryEdge) {
  for (int n = 2; n <= kMaxRanks; ++n) {
    uint64_t S = SizeFor(n);
    Schedule s = Lower("tree", Collective::kAllReduce, n, S);
    auto t = ComputeTotals(s);
    EXPECT_EQ(TotalSent(t), 2 * uint64_t(n - 1) * S);
    for (int r = 0; r < n; ++r) {
      uint64_t edges = 0;  // tree edges at r, over both trees
      for (int tree = 0; tree < 2; ++tree)
        for (int v = 0; v < n; ++v)
          if ((v == r && TreeParent(n, v, tree) >= 0) || TreeParent(n, v, tree) == r) ++edges;
      EXPECT_EQ(t[size_t(r)].sent_bytes, edges * S / 2) << "n=" << n << " rank " << r;
      EXPECT_EQ(t[size_t(r)].recv_bytes, edges * S / 2) << "n=" << n << " rank " << r;
    }
  }
}

TEST(Algorithms, TreeBroadcastAndReduceUseOneTreeFromTheRoot) {
  for (Collective c : {Collective::kBroadcast, Collective::kReduce}) {
    for (int n = 2; n <= kMaxRanks; ++n) {
      uint64_t S = SizeFor(n);
      int root = (n * 2) / 3;
      Schedule s = Lower("tree", c, n, S, root);
      auto t = ComputeTotals(s);
      EXPECT_EQ(TotalSent(t), uint64_t(n - 1) * S);
      EXPECT_EQ(c == Collective::kBroadcast ? t[size_t(root)].recv_bytes
                                            : t[size_t(root)].sent_bytes,
                0u);
    }
  }
}

TEST(Algorithms, HalvingDoublingFoldsNonPowersOfTwo) {
  for (int n = 2; n <= kMaxRanks; ++n) {
    uint64_t S = SizeFor(n);
    Schedule s = Lower("hd", Collective::kAllReduce, n, S);
    int p = 1;
    while (p * 2 <= n) p *= 2;
    int rem = n - p;
    uint64_t core = 2 * uint64_t(p - 1) * S / uint64_t(p);
    auto t = ComputeTotals(s);
    for (int r = 0; r < n; ++r) {
      uint64_t expected = r < 2 * rem ? (r % 2 == 0 ? S : core + S) : core;
      EXPECT_EQ(t[size_t(r)].sent_bytes, expected) << "n=" << n << " rank " << r;
      EXPECT_EQ(t[size_t(r)].recv_bytes, expected) << "n=" << n << " rank " << r;
    }
  }
}

TEST(Algorithms, ParameterServerOnSeparateEndpointsShardsByBytes) {
  for (int n = 2; n <= kMaxRanks; ++n) {
    for (bool async : {false, true}) {
      uint64_t S = SizeFor(n);
      LowerOptions o;
      o.servers = 3;
      o.async_servers = async;
      Schedule s = Lower("ps", Collective::kAllReduce, n, S, 0, o);
      ASSERT_EQ(s.endpoints.size(), size_t(n + 3));
      ExpectEveryRank(s, n, S, Name("ps", Collective::kAllReduce, n));
      auto t = ComputeTotals(s);
      for (int j = 0; j < 3; ++j) {
        EXPECT_EQ(s.endpoints[size_t(n + j)].role, EndpointRole::kServer);
        EXPECT_EQ(t[size_t(n + j)].recv_bytes, uint64_t(n) * S / 3);
        EXPECT_EQ(t[size_t(n + j)].sent_bytes, uint64_t(n) * S / 3);
      }
    }
  }
}

TEST(Algorithms, ParameterServerColocatedKeepsItsOwnShardLocal) {
  for (int n = 2; n <= kMaxRanks; ++n) {
    uint64_t S = SizeFor(n);
    LowerOptions o;
    o.servers = 2;
    o.colocated_servers = true;
    Schedule s = Lower("ps", Collective::kAllReduce, n, S, 0, o);
    ASSERT_EQ(s.endpoints.size(), size_t(n));
    auto t = ComputeTotals(s);
    uint64_t shard = S / 2;
    for (int r = 0; r < n; ++r) {
      uint64_t expected = r < 2 ? (S - shard) + uint64_t(n - 1) * shard : S;
      EXPECT_EQ(t[size_t(r)].sent_bytes, expected) << "n=" << n << " rank " << r;
      EXPECT_EQ(t[size_t(r)].recv_bytes, expected) << "n=" << n << " rank " << r;
    }
  }
}

TEST(Algorithms, SyncParameterServerAnswersAfterAllPushesAsyncAfterEach) {
  LowerOptions o;
  o.servers = 1;
  Schedule sync = Lower("ps", Collective::kAllReduce, 4, 4096, 0, o);
  o.async_servers = true;
  Schedule async = Lower("ps", Collective::kAllReduce, 4, 4096, 0, o);
  const RankSchedule& server_sync = sync.ranks[4];
  const RankSchedule& server_async = async.ranks[4];
  for (const Step& st : server_sync.steps) {
    if (st.type != StepType::kSend) continue;
    EXPECT_EQ(server_sync.DepCount(st), 4u);
  }
  for (const Step& st : server_async.steps) {
    if (st.type != StepType::kSend) continue;
    EXPECT_EQ(server_async.DepCount(st), 1u);
  }
}

TEST(Algorithms, StepwiseRingReduceIsOnlyTheReducePass) {
  for (int n = 2; n <= kMaxRanks; ++n) {
    uint64_t S = SizeFor(n);
    Schedule s = Lower("stepwise", Collective::kAllReduce, n, S);
    ExpectEveryRank(s, n, (n - 1) * S / n, Name("stepwise", Collective::kAllReduce, n));
  }
}

TEST(Algorithms, GossipExchangesTheWholeVectorWithAFewNeighbours) {
  for (int n = 2; n <= kMaxRanks; ++n) {
    uint64_t S = SizeFor(n);
    LowerOptions o;
    o.gossip_peers = 2;
    Schedule s = Lower("gossip", Collective::kAllReduce, n, S, 0, o);
    ExpectEveryRank(s, n, uint64_t(std::min(2, n - 1)) * S, Name("gossip", Collective::kAllReduce, n));
  }
}

TEST(Algorithms, PairwiseExchangeMatchesRingByteTotals) {
  for (int n = 2; n <= kMaxRanks; ++n) {
    uint64_t S = SizeFor(n);
    for (Collective c : {Collective::kAllToAll, Collective::kAllGather, Collective::kReduceScatter}) {
      Schedule s = Lower("pairwise", c, n, S);
      ExpectEveryRank(s, n, (n - 1) * S / n, Name("pairwise", c, n));
    }
    Schedule ar = Lower("pairwise", Collective::kAllReduce, n, S);
    ExpectEveryRank(ar, n, 2 * (n - 1) * S / n, Name("pairwise", Collective::kAllReduce, n));
  }
}

TEST(Algorithms, UndefinedCollectivesFallBackToRing) {
  CollectiveSpec spec;
  spec.collective = Collective::kAllGather;
  spec.bytes = 4 * 1024;
  spec.members = {0, 1, 2, 3};
  for (const char* algo : {"hd", "ps", "stepwise", "gossip", "tree"}) {
    LowerOptions o;
    o.algorithm = algo;
    o.colocated_servers = true;
    Schedule s = LowerSingleCollective(spec, 4, o);
    EXPECT_EQ(s.ops[0].algorithm, "ring") << algo;
    ExpectEveryRank(s, 4, 3 * 1024, algo);
  }
}

TEST(Algorithms, NamesListTheTableInOrder) {
  EXPECT_EQ(AlgorithmNames(), (std::vector<std::string>{"recorded", "ring", "tree", "hd", "ps",
                                                        "stepwise", "gossip", "pairwise", "nccl"}));
  EXPECT_EQ(AlgorithmNamesJoined(), "recorded, ring, tree, hd, ps, stepwise, gossip, pairwise, nccl");
  EXPECT_EQ(AlgorithmNamesJoined("|"), "recorded|ring|tree|hd|ps|stepwise|gossip|pairwise|nccl");
  // No algorithm named: the trace's default (DefaultAlgorithm), and both defaults are table entries.
  EXPECT_EQ(LowerOptions{}.algorithm, "");
  EXPECT_NE(FindAlgorithm(kNcclAlgorithm), nullptr);
  EXPECT_NE(FindAlgorithm(kRecordedAlgorithm), nullptr);
}

TEST(Algorithms, OnlyParameterServerAddsEndpointsAndOnlyWhenNotColocated) {
  LowerOptions o;
  o.servers = 2;
  EXPECT_EQ(FindAlgorithm("ps")->ExtraEndpoints(o), 2);
  for (const auto& a : AllAlgorithms()) {
    if (std::string(a.name) != "ps") {
      EXPECT_EQ(a.ExtraEndpoints(o), 0) << a.name;
    }
  }
  o.colocated_servers = true;
  EXPECT_EQ(FindAlgorithm("ps")->ExtraEndpoints(o), 0);
  o.colocated_servers = false;
  o.servers = 0;  // at least one server
  EXPECT_EQ(FindAlgorithm("ps")->ExtraEndpoints(o), 1);

  // The added endpoints are servers, each on a host of its own, after the workers.
  o.servers = 2;
  Schedule s = Lower("ps", Collective::kAllReduce, 4, 4096, 0, o);
  ASSERT_EQ(s.endpoints.size(), 6u);
  for (size_t e = 4; e < 6; ++e) {
    EXPECT_EQ(s.endpoints[e].role, EndpointRole::kServer);
    EXPECT_EQ(s.endpoints[e].world_rank, -1);
    EXPECT_EQ(s.hosts[size_t(s.endpoints[e].host)], "server" + std::to_string(e - 4));
  }
  EXPECT_EQ(Lower("ring", Collective::kAllReduce, 4, 4096, 0, o).endpoints.size(), 4u);
}

TEST(Algorithms, EveryAlgorithmFallsBackToRing) {
  for (const auto& a : AllAlgorithms()) {
    EXPECT_EQ(&a.Fallback(), FindAlgorithm(a.fallback)) << a.name;
    EXPECT_EQ(a.Fallback().name, std::string("ring")) << a.name;
  }
}

TEST(Algorithms, UndefinedCollectivesUseTheEntrysDeclaredFallback) {
  // An entry defining no collective, declaring pairwise as its fallback:
  // all-gather on 4 ranks is then the direct exchange, (n-1)/n of S per rank.
  const Algorithm nothing{"nothing", "defines no collective",
                          [](const CollectiveSpec&, uint64_t, const LowerOptions&, StepBuilder&) {
                            return false;
                          },
                          nullptr, "pairwise"};
  CollectiveSpec spec;
  spec.collective = Collective::kAllGather;
  spec.bytes = 4 * 1024;
  spec.members = {0, 1, 2, 3};
  Schedule s;
  s.world_size = 4;
  s.hosts = {"h0", "h1", "h2", "h3"};
  for (int r = 0; r < 4; ++r) s.endpoints.push_back({EndpointRole::kWorker, r, r});
  s.ranks.resize(4);
  s.ops.resize(1);
  StepBuilder b(&s);
  b.BeginOp(0);
  EXPECT_EQ(LowerCollective(nothing, spec, LowerOptions{}, b), std::string("pairwise"));
  b.EndOp();
  ExpectSound(s, "nothing -> pairwise");
  ExpectEveryRank(s, 4, 3 * 1024, "nothing -> pairwise");
  // Pairwise sends straight to every peer: 3 sends per rank, not a ring's 3 hops of one peer.
  for (int r = 0; r < 4; ++r) {
    std::vector<int32_t> peers;
    for (const auto& st : s.ranks[size_t(r)].steps)
      if (st.type == StepType::kSend) peers.push_back(st.peer);
    std::sort(peers.begin(), peers.end());
    peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
    EXPECT_EQ(peers.size(), 3u) << "rank " << r;
  }
}

TEST(Algorithms, ChannelsAndChunksSplitBytesWithoutChangingTotals) {
  for (int n = 2; n <= kMaxRanks; n += 5) {
    for (const auto& a : AllAlgorithms()) {
      if (a.lower_op) continue;  // nccl picks its own channels and chunks (nccl_test.cc)
      uint64_t S = SizeFor(n) + 7;  // not divisible: shares must still add up
      LowerOptions o;
      o.channels = 3;
      o.chunk_bytes = S / 5;
      o.colocated_servers = true;
      Schedule one = Lower(a.name, Collective::kAllReduce, n, S, 0, LowerOptions{});
      Schedule many = Lower(a.name, Collective::kAllReduce, n, S, 0, o);
      if (std::string(a.name) != "ps" && std::string(a.name) != "hd") {
        EXPECT_EQ(TotalSent(ComputeTotals(one)), TotalSent(ComputeTotals(many))) << a.name;
      }
      uint16_t max_channel = 0;
      for (const auto& r : many.ranks)
        for (const auto& st : r.steps) max_channel = std::max<uint16_t>(max_channel, st.channel);
      EXPECT_EQ(max_channel, 2) << a.name;
    }
  }
}

TEST(Algorithms, StepsOnOneHostAreMarkedLocal) {
  CollectiveSpec spec;
  spec.collective = Collective::kAllReduce;
  spec.bytes = 4096;
  spec.members = {0, 1, 2, 3};
  LowerOptions o;
  o.algorithm = "ring";
  Schedule s = LowerSingleCollective(spec, 4, o);
  for (const auto& r : s.ranks)
    for (const auto& st : r.steps) EXPECT_FALSE(st.local);
  // Same lowering with ranks 0,1 and 2,3 sharing hosts.
  Schedule t;
  t.hosts = {"a", "b"};
  for (int r = 0; r < 4; ++r) t.endpoints.push_back({EndpointRole::kWorker, r, r / 2});
  t.ranks.resize(4);
  t.ops.resize(1);
  StepBuilder b(&t);
  b.BeginOp(0);
  LowerCollective(*FindAlgorithm("ring"), spec, o, b);
  b.EndOp();
  for (int e = 0; e < 4; ++e)
    for (const auto& st : t.ranks[size_t(e)].steps)
      EXPECT_EQ(st.local, t.endpoints[size_t(st.peer)].host == t.endpoints[size_t(e)].host);
}

TEST(Algorithms, CheckScheduleFindsUnmatchedAndBackwardSteps) {
  Schedule s = Lower("ring", Collective::kAllReduce, 3, 3072);
  ASSERT_TRUE(CheckSchedule(s).empty());
  Schedule broken = s;
  broken.ranks[0].steps[0].tag += 1000;  // a send nobody receives
  EXPECT_FALSE(CheckSchedule(broken).empty());
  Schedule backward = s;
  RankSchedule& r1 = backward.ranks[1];
  r1.deps.insert(r1.deps.begin(), 99);  // step 0 also waits for step 99, which is not before it
  for (Step& st : r1.steps) ++st.deps_end;
  EXPECT_FALSE(CheckSchedule(backward).empty());
}

TEST(Algorithms, GoalTextNamesEveryStep) {
  Schedule s = Lower("ring", Collective::kAllReduce, 2, 2048);
  std::string goal = FormatGoal(s, 0, DenseTags(s));
  EXPECT_NE(goal.find("rank 0 {"), std::string::npos);
  EXPECT_NE(goal.find("l0: send 1024b to 1 tag 0"), std::string::npos) << goal;
  EXPECT_NE(goal.find("recv 1024b from 1"), std::string::npos);
  EXPECT_NE(goal.find("requires"), std::string::npos);
}

}  // namespace
}  // namespace dltrace::models
