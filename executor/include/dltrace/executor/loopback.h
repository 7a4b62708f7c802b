// SPDX-License-Identifier: GPL-2.0-only
// An in-memory network in simulated time that runs every endpoint of a
// schedule in one process: what the executor's tests (and quick checks) use.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "dltrace/models/schedule.h"
#include "dltrace/executor/schedule_executor.h"

namespace dltrace::executor {

struct LoopbackOptions {
  // Each (sender, receiver, channel) is one link of this rate and latency;
  // messages on it go one after another.
  models::Link link{100, 5000};
  // Messages arrive in parts of at most this many bytes (0: whole).
  uint64_t chunk_bytes = 0;
  ExecutorOptions executor;
  // Runs on each endpoint's executor before it starts (to attach callbacks).
  std::function<void(int32_t endpoint, ScheduleExecutor& executor)> setup;
};

// Runs SCHEDULE to the end (or until nothing can move) and returns each
// endpoint's result; an endpoint that could not finish has complete == false.
std::vector<RankResult> RunLoopback(const models::Schedule& schedule,
                                    const LoopbackOptions& options = {});

}  // namespace dltrace::executor
