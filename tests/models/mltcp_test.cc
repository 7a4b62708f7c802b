// SPDX-License-Identifier: GPL-2.0-only
// MLTCP's bookkeeping against hand counts: bytes per iteration from the
// schedule, the ratio sent so far (per job and per endpoint), and F.
#include <gtest/gtest.h>

#include "dltrace/models/cassini.h"
#include "dltrace/models/mltcp.h"

namespace dltrace::models {
namespace {

TEST(Mltcp, FunctionIsLinearInTheBytesRatioAndClamped) {
  MltcpFunction f{2.0, 0.25};
  EXPECT_DOUBLE_EQ(f(0.0), 0.25);
  EXPECT_DOUBLE_EQ(f(0.5), 1.25);
  EXPECT_DOUBLE_EQ(f(1.0), 2.25);
  EXPECT_DOUBLE_EQ(f(1.7), 2.25);
  EXPECT_DOUBLE_EQ(f(-1), 0.25);
  MltcpFunction d;  // defaults: 0.5 at the start of an iteration, 1.5 at its end, mean 1
  EXPECT_DOUBLE_EQ((d(0) + d(1)) / 2, 1.0);
}

TEST(Mltcp, IterationBytesComeFromTheSchedule) {
  // 2 endpoints, 3 iterations, each endpoint sends 1000 bytes per iteration.
  const Schedule s = PeriodicExchange(2, 3, 500, 1000);
  JobProgress p(s);
  for (int it = 0; it < 3; ++it) {
    EXPECT_EQ(p.IterationBytes(it), 2000u);
    EXPECT_EQ(p.IterationBytes(it, 0), 1000u);
    EXPECT_EQ(p.IterationBytes(it, 1), 1000u);
  }
  EXPECT_EQ(p.IterationBytes(3), 0u);
}

TEST(Mltcp, RatioCountsTheCurrentIterationOnly) {
  const Schedule s = PeriodicExchange(2, 3, 500, 1000);
  JobProgress p(s);
  EXPECT_EQ(p.CurrentIteration(0), -1);
  EXPECT_DOUBLE_EQ(p.Ratio(0, MltcpScope::kJob), 0.0);
  // Op 1 is iteration 0's exchange, op 3 iteration 1's.
  p.Sent(0, 1, 600);
  EXPECT_DOUBLE_EQ(p.Ratio(0, MltcpScope::kEndpoint), 0.6);
  EXPECT_DOUBLE_EQ(p.Ratio(0, MltcpScope::kJob), 0.3);
  p.Sent(1, 1, 1000);
  EXPECT_DOUBLE_EQ(p.Ratio(0, MltcpScope::kJob), 0.8);
  EXPECT_DOUBLE_EQ(p.Ratio(1, MltcpScope::kEndpoint), 1.0);
  p.Sent(0, 1, 400);
  p.Sent(0, 3, 250);  // endpoint 0 moves on to iteration 1
  EXPECT_EQ(p.CurrentIteration(0), 1);
  EXPECT_DOUBLE_EQ(p.Ratio(0, MltcpScope::kEndpoint), 0.25);
  EXPECT_DOUBLE_EQ(p.Ratio(0, MltcpScope::kJob), 0.125);
  EXPECT_DOUBLE_EQ(p.Ratio(1, MltcpScope::kJob), 1.0);  // still in iteration 0, all sent
  EXPECT_EQ(p.SentBytes(0), 2000u);
}

TEST(Mltcp, BeginStartsTheIterationAndLateBytesOfAnEarlierOneDoNotGoBack) {
  const Schedule s = PeriodicExchange(2, 3, 500, 1000);
  JobProgress p(s);
  p.Sent(0, 1, 900);  // iteration 0: 90 %
  p.Begin(0, 3);      // iteration 1's exchange starts before the rest of 0 is acknowledged
  EXPECT_EQ(p.CurrentIteration(0), 1);
  EXPECT_DOUBLE_EQ(p.Ratio(0, MltcpScope::kEndpoint), 0.0);
  p.Sent(0, 1, 100);  // the last of iteration 0 acknowledged: still in iteration 1
  EXPECT_EQ(p.CurrentIteration(0), 1);
  EXPECT_EQ(p.SentBytes(0, 0), 1000u);
  p.Sent(0, 3, 300);
  EXPECT_DOUBLE_EQ(p.Ratio(0, MltcpScope::kEndpoint), 0.3);
}

TEST(Mltcp, UnknownEndpointsAndOpsAreIgnored) {
  const Schedule s = PeriodicExchange(2, 1, 500, 1000);
  JobProgress p(s);
  p.Sent(5, 1, 100);
  p.Sent(0, 99, 100);
  p.Sent(-1, 1, 100);
  EXPECT_EQ(p.SentBytes(0), 0u);
  EXPECT_DOUBLE_EQ(p.Ratio(7, MltcpScope::kJob), 0.0);
}

}  // namespace
}  // namespace dltrace::models
