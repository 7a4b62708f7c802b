// The alpha-beta estimate against closed forms: a ring all-reduce takes
// 2(n-1) steps of (alpha + S/n / B); compute gaps add up along dependencies.
#include <gtest/gtest.h>

#include "dltrace/models/algorithms.h"
#include "dltrace/models/estimate.h"

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

}  // namespace
}  // namespace dltrace::models
