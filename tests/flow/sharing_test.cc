// SPDX-License-Identifier: GPL-2.0-only
// How flows share a link (FlowConfig::equal_shares): two flows whose routes
// differ in length share their sender's link equally once their latency is
// paid, on both solvers, against a closed form; SimGrid's latency weighting
// (equal_shares false) gives the shorter route more.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "dltrace/flow/flow_simulation.h"
#include "run_in_child.h"

namespace dltrace::flow {
namespace {

constexpr double kBytes = 1000000;

// Endpoint 0 (host 0) sends kBytes to endpoint 1 (host 1, its own switch:
// two 1 us links) and kBytes to endpoint 2 (host 4, across the dumbbell:
// three), both at once. No send buffer: each ends when it arrives.
FlowConfig TwoRoutes(bool equal_shares, FlowConfig::Solver solver) {
  auto s = OneIteration(3);
  models::StepBuilder b(s.get());
  AddTransferOp(s.get(), &b, 0, 1, uint64_t(kBytes));
  AddTransferOp(s.get(), &b, 0, 2, uint64_t(kBytes));
  FlowConfig config = HandComputedDumbbell();
  config.jobs = {Placed(s, {0, 1, 4})};
  config.send_buffer = 0;
  config.equal_shares = equal_shares;
  config.solver = solver;
  return config;
}

// End (s) of the message to endpoint 1, then of the one to endpoint 2.
std::vector<double> Ends(const FlowSimulation& sim) {
  std::vector<double> t(2, -1);
  for (const runs::FlowRecord& f : sim.flows())
    if (f.dst == 1 || f.dst == 2) t[size_t(f.dst - 1)] = double(f.end_ns) * 1e-9;
  return t;
}

class Sharing : public ::testing::TestWithParam<FlowConfig::Solver> {};

TEST_P(Sharing, RoutesOfDifferentLengthShareTheLinkEqually) {
  const double c = 10e9 / 8;  // bytes per second (bandwidth factor 1)
  const double near = 2e-6, far = 3e-6;  // the two routes' latencies
  // The near flow has host 0's link alone from 2 us until the far one's
  // latency ends at 3 us, then each has c / 2 until the near one is done;
  // the far one sends the rest alone.
  const double alone = c * (far - near);
  const double near_end = far + 2 * (kBytes - alone) / c;
  const double far_end = near_end + alone / c;
  const std::vector<double> equal = RunInChild(TwoRoutes(true, GetParam()), Ends);
  ASSERT_EQ(equal.size(), 2u);
  EXPECT_NEAR(equal[0], near_end, 2e-9);
  EXPECT_NEAR(equal[1], far_end, 2e-9);
  // SimGrid's weighting (LV08: latency plus weight-S over each link's
  // bandwidth) gives the near route the larger share: it ends sooner.
  const std::vector<double> weighted = RunInChild(TwoRoutes(false, GetParam()), Ends);
  ASSERT_EQ(weighted.size(), 2u);
  EXPECT_LT(weighted[0], near_end - 1e-5);
  EXPECT_NEAR(weighted[1], far_end, 2e-9);  // the link is busy throughout either way
}

INSTANTIATE_TEST_SUITE_P(Solvers, Sharing,
                         ::testing::Values(FlowConfig::Solver::kSimGrid, FlowConfig::Solver::kIncremental));

}  // namespace
}  // namespace dltrace::flow
