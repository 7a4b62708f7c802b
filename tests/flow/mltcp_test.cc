// SPDX-License-Identifier: GPL-2.0-only
// MLTCP in the flow-level engine (SimGrid): bandwidth shares weighted by
// F(bytes_ratio), against a case computed by hand and against plain max-min
// on two jobs that collide. Every simulation runs in a child process of its
// own (run_in_child.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "dltrace/flow/flow_simulation.h"
#include "dltrace/models/algorithms.h"
#include "dltrace/models/cassini.h"
#include "run_in_child.h"

namespace dltrace::flow {
namespace {

// One iteration of 3 endpoints: endpoint 0 sends TRANSFERS[i] = (to, bytes)
// one after another.
std::shared_ptr<models::Schedule> Sends(const std::vector<std::pair<int32_t, uint64_t>>& transfers) {
  auto s = OneIteration(3);
  models::StepBuilder b(s.get());
  std::vector<uint32_t> last;
  for (const auto& [to, bytes] : transfers) last = {AddTransferOp(s.get(), &b, 0, to, bytes, last)};
  return s;
}

// Completion time in seconds of each job's op 1 message (the one across the bottleneck).
std::vector<double> BottleneckFct(const FlowSimulation& sim) {
  std::vector<double> fct(2, -1);
  for (const runs::FlowRecord& f : sim.flows())
    if (f.op == 1 && !f.local && f.job < 2) fct[f.job] = double(f.end_ns - f.start_ns) * 1e-9;
  return fct;
}

TEST(FlowMltcp, SharesFollowFOnAHandComputedCase) {
  // dumbbell of 8 hosts at 10 Gbit/s: 0-3 on the left switch, 4-7 on the right.
  // Each job's endpoint 0 first sends 3 MB to endpoint 2 on its own switch
  // (no shared link), then 1 MB to endpoint 1 across the bottleneck; job B
  // sends 8 MB more after that. At the 1 MB message's start endpoint 0 has
  // delivered 3 of 4 MB in A (r = 0.75) and 3 of 12 MB in B (r = 0.25).
  // F = 2 r + 0.5: F_A = 2, F_B = 1, so A gets 2/3 of the bottleneck C until
  // its 1 MB is through: t_A = 1 MB / (2/3 C) = 1.5 MB / C; B has then sent
  // 0.5 MB and sends the rest alone: t_B = 1.5 MB / C + 0.5 MB / C = 2 MB / C.
  // Under max-min both take 2 MB / C.
  const uint64_t MB = 1000000;
  FlowConfig config = HandComputedDumbbell();
  config.jobs = {Placed(Sends({{2, 3 * MB}, {1, 1 * MB}}), {0, 4, 1}),
                 Placed(Sends({{2, 3 * MB}, {1, 1 * MB}, {2, 8 * MB}}), {2, 6, 3})};
  config.mltcp_function = {2.0, 0.5};
  config.mltcp_chunks = 1;  // F taken once, at the message's start
  config.send_buffer = 0;   // each send done as it arrives: the next starts then, as the hand computation has it
  const double c = 10e9 / 8;  // bytes per second
  const double latency = 3e-6;  // three 1 us links

  FlowConfig maxmin = config;
  const std::vector<double> fair = RunInChild(maxmin, BottleneckFct);
  ASSERT_EQ(fair.size(), 2u);
  EXPECT_NEAR(fair[0], 2 * MB / c + latency, 0.01 * fair[0]);
  EXPECT_NEAR(fair[1], 2 * MB / c + latency, 0.01 * fair[1]);

  config.mltcp = true;
  const std::vector<double> mltcp = RunInChild(config, BottleneckFct);
  ASSERT_EQ(mltcp.size(), 2u);
  std::printf("1 MB across the bottleneck, ms: max-min %.4f / %.4f, MLTCP %.4f / %.4f (hand: %.4f / %.4f)\n",
              fair[0] * 1e3, fair[1] * 1e3, mltcp[0] * 1e3, mltcp[1] * 1e3, (1.5 * MB / c + latency) * 1e3,
              (2 * MB / c + latency) * 1e3);
  EXPECT_NEAR(mltcp[0], 1.5 * MB / c + latency, 0.01 * mltcp[0]);
  EXPECT_NEAR(mltcp[1], 2 * MB / c + latency, 0.01 * mltcp[1]);
}

// Mean iteration time in seconds of each job over its last 10 iterations (every endpoint).
std::vector<double> MeanLastTen(const FlowSimulation& sim) {
  std::vector<double> means;
  for (size_t j = 0; j < 2; ++j) {
    double sum = 0;
    int n = 0;
    for (const auto& f : runs::JobResultsFiles(sim.Records(), j)) {
      const size_t count = f.iterations.size();
      for (size_t i = count > 10 ? count - 10 : 0; i < count; ++i) {
        sum += double(f.iterations[i].end_ns - f.iterations[i].start_ns) * 1e-9;
        ++n;
      }
    }
    means.push_back(n ? sum / n : -1);
  }
  return means;
}

TEST(FlowMltcp, InterleavesTwoJobsThatCollideUnderMaxMin) {
  // Two 2-host jobs across a 10 Gbit/s dumbbell, 30 iterations of 6 ms
  // compute then 5 MB each way (4.2 ms alone at SimGrid's 0.945 bandwidth
  // factor): 10.2 ms per iteration alone, both need the bottleneck 82 % of
  // the time. B starts 1 ms after A. Max-min keeps their 1 ms offset, so
  // every communication phase is shared (13.4 ms iterations); MLTCP lets the
  // job ahead finish first and the offset grows until they interleave.
  auto job = std::make_shared<models::Schedule>(models::PeriodicExchange(2, 30, 6000000, 5000000));
  FlowConfig config;
  config.topology = "dumbbell:hosts=4,rate=10Gbps,delay=1us";
  config.util_interval_ns = 0;
  config.progress = false;
  config.jobs = {Placed(job, {0, 2}), Placed(job, {1, 3}, 1000000)};
  const std::vector<double> fair = RunInChild(config, MeanLastTen);
  config.mltcp = true;
  const std::vector<double> mltcp = RunInChild(config, MeanLastTen);
  ASSERT_EQ(fair.size(), 2u);
  ASSERT_EQ(mltcp.size(), 2u);
  std::printf("mean of the last 10 iterations, ms: max-min %.3f / %.3f, MLTCP %.3f / %.3f\n", fair[0] * 1e3,
              fair[1] * 1e3, mltcp[0] * 1e3, mltcp[1] * 1e3);
  const double alone = 6e-3 + 5e6 / (10e9 / 8 * 0.945);
  // Max-min: the phases overlap, each iteration well above the job alone.
  EXPECT_GT(fair[0], 1.15 * alone);
  EXPECT_GT(fair[1], 1.15 * alone);
  // MLTCP: both jobs faster, within 5 % of running alone.
  EXPECT_LT(mltcp[0], fair[0]);
  EXPECT_LT(mltcp[1], fair[1]);
  EXPECT_LT(mltcp[0], 1.05 * alone);
  EXPECT_LT(mltcp[1], 1.05 * alone);
}

}  // namespace
}  // namespace dltrace::flow
