// SPDX-License-Identifier: GPL-2.0-only
// Coalescing in the flow simulator (FlowConfig::coalesce): equal messages
// that start together between the same two hosts go as one SimGrid
// communication carrying their bytes and weight. Checked against max-min
// shares computed by hand, with a competing flow that only a correctly
// weighted bundle leaves at its fair share. Every simulation runs in a child
// process of its own (run_in_child.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "dltrace/flow/flow_simulation.h"
#include "dltrace/models/algorithms.h"
#include "run_in_child.h"

namespace dltrace::flow {
namespace {

// One iteration of N endpoints; each of TRANSFERS = (from, to, bytes) is an
// op of its own with no dependency, so all start at once.
std::shared_ptr<models::Schedule> AllAtOnce(int32_t n, const std::vector<std::tuple<int32_t, int32_t, uint64_t>>& transfers) {
  auto s = OneIteration(n);
  models::StepBuilder b(s.get());
  for (const auto& [from, to, bytes] : transfers) AddTransferOp(s.get(), &b, from, to, bytes);
  return s;
}

constexpr uint64_t MB = 1000000;
constexpr double kC = 10e9 / 8;  // HandComputedDumbbell's links, bytes per second

// The cases' two jobs: job 0's endpoints 0, 1 and 2 on host 0 send A, B and
// C bytes to endpoints 3, 4 and 5 on host 4, all at once; job 1's host 1
// sends 1 MB to host 5 at the same time.
std::vector<models::JobPlacement> ThreeSendersAndOneBeside(uint64_t a, uint64_t b, uint64_t c) {
  return {Placed(AllAtOnce(6, {{0, 3, a}, {1, 4, b}, {2, 5, c}}), {0, 0, 0, 4, 4, 4}),
          Placed(AllAtOnce(2, {{0, 1, MB}}), {1, 5})};
}

// Each network message's completion time in seconds (job 0's by sender,
// then job 1's), then how many messages joined another's communication.
std::vector<double> FctsAndCoalesced(const FlowSimulation& sim) {
  std::vector<std::tuple<uint32_t, int32_t, double>> fcts;
  for (const runs::FlowRecord& f : sim.flows())
    if (!f.local) fcts.emplace_back(f.job, f.src, double(f.end_ns - f.start_ns) * 1e-9);
  std::sort(fcts.begin(), fcts.end());
  std::vector<double> out;
  for (const auto& f : fcts) out.push_back(std::get<2>(f));
  out.push_back(double(sim.messages_coalesced()));
  return out;
}

TEST(FlowCoalesce, ABundleTakesItsMembersShareBesideAnotherFlow) {
  // Dumbbell of 8 hosts at 10 Gbit/s (0-3 left, 4-7 right), three 1 us
  // links between any two sides. Job 0: three endpoints on host 0 each send
  // 1 MB to one of three on host 4, all at once (one bundle of 3). Job 1:
  // host 1 sends 1 MB to host 5 at the same time. Four flows share the
  // bottleneck, so max-min gives each C / 4 (host 0's link carries 3 C / 4):
  // every message takes 4 MB / C + 3 us. A bundle sharing as one flow would
  // leave job 1 C / 2 (2 MB / C) and itself take 6 MB / C.
  FlowConfig config = HandComputedDumbbell();
  config.jobs = ThreeSendersAndOneBeside(MB, MB, MB);
  const double latency = 3e-6;  // three 1 us links
  const double expected = 4 * MB / kC + latency;

  std::vector<double> alone;
  for (const bool coalesce : {false, true}) {
    config.coalesce = coalesce;
    const std::vector<double> got = RunInChild(config, FctsAndCoalesced);
    ASSERT_EQ(got.size(), 5u) << "coalesce " << coalesce;
    std::printf("coalesce %d: fct ms %.6f %.6f %.6f | %.6f (hand: %.6f), %g joined\n", coalesce, got[0] * 1e3,
                got[1] * 1e3, got[2] * 1e3, got[3] * 1e3, expected * 1e3, got[4]);
    for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(got[i], expected, 0.001 * expected) << "message " << i;
    EXPECT_EQ(got[4], coalesce ? 2.0 : 0.0);
    // The bundle's weight applies from the instant the members' would
    // have (their latency paid), so the runs agree to the nanosecond that
    // flows.csv keeps, not only to the hand formula's 0.1 %.
    if (!coalesce) alone = got;
    else
      for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(got[i], alone[i], 2e-9) << "message " << i;
  }
}

TEST(FlowCoalesce, WithoutLatencyEachGoesAlone) {
  // As the first case on links without delay: SimGrid shares a flow from
  // its start then, so a bundle's weight could not wait for its latency;
  // each message goes as its own flow, at C / 4: 4 MB / C.
  FlowConfig config = HandComputedDumbbell();
  config.topology = "dumbbell:hosts=8,rate=10Gbps,delay=0us";
  config.jobs = ThreeSendersAndOneBeside(MB, MB, MB);
  const std::vector<double> got = RunInChild(config, FctsAndCoalesced);
  ASSERT_EQ(got.size(), 5u);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(got[i], 4 * MB / kC, 0.001 * 4 * MB / kC) << "message " << i;
  EXPECT_EQ(got[4], 0.0);
}

TEST(FlowCoalesce, UnequalMessagesGoAlone) {
  // As above with job 0's messages of 1, 2 and 3 MB: no bundle. Max-min
  // (four flows on the bottleneck, C / 4 each): the two 1 MB messages end at
  // 4 MB / C, when the others have 1 and 2 MB left. Those two share C, C / 2
  // each: the 2 MB one ends 2 MB / C later (6 MB / C), and the 3 MB one has
  // 1 MB left at C: 7 MB / C.
  FlowConfig config = HandComputedDumbbell();
  config.jobs = ThreeSendersAndOneBeside(MB, 2 * MB, 3 * MB);
  const double latency = 3e-6;
  const std::vector<double> got = RunInChild(config, FctsAndCoalesced);
  ASSERT_EQ(got.size(), 5u);
  const double expected[] = {4 * MB / kC + latency, 6 * MB / kC + latency, 7 * MB / kC + latency,
                             4 * MB / kC + latency};
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(got[i], expected[i], 0.001 * expected[i]) << "message " << i;
  EXPECT_EQ(got[4], 0.0);
}

}  // namespace
}  // namespace dltrace::flow
