// SPDX-License-Identifier: GPL-2.0-only
// The socket transport over real TCP on 127.0.0.1, each endpoint in a thread
// of its own: messages on both sides of the sizes where the transport changes
// how it moves payload (one sendmsg with the header below 64 KiB, sendfile
// and splice from there, the staging buffer's size, rests of a large payload
// that go back through the buffer), several per connection and several
// connections per peer, all arrive whole: every endpoint completes with the
// bytes the lowering scheduled. The host's reduction arithmetic adds as many
// bytes as the closed forms say, and none when it is off.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "dltrace/models/algorithms.h"
#include "dltrace/replay/host_reduction.h"
#include "dltrace/replay/rendezvous.h"
#include "dltrace/executor/schedule_tools.h"
#include "dltrace/replay/socket_replay.h"
#include "../executor/sound_run.h"

namespace dltrace::replay {
namespace {

using executor::ExecutorOptions;
using executor::RankResult;
using executor::ScheduleHash;
using formats::Collective;

std::vector<RankResult> RunOverSockets(const models::Schedule& s, bool reduce = true) {
  SocketOptions o;
  o.reduce = reduce;
  o.schedule_hash = ScheduleHash(s);
  o.connect_timeout_s = 20;
  o.peer_timeout_s = 20;
  std::vector<int> fds;
  for (size_t e = 0; e < s.ranks.size(); ++e) {
    uint16_t port = 0;
    std::string error;
    int fd = ListenOn("127.0.0.1", 0, &port, &error);
    EXPECT_GE(fd, 0) << error;
    fds.push_back(fd);
    o.hosts.push_back({"127.0.0.1", port});
  }
  std::vector<RankResult> results(s.ranks.size());
  std::vector<std::thread> threads;
  for (size_t e = 0; e < s.ranks.size(); ++e) {
    SocketOptions mine = o;
    mine.self = int32_t(e);
    mine.listen_fd = fds[e];
    threads.emplace_back([&s, &results, e, mine] { results[e] = RunSocketReplay(s, mine, ExecutorOptions{}); });
  }
  for (auto& t : threads) t.join();
  return results;
}

models::Schedule Lower(const std::string& algo, Collective c, int n, uint64_t bytes, int channels,
                       uint64_t chunk_bytes) {
  models::LowerOptions lo;
  lo.channels = channels;
  lo.chunk_bytes = chunk_bytes;
  return executor::Single(algo, c, n, bytes, lo);
}

TEST(SocketReplay, MessagesAroundTheZeroCopySizesArriveWhole) {
  constexpr uint64_t K = 64 << 10, M = 1 << 20;
  struct Case {
    const char* algo;
    Collective collective;
    uint64_t bytes;
    int channels;
    uint64_t chunk_bytes;
  };
  // Ring all-reduce on 3 ranks sends messages of bytes / (3 * channels * pieces).
  const Case cases[] = {
      {"ring", Collective::kAllReduce, 3 * 2 * 5, 2, 0},             // 5 B messages
      {"ring", Collective::kAllReduce, 3 * 2 * (K - 1), 2, 0},       // just below zero copy
      {"ring", Collective::kAllReduce, 3 * 2 * K, 2, 0},             // exactly there
      {"ring", Collective::kAllReduce, 3 * 2 * (K + 1), 2, 0},       // a 1-byte rest after it
      {"ring", Collective::kAllReduce, 3 * (2 * K + 24), 1, 0},      // rest of 24 B: a header's size
      {"ring", Collective::kAllReduce, 3 * 2 * (3 * M + 7), 2, 0},   // several splices and a rest
      {"ring", Collective::kAllReduce, 24 * M + 5, 2, M / 3 + 11},   // pipelined pieces, uneven
      {"ps", Collective::kAllReduce, 6 * M + 3, 1, 0},               // pushes and pulls, one server
      {"pairwise", Collective::kAllToAll, 3 * (K + 3) * 4, 2, 0},    // every pair at once
  };
  for (const Case& c : cases) {
    models::Schedule s = Lower(c.algo, c.collective, 3, c.bytes, c.channels, c.chunk_bytes);
    std::string what = std::string(c.algo) + " " + std::to_string(c.bytes) + " B, " +
                       std::to_string(c.channels) + " channel(s), chunks of " + std::to_string(c.chunk_bytes);
    ASSERT_TRUE(models::CheckSchedule(s).empty()) << what;
    ExpectSoundRun(s, RunOverSockets(s), what);
  }
}

// A ring all-reduce of S bytes over n ranks (S a multiple of n): each rank
// receives n - 1 blocks of S/n in the reduce-scatter half and adds each into
// its own, and only forwards the n - 1 of the all-gather half, so it reduces
// (n - 1)/n * S. A chain reduce towards the root: every rank but the first
// of the chain adds the S bytes it receives, (n - 1) * S in all. With the
// arithmetic off, nothing is added, and every byte still arrives.
TEST(SocketReplay, ReduceReceivesAreAddedAsTheClosedFormsSay) {
  const int n = 4;
  // Blocks of 1000 B (copied) and of 1 MiB (past the zero-copy size: read, not spliced).
  for (uint64_t block : {uint64_t(1000), uint64_t(1) << 20}) {
    const uint64_t bytes = block * n;
    const models::Schedule ring = Lower("ring", Collective::kAllReduce, n, bytes, 1, 0);
    const models::Schedule chain = Lower("ring", Collective::kReduce, n, bytes, 1, 0);
    for (bool reduce : {true, false}) {
      const std::string what = std::to_string(bytes) + " B, arithmetic " + (reduce ? "on" : "off");
      const auto ring_results = RunOverSockets(ring, reduce);
      ExpectSoundRun(ring, ring_results, "ring all-reduce " + what);
      for (const RankResult& r : ring_results)
        EXPECT_EQ(r.bytes_reduced, reduce ? (n - 1) * bytes / n : 0) << "endpoint " << r.endpoint << ", " << what;
      const auto chain_results = RunOverSockets(chain, reduce);
      ExpectSoundRun(chain, chain_results, "chain reduce " + what);
      uint64_t total = 0;
      for (const RankResult& r : chain_results) total += r.bytes_reduced;
      EXPECT_EQ(total, reduce ? (n - 1) * bytes : 0) << what;
    }
  }
}

// The arithmetic itself: what arrives is added into the accumulator in the
// op's datatype, at the message's offset.
TEST(HostReduction, AddsInTheRecordedDatatype) {
  EXPECT_EQ(ReduceTypeOf(formats::DataType::Float64), ReduceType::kFloat64);
  EXPECT_EQ(ReduceTypeOf(formats::DataType::Int32), ReduceType::kInt32);
  EXPECT_EQ(ReduceTypeOf(formats::DataType::Uint64), ReduceType::kInt64);
  EXPECT_EQ(ReduceTypeOf(formats::DataType::BFloat16), ReduceType::kFloat32);
  EXPECT_EQ(ReduceTypeOf(formats::DataType::Unknown), ReduceType::kFloat32);  // the default

  models::Schedule s = Lower("ring", Collective::kAllReduce, 2, 64, 1, 0);
  HostReduction h(s, 1);
  uint64_t tag = 0;
  int reduces = 0;
  for (const models::Step& st : s.ranks[1].steps)
    if (st.type == models::StepType::kRecv && st.reduce) {
      tag = st.tag;
      ++reduces;
    }
  ASSERT_EQ(reduces, 1);  // of 2 ranks' ring: one block reduced, one gathered
  EXPECT_EQ(h.TypeOf(tag), ReduceType::kFloat32);  // no datatype recorded: float
  ASSERT_GE(h.accumulator_bytes(), 32u);

  const float a[3] = {1.5f, 2.25f, -4.0f}, b[2] = {0.5f, 8.0f};
  h.Add(ReduceType::kFloat32, 0, reinterpret_cast<const uint8_t*>(a), sizeof a);
  h.Add(ReduceType::kFloat32, 0, reinterpret_cast<const uint8_t*>(a), sizeof a);
  h.Add(ReduceType::kFloat32, 4, reinterpret_cast<const uint8_t*>(b), sizeof b);  // one element in
  float got[3];
  std::memcpy(got, h.accumulator(), sizeof got);
  EXPECT_FLOAT_EQ(got[0], 3.0f);
  EXPECT_FLOAT_EQ(got[1], 4.5f + 0.5f);
  EXPECT_FLOAT_EQ(got[2], -8.0f + 8.0f);
  EXPECT_EQ(h.bytes_reduced(), 2 * sizeof a + sizeof b);

  HostReduction d(s, 1);
  uint8_t unaligned[1 + 2 * sizeof(double) + 3] = {};
  const double x[2] = {0.25, 1e10};
  std::memcpy(unaligned + 1, x, sizeof x);
  d.Add(ReduceType::kFloat64, 0, unaligned + 1, sizeof x);
  d.Add(ReduceType::kFloat64, 0, unaligned + 1, sizeof x + 3);  // a 3-byte tail: counted, not added
  double sum[2];
  std::memcpy(sum, d.accumulator(), sizeof sum);
  EXPECT_DOUBLE_EQ(sum[0], 0.5);
  EXPECT_DOUBLE_EQ(sum[1], 2e10);
  EXPECT_EQ(d.bytes_reduced(), 2 * sizeof x + 3);
}

}  // namespace
}  // namespace dltrace::replay
