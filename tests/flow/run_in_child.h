// Helpers of the flow simulator's tests: SimGrid's engine is one per
// process, so each simulation runs in a child process of its own.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "dltrace/flow/flow_simulation.h"

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

}  // namespace dltrace::flow
