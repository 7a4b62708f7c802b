// SPDX-License-Identifier: GPL-2.0-only
// The nccl algorithm: NCCL's choice of algorithm and protocol from 8 B to
// 1 GiB and 2 to 1,024 ranks, its settings, and bytes per link of its ring and tree.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "dltrace/models/algorithms.h"
#include "dltrace/models/nccl.h"

namespace dltrace::models {
namespace {

using formats::Collective;

std::string Choice(Collective c, uint64_t bytes, int ranks, int nodes, const NcclSettings& s = {}) {
  NcclChoice ch = ChooseNccl({c, bytes, ranks, nodes}, s);
  return std::string(NcclAlgoName(ch.algo)) + "/" + NcclProtoName(ch.proto);
}

// Where NCCL's choice changes, from 8 B up, for one collective on RANKS
// ranks over NODES nodes of the default system (8 H100 per node, 400 Gb/s
// NICs): (first size of a band, "Algo/Proto").
struct Band {
  uint64_t from;
  const char* choice;
};
struct Scenario {
  Collective collective;
  int ranks, nodes;
  std::vector<Band> bands;
};

// The table was derived by hand from NCCL 2.28.9's documented model
// (src/graph/tuning.cc latency/bandwidth tables and ncclTopoGetAlgoTime, the
// channel rules of src/enqueue.cc) in a separate throw-away re-derivation, at
// the sizes 8 B x 4^k and 1 GiB; not from models/src/nccl.cc. It agrees with
// what NCCL users published:
// - 8-byte all-reduce on 16 H100 ranks over 2 nodes: "8 Bytes -> Algo 0
//   proto 0" (Tree/LL), NVIDIA/nccl#1453;
// - 768 MiB all-reduce across nodes: "805306368 Bytes -> Algo 1 proto 2"
//   (Ring/Simple), NVIDIA/nccl#1595;
// - trees only for all-reduce, rings inside one node, trees across nodes for
//   small and medium sizes, rings for large (Jeaugey, "Massively Scale Your
//   Deep Learning Training with NCCL 2.4", NVIDIA blog 2019; nccl#457:
//   "for each size, we estimate how much time each would take, then take the lowest");
// - PAT for all-gather and reduce-scatter only with one GPU per node (NCCL
//   2.23 release notes), LL for small, LL128 for medium and Simple for large
//   messages (NCCL_PROTO in NCCL's environment-variable documentation).
// Multi-node Tree/Simple beyond 128 MiB on 8 and more nodes is where the
// tree's correction factor (0.9 at 2^22 x 64 B) and the ring's latency cross.
const std::vector<Scenario>& Table() {
  static const std::vector<Scenario> table = {
      {Collective::kAllReduce, 2, 1, {{8, "Ring/LL"}, {2 << 20, "Ring/Simple"}}},
      {Collective::kAllReduce, 8, 1, {{8, "Ring/LL"}, {8 << 20, "Ring/LL128"}, {32 << 20, "Ring/Simple"}}},
      {Collective::kAllReduce, 16, 2,
       {{8, "Tree/LL"}, {512 << 10, "Tree/LL128"}, {32 << 20, "Ring/LL128"}, {512 << 20, "Ring/Simple"}}},
      {Collective::kAllReduce, 64, 8,
       {{8, "Tree/LL"}, {512 << 10, "Tree/LL128"}, {128 << 20, "Ring/LL128"}, {512 << 20, "Tree/Simple"},
        {1u << 30, "Ring/Simple"}}},
      {Collective::kAllReduce, 1024, 128, {{8, "Tree/LL"}, {512 << 10, "Tree/LL128"}, {128 << 20, "Tree/Simple"}}},
      {Collective::kAllReduce, 128, 128, {{8, "Tree/LL"}, {512 << 10, "Tree/LL128"}, {128 << 20, "Tree/Simple"}}},
      {Collective::kAllGather, 8, 1, {{8, "Ring/LL"}, {8 << 20, "Ring/LL128"}, {32 << 20, "Ring/Simple"}}},
      {Collective::kAllGather, 16, 2, {{8, "Ring/LL"}, {2 << 20, "Ring/LL128"}, {128 << 20, "Ring/Simple"}}},
      {Collective::kAllGather, 32, 32, {{8, "PAT/Simple"}, {512 << 20, "Ring/LL128"}, {1u << 30, "Ring/Simple"}}},
      {Collective::kReduceScatter, 1024, 128, {{8, "Ring/LL"}, {32 << 20, "Ring/LL128"}}},
      {Collective::kReduceScatter, 64, 64, {{8, "PAT/Simple"}, {512 << 20, "Ring/LL128"}}},
      {Collective::kBroadcast, 16, 2, {{8, "Ring/LL"}, {512 << 10, "Ring/LL128"}, {32 << 20, "Ring/Simple"}}},
      {Collective::kReduce, 8, 1, {{8, "Ring/LL"}, {2 << 20, "Ring/Simple"}}},
  };
  return table;
}

std::vector<uint64_t> Sizes() {
  std::vector<uint64_t> s;
  for (uint64_t b = 8; b <= (512u << 20); b *= 4) s.push_back(b);
  s.push_back(1u << 30);
  return s;
}

TEST(NcclChoice, MatchesTheTableFrom8BytesTo1GiB) {
  for (const Scenario& sc : Table())
    for (uint64_t bytes : Sizes()) {
      const char* expected = sc.bands.front().choice;
      for (const Band& b : sc.bands)
        if (bytes >= b.from) expected = b.choice;
      EXPECT_EQ(Choice(sc.collective, bytes, sc.ranks, sc.nodes), expected)
          << formats::CollectiveName(sc.collective) << " " << bytes << " B on " << sc.ranks
          << " ranks, " << sc.nodes << " nodes";
    }
}

TEST(NcclChoice, BroadcastAndReduceAreAlwaysRings) {
  for (int nodes : {1, 2, 16, 128})
    for (uint64_t bytes : Sizes())
      for (Collective c : {Collective::kBroadcast, Collective::kReduce}) {
        const int ranks = nodes == 1 ? 8 : nodes * 8;
        EXPECT_EQ(NcclAlgoName(ChooseNccl({c, bytes, ranks, nodes}, {}).algo), std::string("Ring"));
      }
}

TEST(NcclChoice, ProtocolGrowsWithSizeAndTreesOnlyAllReduce) {
  const std::map<std::string, int> rank = {{"LL", 0}, {"LL128", 1}, {"Simple", 2}};
  for (int nodes : {1, 2, 4, 32}) {
    for (Collective c : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter}) {
      int last = 0;
      for (uint64_t bytes : Sizes()) {
        NcclChoice ch = ChooseNccl({c, bytes, nodes * 8, nodes}, {});
        if (c != Collective::kAllReduce) {
          EXPECT_NE(ch.algo, NcclAlgo::kTree);
        }
        if (ch.algo == NcclAlgo::kRing) {
          // Within the ring, protocols only move from LL towards Simple.
          EXPECT_GE(rank.at(NcclProtoName(ch.proto)), last) << bytes;
          last = rank.at(NcclProtoName(ch.proto));
        }
      }
    }
  }
}

TEST(NcclChoice, PatNeedsOneGpuPerNodeAndNccl223) {
  EXPECT_EQ(Choice(Collective::kAllGather, 4096, 32, 32), "PAT/Simple");
  EXPECT_NE(Choice(Collective::kAllGather, 4096, 64, 32), "PAT/Simple");  // 2 GPUs per node
  NcclSettings old;
  old.version = "2.21.5";
  EXPECT_EQ(Choice(Collective::kAllGather, 4096, 32, 32, old), "Ring/LL");
}

TEST(NcclChoice, SettingsRestrictTheChoiceAndSaySo) {
  NcclSettings ring;
  ring.algo = "Ring";
  NcclChoice ch = ChooseNccl({Collective::kAllReduce, 8, 16, 2}, ring);
  EXPECT_EQ(ch.algo, NcclAlgo::kRing);
  EXPECT_EQ(NcclReasonName(ch.reason), std::string("NCCL_ALGO"));
  // Where the model picks Ring anyway, the setting did not decide.
  ch = ChooseNccl({Collective::kAllReduce, 1u << 30, 16, 2}, ring);
  EXPECT_EQ(NcclReasonName(ch.reason), std::string("tuning model"));

  NcclSettings no_ll;
  no_ll.proto = "^LL";
  ch = ChooseNccl({Collective::kAllReduce, 8, 16, 2}, no_ll);
  EXPECT_EQ(ch.proto, NcclProto::kLL128);
  EXPECT_EQ(NcclReasonName(ch.reason), std::string("NCCL_PROTO"));

  // Per-function lists: tree for all-reduce only.
  NcclSettings per_func;
  per_func.algo = "ring;allreduce:tree";
  EXPECT_EQ(Choice(Collective::kAllReduce, 1u << 30, 16, 2, per_func), "Tree/Simple");
  EXPECT_EQ(Choice(Collective::kBroadcast, 8, 16, 2, per_func), "Ring/LL");
}

TEST(NcclChoice, ChannelsFollowSizeAndSettings) {
  // 16 graph channels on one node are 32 after NCCL doubles them; a large op uses all.
  EXPECT_EQ(ChooseNccl({Collective::kAllReduce, 1u << 30, 8, 1}, {}).channels, 32);
  // Small ops need fewer: Ring/LL keeps a channel while bytes >= channels x 512 threads x 8 x ranks.
  EXPECT_EQ(ChooseNccl({Collective::kAllReduce, 8, 8, 1}, {}).channels, 1);
  NcclSettings four;
  four.max_channels = 4;
  EXPECT_EQ(ChooseNccl({Collective::kAllReduce, 1u << 30, 8, 1}, four).channels, 4);
  // Simple ring: 4 MiB buffer / 8 steps x 4 steps per chunk.
  EXPECT_EQ(ChooseNccl({Collective::kAllReduce, 1u << 30, 8, 1}, {}).chunk_bytes, 2u << 20);
  NcclSettings buff;
  buff.buffsize = 8 << 20;
  EXPECT_EQ(ChooseNccl({Collective::kAllReduce, 1u << 30, 8, 1}, buff).chunk_bytes, 4u << 20);
}

TEST(NcclSettings, ReadFromTheRecordedEnvironment) {
  NcclSettings s = NcclSettingsFrom({{"NCCL_ALGO", "Tree"}, {"NCCL_PROTO", "LL128"},
                                     {"NCCL_MIN_NCHANNELS", "2"}, {"NCCL_MAX_NCHANNELS", "8"},
                                     {"NCCL_NTHREADS", "256"}, {"NCCL_BUFFSIZE", "0x800000"},
                                     {"OTHER", "x"}},
                                    "2.28.9");
  EXPECT_EQ(s.algo, "Tree");
  EXPECT_EQ(s.proto, "LL128");
  EXPECT_EQ(s.min_channels, 2);
  EXPECT_EQ(s.max_channels, 8);
  EXPECT_EQ(s.nthreads, 256);
  EXPECT_EQ(s.buffsize, 8u << 20);
  EXPECT_EQ(s.version, "2.28.9");
}

TEST(NcclProtocols, WireBytesCarryThePayloadAtTheirEfficiency) {
  EXPECT_EQ(NcclWireBytes(NcclProto::kLL, 4), 8u);          // one 8-byte line, 4 bytes of data
  EXPECT_EQ(NcclWireBytes(NcclProto::kLL128, 120), 128u);   // one 128-byte line, 120 of data
  EXPECT_EQ(NcclWireBytes(NcclProto::kLL128, 1200), 1280u);
  EXPECT_EQ(NcclWireBytes(NcclProto::kSimple, 1000), 1000u);
}

// --- lowering

// N ranks, PER_NODE to a host, lowered with the nccl algorithm and SETTINGS.
Schedule LowerNccl(Collective c, uint64_t bytes, int n, int per_node, const NcclSettings& settings) {
  Schedule s;
  s.world_size = n;
  for (int r = 0; r < n; ++r) s.endpoints.push_back({EndpointRole::kWorker, r, r / per_node});
  for (int h = 0; h < (n + per_node - 1) / per_node; ++h) s.hosts.push_back("node" + std::to_string(h));
  s.ranks.resize(size_t(n));
  s.ops.emplace_back();
  s.ops[0].collective = c;
  s.ops[0].bytes = bytes;
  LowerOptions o;
  o.algorithm = kNcclAlgorithm;
  o.nccl = settings;
  CollectiveSpec spec;
  spec.collective = c;
  spec.bytes = bytes;
  for (int r = 0; r < n; ++r) spec.members.push_back(r);
  StepBuilder b(&s);
  b.BeginOp(0);
  s.ops[0].algorithm = LowerCollective(*FindAlgorithm(kNcclAlgorithm), spec, o, b, &s.ops[0]);
  b.EndOp();
  s.iterations = 1;
  return s;
}

// Bytes sent by each rank, and the sum over transfers between hosts.
struct Sent {
  std::vector<uint64_t> per_rank;
  uint64_t inter_node = 0;
};
Sent Count(const Schedule& s) {
  Sent out;
  out.per_rank.assign(s.ranks.size(), 0);
  for (size_t r = 0; r < s.ranks.size(); ++r)
    for (const Step& st : s.ranks[r].steps)
      if (st.type == StepType::kSend) {
        out.per_rank[r] += st.bytes;
        if (!st.local) out.inter_node += st.bytes;
      }
  return out;
}

TEST(NcclLowering, RingSendsTwoNMinusOneOverNOfTheWireBytesPerRank) {
  // Simple: wire bytes = payload. S divisible by n x channels x pieces.
  NcclSettings ring_simple;
  ring_simple.algo = "Ring";
  ring_simple.proto = "Simple";
  for (int n : {2, 8, 16}) {
    const uint64_t S = uint64_t(n) * 32 * 16 * 3 * 1024;  // 1.5 MiB x n: one piece per channel
    Schedule s = LowerNccl(Collective::kAllReduce, S, n, 8, ring_simple);
    EXPECT_TRUE(CheckSchedule(s).empty());
    EXPECT_EQ(s.ops[0].nccl_algorithm, "Ring");
    EXPECT_EQ(s.ops[0].nccl_protocol, "Simple");
    for (uint64_t sent : Count(s).per_rank) EXPECT_EQ(sent, 2 * uint64_t(n - 1) * S / uint64_t(n)) << n;
  }
  // LL128: 128 bytes on the wire for each 120 of data.
  NcclSettings ll128 = ring_simple;
  ll128.proto = "LL128";
  const int n = 8;
  const uint64_t S = 120ull * 8 * 32 * 10;  // whole lines per rank block and channel
  Schedule s = LowerNccl(Collective::kAllReduce, S, n, 8, ll128);
  for (uint64_t sent : Count(s).per_rank) EXPECT_EQ(sent, 2 * uint64_t(n - 1) * (S * 128 / 120) / n);
}

TEST(NcclLowering, DoubleTreeMovesEachHalfUpAndDownEveryEdgeOnce) {
  // Two trees, each over the nodes with a chain inside each node: every one
  // of the n - 1 edges of a tree carries its half S/2 up and down, so all
  // ranks together send 2 (n - 1) S; of that, the 2 (nodes - 1) inter-node
  // edges of both trees carry 2 (nodes - 1) S (nccl#457: "for tree it
  // would be 2*S" per GPU, which is 2 (n - 1) S over n - 1 senders per tree).
  NcclSettings tree;
  tree.algo = "Tree";
  tree.proto = "Simple";
  for (auto [n, per_node] : {std::pair{16, 8}, {32, 8}, {12, 4}, {6, 1}}) {
    const uint64_t S = 64ull * 32 * 1024;  // 2 MiB, even across up to 64 channels
    Schedule s = LowerNccl(Collective::kAllReduce, S, n, per_node, tree);
    EXPECT_TRUE(CheckSchedule(s).empty());
    Sent sent = Count(s);
    uint64_t total = 0;
    for (uint64_t v : sent.per_rank) total += v;
    const uint64_t nodes = uint64_t(n / per_node);
    EXPECT_EQ(total, 2 * uint64_t(n - 1) * S) << n;
    EXPECT_EQ(sent.inter_node, 2 * (nodes - 1) * S) << n;
  }
}

TEST(NcclLowering, RecordedChoiceWinsAndScheduleSaysWhy) {
  Schedule s;
  s.world_size = 4;
  for (int r = 0; r < 4; ++r) {
    s.endpoints.push_back({EndpointRole::kWorker, r, r / 2});
    s.hosts.push_back("h" + std::to_string(r));
  }
  s.ranks.resize(4);
  s.ops.emplace_back();
  CollectiveSpec spec;
  spec.collective = Collective::kAllReduce;
  spec.bytes = 1 << 20;
  spec.members = {0, 1, 2, 3};
  spec.recorded_algo = NcclAlgo::kRing;
  spec.recorded_proto = NcclProto::kLL;
  spec.recorded_channels = 3;
  LowerOptions o;
  StepBuilder b(&s);
  b.BeginOp(0);
  LowerCollective(*FindAlgorithm(kNcclAlgorithm), spec, o, b, &s.ops[0]);
  b.EndOp();
  EXPECT_TRUE(CheckSchedule(s).empty());
  EXPECT_EQ(s.ops[0].nccl_algorithm, "Ring");
  EXPECT_EQ(s.ops[0].nccl_protocol, "LL");
  EXPECT_EQ(s.ops[0].nccl_channels, 3);
  EXPECT_EQ(s.ops[0].nccl_reason, "recorded");
  std::set<uint16_t> channels;
  for (const auto& r : s.ranks)
    for (const Step& st : r.steps)
      if (st.type == StepType::kSend) channels.insert(st.channel);
  EXPECT_EQ(channels, (std::set<uint16_t>{0, 1, 2}));
}

}  // namespace
}  // namespace dltrace::models
