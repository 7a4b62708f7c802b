// SPDX-License-Identifier: GPL-2.0-only
// What executors need on top of a lowered schedule: a fingerprint both ends of
// a connection compare, and the peers and channels of an endpoint. (Cutting a
// schedule to its first iterations is models::KeepIterations.)
#pragma once

#include <cstdint>
#include <set>

#include "dltrace/models/schedule.h"

namespace dltrace::executor {

// FNV-1a over every endpoint's steps and dependencies and every op's kind,
// iteration and bytes: equal on two hosts that lowered the same trace the same way.
uint64_t ScheduleHash(const models::Schedule& schedule);

// ScheduleHash one endpoint at a time, for a caller that frees each
// endpoint's dependency lists once hashed (the flow simulator, on a thread of
// its own): construct from the schedule, Add every rank in order, then value().
class ScheduleHasher {
 public:
  explicit ScheduleHasher(const models::Schedule& schedule);  // the header and ops
  void Add(const models::RankSchedule& rank);
  uint64_t value() const { return h_; }

 private:
  void Mix(uint64_t v);
  uint64_t h_ = 0xcbf29ce484222325ull;
};

// The endpoints ENDPOINT exchanges messages with, and how many channels each pair uses.
struct PeerLinks {
  int32_t peer;
  uint16_t channels;
};
std::vector<PeerLinks> PeersOf(const models::Schedule& schedule, int32_t endpoint);

// The endpoints ENDPOINT exchanges messages with directly or through others
// (its connected component, itself included), ascending: the ones a job-wide
// start barrier over the data connections can reach.
std::vector<int32_t> ConnectedEndpoints(const models::Schedule& schedule, int32_t endpoint);

}  // namespace dltrace::executor
