// SPDX-License-Identifier: GPL-2.0-only
// The flow simulator's send buffer (FlowConfig::send_buffer): when a send is
// done, so that the sender's next step may start, against closed forms on
// the hand-computed dumbbell, on both solvers.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "dltrace/flow/flow_simulation.h"
#include "run_in_child.h"

namespace dltrace::flow {
namespace {

constexpr uint64_t kFirst = 1000000, kSecond = 100000;  // bytes

// Endpoint 0 sends kFirst bytes to endpoint 1, then, once that send is
// done, kSecond bytes to endpoint 2 (all on the dumbbell's left switch:
// two 1 us links apart).
std::shared_ptr<models::Schedule> TwoSends() {
  auto s = OneIteration(3);
  models::StepBuilder b(s.get());
  const uint32_t first = AddTransferOp(s.get(), &b, 0, 1, kFirst);
  AddTransferOp(s.get(), &b, 0, 2, kSecond, {first});
  return s;
}

// Start and end (s) of op 0's message, then op 1's.
std::vector<double> Times(const FlowSimulation& sim) {
  std::vector<double> t(4, -1);
  for (const runs::FlowRecord& f : sim.flows())
    if (f.op < 2) {
      t[2 * f.op] = double(f.start_ns) * 1e-9;
      t[2 * f.op + 1] = double(f.end_ns) * 1e-9;
    }
  return t;
}

std::vector<double> Simulate(uint64_t send_buffer, FlowConfig::Solver solver) {
  FlowConfig config = HandComputedDumbbell();
  config.jobs = {Placed(TwoSends(), {0, 1, 2})};
  config.send_buffer = send_buffer;
  config.solver = solver;
  return RunInChild(config, Times);
}

class SendBuffer : public ::testing::TestWithParam<FlowConfig::Solver> {};

TEST_P(SendBuffer, TheNextSendStartsWhenTheBufferHoldsTheRest) {
  const double c = 10e9 / 8;     // bytes per second of every link (bandwidth factor 1)
  const double latency = 2e-6;   // host 0 to host 1: two 1 us links
  const double ns = 1e-9;        // the records' resolution
  // Without a buffer the second send starts when the first one's last byte arrived.
  const std::vector<double> none = Simulate(0, GetParam());
  ASSERT_EQ(none.size(), 4u);
  EXPECT_NEAR(none[1], latency + kFirst / c, 2 * ns);
  EXPECT_NEAR(none[2], none[1], 2 * ns);
  // With 256 KiB, once all but the last 256 KiB arrived.
  const uint64_t buffer = 256 << 10;
  const std::vector<double> some = Simulate(buffer, GetParam());
  ASSERT_EQ(some.size(), 4u);
  EXPECT_NEAR(some[2], latency + double(kFirst - buffer) / c, 2 * ns);
  // Host 0's link is busy from the first's latency on, with both messages' bytes.
  EXPECT_NEAR(some[1], latency + (kFirst + kSecond) / c, 20 * ns);
  // A buffer that holds the whole message: the second starts with the first.
  const std::vector<double> all = Simulate(2 * kFirst, GetParam());
  ASSERT_EQ(all.size(), 4u);
  EXPECT_NEAR(all[2], 0, 2 * ns);
  // Both pay the same latency, then share host 0's link equally until the
  // second is through; the first has the link's rest.
  EXPECT_NEAR(all[3], latency + 2 * kSecond / c, 20 * ns);
  EXPECT_NEAR(all[1], latency + (kFirst + kSecond) / c, 20 * ns);
}

INSTANTIATE_TEST_SUITE_P(Solvers, SendBuffer,
                         ::testing::Values(FlowConfig::Solver::kSimGrid, FlowConfig::Solver::kIncremental));

}  // namespace
}  // namespace dltrace::flow
