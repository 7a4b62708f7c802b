// SPDX-License-Identifier: GPL-2.0-only
// Helpers of the flow simulator's tests: SimGrid's engine is one per
// process, so each simulation runs in a child process of its own; and the
// network and one-iteration schedules the hand-computed cases share.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "dltrace/flow/flow_simulation.h"
#include "dltrace/models/algorithms.h"

namespace dltrace::flow {

// Runs CONFIG in a child process; returns what MEASURE computed from the
// finished simulation there (empty when the child failed).
inline std::vector<double> RunInChild(const FlowConfig& config,
                               std::vector<double> (*measure)(const FlowSimulation&)) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  std::fflush(nullptr);  // or the child's exit writes the parent's buffered output again
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    FlowSimulation sim;
    std::string error;
    std::vector<double> out;
    if (sim.Setup(config, &error) && sim.Run(&error)) out = measure(sim);
    else std::fprintf(stderr, "simulation failed: %s\n", error.c_str());
    const size_t n = out.size();
    if (write(fds[1], &n, sizeof n) != ssize_t(sizeof n)) _exit(1);
    if (n && write(fds[1], out.data(), n * sizeof(double)) != ssize_t(n * sizeof(double))) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  size_t n = 0;
  std::vector<double> out;
  if (read(fds[0], &n, sizeof n) == ssize_t(sizeof n) && n < 1000) {
    out.resize(n);
    if (n && read(fds[0], out.data(), n * sizeof(double)) != ssize_t(n * sizeof(double))) out.clear();
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return out;
}

inline models::JobPlacement Placed(std::shared_ptr<const models::Schedule> schedule, std::vector<uint32_t> hosts,
                            uint64_t start_ns = 0) {
  models::JobPlacement p;
  p.schedule = std::move(schedule);
  p.hosts = std::move(hosts);
  p.start_ns = start_ns;
  return p;
}

// The hand-computed cases' network: a dumbbell of 8 hosts at 10 Gbit/s (0-3
// on the left switch, 4-7 on the right, three 1 us links between any two
// sides), SimGrid's bandwidth factor 1 so that shares are exactly max-min's,
// no link samples and no progress line. JOBS still to be set.
inline FlowConfig HandComputedDumbbell() {
  FlowConfig config;
  config.topology = "dumbbell:hosts=8,rate=10Gbps,delay=1us";
  config.simgrid_cfg = {"network/bandwidth-factor:1"};
  config.util_interval_ns = 0;
  config.progress = false;
  return config;
}

// One iteration of N worker endpoints (endpoint E on host "hE") and no ops
// yet: a test adds its own with AddTransferOp.
inline std::shared_ptr<models::Schedule> OneIteration(int32_t n) {
  auto s = std::make_shared<models::Schedule>();
  s->world_size = n;
  s->iterations = 1;
  s->ranks.resize(size_t(n));
  for (int32_t e = 0; e < n; ++e) {
    s->endpoints.push_back({models::EndpointRole::kWorker, e, e});
    s->hosts.push_back("h" + std::to_string(e));
  }
  return s;
}

// Adds to S (built by B) an op of iteration 0 made of one transfer of BYTES
// from FROM to TO after DEPS; returns the transfer's send step.
inline uint32_t AddTransferOp(models::Schedule* s, models::StepBuilder* b, int32_t from, int32_t to,
                              uint64_t bytes, const std::vector<uint32_t>& deps = {}) {
  models::ScheduleOp op;
  op.source = models::ScheduleOp::Source::kSynthetic;
  op.iteration = 0;
  op.bytes = bytes;
  s->ops.push_back(op);
  b->BeginOp(uint32_t(s->ops.size() - 1));
  const uint32_t send = b->Transfer(from, to, bytes, 0, models::DepList(deps), {}).send;
  b->EndOp();
  return send;
}

}  // namespace dltrace::flow
