// SPDX-License-Identifier: GPL-2.0-only
// The alpha-beta estimate against closed forms: a ring all-reduce takes
// 2(n-1) steps of (alpha + S/n / B); compute gaps add up along dependencies.
#include <gtest/gtest.h>

#include "dltrace/models/algorithms.h"
#include "dltrace/models/estimate.h"
#include "dltrace/models/iteration_time.h"

namespace dltrace::models {
namespace {

Schedule Ring(int n, uint64_t bytes, const char* algo = "ring") {
  CollectiveSpec spec;
  spec.collective = formats::Collective::kAllReduce;
  spec.bytes = bytes;
  for (int i = 0; i < n; ++i) spec.members.push_back(i);
  LowerOptions o;
  o.algorithm = algo;
  return LowerSingleCollective(spec, n, o);
}

TEST(Estimate, RingAllReduceIsTwoNMinusOneStepsOfAlphaPlusBlockOverBandwidth) {
  const Link net{100, 5000};  // 100 Gbit/s, 5 us
  for (int n : {2, 3, 8, 13}) {
    const uint64_t S = uint64_t(n) * (1 << 20);
    Estimate e = EstimateSchedule(Ring(n, S), net);
    ASSERT_TRUE(e.complete);
    double step = 5000 + double(S / n) * 8 / 100;
    EXPECT_NEAR(e.total_ns, 2 * (n - 1) * step, 1e-6 * e.total_ns) << n;
    EXPECT_NEAR(e.ops[0].duration_ns(), e.total_ns, 1e-6);
    EXPECT_NEAR(e.iterations[0].duration_ns(), e.total_ns, 1e-6);
  }
}

TEST(Estimate, SyncParameterServerIsAPushThenAPull) {
  const Link net{100, 0};
  const int n = 4;
  CollectiveSpec spec;
  spec.bytes = 1 << 20;
  for (int i = 0; i < n; ++i) spec.members.push_back(i);
  LowerOptions o;
  o.algorithm = "ps";
  Estimate e = EstimateSchedule(LowerSingleCollective(spec, n, o), net);
  // No contention is modelled: one push and one pull of the whole vector.
  EXPECT_NEAR(e.total_ns, 2 * double(spec.bytes) * 8 / 100, 1e-3);
}

TEST(Estimate, ComputeStepsAddAlongDependencies) {
  Schedule s;
  s.endpoints = {{EndpointRole::kWorker, 0, 0}, {EndpointRole::kWorker, 1, 1}};
  s.hosts = {"a", "b"};
  s.ranks.resize(2);
  s.ops.resize(1);
  StepBuilder b(&s);
  b.BeginOp(0);
  uint32_t c = b.Compute(0, 1000, {});
  b.Transfer(0, 1, 100, 0, {c}, {});
  b.EndOp();
  Estimate e = EstimateSchedule(s, Link{8, 50});  // 8 Gbit/s: one byte per ns
  EXPECT_NEAR(e.total_ns, 1000 + 50 + 100, 1e-9);
  EXPECT_NEAR(e.ops[0].duration_ns(), 150, 1e-9);  // the op's transfer only
}

TEST(Estimate, ReceiveWithoutSendLeavesTheEstimateIncomplete) {
  Schedule s = Ring(3, 3072);
  s.ranks[0].steps[0].tag += 99;
  EXPECT_FALSE(EstimateSchedule(s, Link{100, 0}).complete);
}

// The host model: after each of the n-1 blocks a rank receives in the
// reduce-scatter it adds the block into its own (block / rate) and pays the
// per-message cost before sending on, so the ring takes that much longer per step.
TEST(Estimate, HostModelAddsTheReductionOfEachReceivedBlockToTheReduceScatter) {
  const Link net{100, 5000};
  for (int n : {2, 4, 7}) {
    const uint64_t S = uint64_t(n) * (1 << 20);
    CollectiveSpec spec;
    spec.collective = formats::Collective::kAllReduce;
    spec.bytes = S;
    for (int i = 0; i < n; ++i) spec.members.push_back(i);
    LowerOptions o;
    o.algorithm = "ring";
    o.reduce_gbps = 2;         // 2 bytes per ns
    o.per_message_ns = 30000;  // 30 us
    Estimate e = EstimateSchedule(LowerSingleCollective(spec, n, o), net);
    ASSERT_TRUE(e.complete);
    const double step = 5000 + double(S / n) * 8 / 100;
    const double host = double(S / n) / 2 + 30000;
    EXPECT_NEAR(e.total_ns, 2 * (n - 1) * step + (n - 1) * host, 1e-6 * e.total_ns) << n;
  }
}

// Iteration i is done at its latest end anywhere; its time runs from i-1
// being done (the first from the job's start), so the times add up.
TEST(IterationTime, FromOneIterationBeingDoneToTheNextOnAnyEndpoint) {
  IterationClock c;
  // Two endpoints whose iterations overlap, as pipeline stages' do.
  c.NoteEnd(0, 100);
  c.NoteEnd(0, 140);  // the other endpoint finishes iteration 0 later
  c.NoteEnd(1, 130);  // and its iteration 1 ends before iteration 0 is done
  c.NoteEnd(1, 260);
  c.NoteEnd(2, 380);
  c.NoteEnd(-1, 1000);  // not an iteration
  std::vector<double> t = c.TimesNs(10);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0], 130);  // 140 - 10
  EXPECT_EQ(t[1], 120);  // 260 - 140
  EXPECT_EQ(t[2], 120);  // 380 - 260
  EXPECT_EQ(t[0] + t[1] + t[2], 380 - 10);
}

TEST(IterationTime, AnIterationWithoutWorkOrDoneEarlyTakesNoTime) {
  IterationClock c(4);
  c.NoteEnd(0, 50);
  c.NoteEnd(2, 40);   // done before iteration 0 was: no time of its own
  c.NoteEnd(3, 90);
  std::vector<double> t = c.TimesNs(0);
  EXPECT_EQ(t, (std::vector<double>{50, 0, 0, 40}));
}

}  // namespace
}  // namespace dltrace::models
