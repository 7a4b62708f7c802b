// SPDX-License-Identifier: GPL-2.0-only
// CASSINI's time shifts against hand-computed offsets: jobs of known period
// and duty cycle on one link, periods of different length on the LCM circle,
// a chain of links in the affinity graph, and demand profiles from schedules.
#include <gtest/gtest.h>

#include "dltrace/models/cassini.h"
#include "dltrace/models/estimate.h"

namespace dltrace::models {
namespace {

constexpr double kMs = 1e6;
constexpr double kRate = 10e9;  // 10 Gbit/s

// Busy at full rate from 0 to BUSY_MS of every PERIOD_MS on link direction LINK.
JobDemand Duty(double period_ms, double busy_ms, uint32_t link = 0) {
  JobDemand d;
  d.period_ns = period_ms * kMs;
  d.links[link] = {{0, busy_ms * kMs, kRate}};
  return d;
}

TEST(Cassini, SamePeriodJobsInterleaveRightAfterEachOther) {
  // Two jobs, 100 ms period, 40 ms at line rate: B starts when A's phase ends
  // (40 ms, the smallest shift with no overlap).
  const CassiniPlan plan = PlaceCassini({Duty(100, 40), Duty(100, 40)}, {kRate});
  ASSERT_EQ(plan.start_ns.size(), 2u);
  EXPECT_NEAR(plan.start_ns[0], 0, 1e-3);
  EXPECT_NEAR(plan.start_ns[1], 40 * kMs, 1e-3);
  ASSERT_EQ(plan.links.size(), 1u);
  // All at zero: 40 ms of 20 Gbit/s on a 10 Gbit/s link, 10 Gbit/s too much: 50 MB per circle.
  EXPECT_NEAR(plan.links[0].excess_before, 0.040 * kRate / 8, 1e3);
  EXPECT_NEAR(plan.links[0].excess_after, 0, 1e-6);
  EXPECT_TRUE(plan.notes.empty());
}

TEST(Cassini, DifferentPeriodsShareTheLcmCircle) {
  // A: 50 ms period, busy 20 ms -> busy [0,20) and [50,70) of a 100 ms circle.
  // B: 100 ms, busy 30 ms: the only gap that fits it starts at 20 ms.
  const CassiniPlan plan = PlaceCassini({Duty(50, 20), Duty(100, 30)}, {kRate});
  EXPECT_NEAR(plan.start_ns[0], 0, 1e-3);
  EXPECT_NEAR(plan.start_ns[1], 20 * kMs, 1e-3);
  EXPECT_NEAR(plan.links[0].circle_ns, 100 * kMs, 1e-3);
  EXPECT_NEAR(plan.links[0].excess_after, 0, 1e-6);
}

TEST(Cassini, AffinityGraphCarriesShiftsAlongAChainOfLinks) {
  // A and B share link 0, B and C link 1 (100 ms, 40 ms busy each):
  // B = A + 40 ms, C = B + 40 ms = 80 ms.
  JobDemand a = Duty(100, 40, 0);
  JobDemand b = Duty(100, 40, 0);
  b.links[2] = b.links[0];  // link index 1, direction a->b
  JobDemand c = Duty(100, 40, 2);
  const CassiniPlan plan = PlaceCassini({a, b, c}, {kRate, kRate});
  EXPECT_NEAR(plan.start_ns[0], 0, 1e-3);
  EXPECT_NEAR(plan.start_ns[1], 40 * kMs, 1e-3);
  EXPECT_NEAR(plan.start_ns[2], 80 * kMs, 1e-3);
  for (const LinkShift& l : plan.links) EXPECT_NEAR(l.excess_after, 0, 1e-6) << l.link;
}

TEST(Cassini, JobsOnSeparateLinksStartAtZero) {
  const CassiniPlan plan = PlaceCassini({Duty(100, 40, 0), Duty(100, 40, 2)}, {kRate, kRate});
  EXPECT_EQ(plan.start_ns, (std::vector<double>{0, 0}));
  EXPECT_TRUE(plan.links.empty());
}

TEST(Cassini, ProfileOfAPeriodicJobHasItsPeriodAndDutyCycle) {
  // Two hosts on a dumbbell, 3 iterations of 6 ms compute then 10 MB each way
  // at 10 Gbit/s (8 ms): period 14 ms, busy 8 ms of it at line rate on the
  // bottleneck, both directions.
  TopologySpec spec;
  std::string error;
  ASSERT_TRUE(ParseTopology("dumbbell:hosts=2,rate=10Gbps,delay=0us", 2, &spec, &error)) << error;
  const TopologyGraph g = BuildTopology(spec);
  const Schedule s = PeriodicExchange(2, 3, 6000000, 10000000);
  const JobDemand d = ProfileJob(s, {0, 1}, 0, g, Link{10, 0});
  EXPECT_NEAR(d.period_ns, 14 * kMs, 1e3);
  // Every link of the path host0 -> host1 carries one direction, and back.
  EXPECT_EQ(d.links.size(), 2 * g.links.size());
  for (const auto& [link, segs] : d.links) {
    double busy_bits = 0;
    for (const DemandSegment& x : segs) busy_bits += x.bps * (x.end_ns - x.start_ns) * 1e-9;
    EXPECT_NEAR(busy_bits, 10e6 * 8, 1e3) << "link direction " << link;  // 10 MB per period
  }
}

}  // namespace
}  // namespace dltrace::models
