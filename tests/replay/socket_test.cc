// The socket transport over real TCP on 127.0.0.1, each endpoint in a thread
// of its own: messages on both sides of the sizes where the transport changes
// how it moves payload (one sendmsg with the header below 64 KiB, sendfile
// and splice from there, the staging buffer's size, rests of a large payload
// that go back through the buffer), several per connection and several
// connections per peer, all arrive whole: every endpoint completes with the
// bytes the lowering scheduled.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "dltrace/models/algorithms.h"
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

std::vector<RankResult> RunOverSockets(const models::Schedule& s) {
  SocketOptions o;
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
  lo.algorithm = algo;
  lo.channels = channels;
  lo.chunk_bytes = chunk_bytes;
  models::CollectiveSpec spec;
  spec.collective = c;
  spec.bytes = bytes;
  for (int i = 0; i < n; ++i) spec.members.push_back(i);
  return models::LowerSingleCollective(spec, n, lo);
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

}  // namespace
}  // namespace dltrace::replay
