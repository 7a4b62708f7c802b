// SPDX-License-Identifier: GPL-2.0-only
// Runs one endpoint's lowered schedule over a Transport: issues each step when
// its dependencies are met, matches receives, and times steps, ops and iterations.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dltrace/models/schedule.h"
#include "dltrace/executor/receive_matcher.h"
#include "dltrace/executor/transport.h"

namespace dltrace::executor {

struct ExecutorOptions {
  // Compute steps last duration_ns * time_scale (0 skips them).
  double time_scale = 1.0;
  // Same-host steps (Step::local) take the model's time on
  // Schedule::local_link: the sender passes only a notice of the byte count,
  // the receiver completes after bytes / bandwidth + latency. False: they go
  // over the transport like the others.
  bool model_local_steps = true;
  // Keep every step's time range in RankResult::steps (24 B a step, what
  // flows from results need: runs::AppendFlowsFromResults). False: steps
  // stays empty and only the steps in flight have their start times kept,
  // for a simulator that writes its flows itself (flow/).
  bool step_times = true;
};

struct TimeRange {
  uint64_t start_ns = 0, end_ns = 0;  // transport clock, relative to the executor's start
  bool valid = false;
};

// What one endpoint did: when each step, op and iteration ran, and the bytes moved.
struct RankResult {
  int32_t endpoint = -1;
  bool complete = false;
  std::string error;  // why it stopped early; empty when complete
  uint64_t clock_origin_ns = 0;  // transport clock at Start(); all times are relative to it
  uint64_t end_ns = 0;
  uint64_t steps_done = 0, steps_total = 0;
  uint64_t bytes_sent = 0, bytes_received = 0;
  uint64_t bytes_scheduled_send = 0, bytes_scheduled_recv = 0;
  // Of bytes_sent/received: same-host steps timed on the schedule's local link.
  uint64_t bytes_local_sent = 0, bytes_local_received = 0;
  // Of bytes_received: reduce receives' bytes the host added into its own
  // (socket replay's arithmetic, HostReduction); 0 where nothing did.
  uint64_t bytes_reduced = 0;
  // Index = step id. A receive starts when its first bytes arrive, or when
  // it was posted if they came before. Empty without ExecutorOptions::step_times.
  std::vector<TimeRange> steps;
  // The schedule ops this endpoint has transfer steps in, ascending: a job of
  // thousands of endpoints has millions of ops, each endpoint a few hundred.
  // ops, op_sent and op_received hold one entry per id here (OpSlot finds it).
  std::vector<uint32_t> op_ids;
  // Per entry of op_ids: its transfer steps on this endpoint (compute gaps
  // excluded, as the estimate does); invalid until one of them ran.
  std::vector<TimeRange> ops;
  std::vector<uint64_t> op_sent, op_received;  // per entry of op_ids, on this endpoint
  // Per iteration: all steps of its ops on this endpoint, compute included.
  std::vector<TimeRange> iterations;

  // The index of schedule op OP in op_ids (and ops, op_sent, op_received);
  // kNoSlot when this endpoint has no transfer in it.
  static constexpr size_t kNoSlot = ~size_t(0);
  size_t OpSlot(uint32_t op) const;
};

// A count per step that is almost always small (dependencies, dependents):
// one byte each, and the rare count of 255 or more in a map. At 16,384 ranks
// an executor's per-step arrays are a third of the run's memory.
class SmallCounts {
 public:
  void assign(size_t n) { small_.assign(n, 0); }
  uint32_t operator[](uint32_t i) const { return small_[i] < kMany ? small_[i] : many_.at(i); }
  void Increment(uint32_t i);
  // The count after taking one off.
  uint32_t Decrement(uint32_t i) { return small_[i] < kMany ? --small_[i] : --many_.at(i); }

 private:
  static constexpr uint8_t kMany = 255;  // the count is in many_
  std::vector<uint8_t> small_;
  std::unordered_map<uint32_t, uint32_t> many_;
};

// A value per step for the few steps in flight, by step id: open addressing
// with linear probing in two flat arrays. An unordered_map's node per insert
// and erase was a sixth of a 16,384-rank flow simulation's CPU.
template <typename V>
class StepMap {
 public:
  // STEP's value, made (V{}) if it has none.
  V& operator[](uint32_t step) {
    if ((size_ + 1) * 2 > keys_.size()) Grow();
    size_t i = Home(step);
    for (; keys_[i] != kEmpty; i = Next(i))
      if (keys_[i] == step) return values_[i];
    keys_[i] = step;
    values_[i] = V{};
    ++size_;
    return values_[i];
  }
  // STEP's value, or null.
  V* find(uint32_t step) {
    if (keys_.empty()) return nullptr;
    for (size_t i = Home(step); keys_[i] != kEmpty; i = Next(i))
      if (keys_[i] == step) return &values_[i];
    return nullptr;
  }
  void erase(uint32_t step) {
    V* at = find(step);
    if (!at) return;
    // Backward shift: each later entry of the run that may sit in the hole moves into it.
    size_t hole = size_t(at - values_.data());
    for (size_t j = Next(hole); keys_[j] != kEmpty; j = Next(j)) {
      const size_t home = Home(keys_[j]);
      const bool between = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (between) continue;  // its home lies after the hole: it stays reachable
      keys_[hole] = keys_[j];
      values_[hole] = values_[j];
      hole = j;
    }
    keys_[hole] = kEmpty;
    --size_;
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint32_t kEmpty = ~uint32_t(0);
  size_t Home(uint32_t step) const { return (step * 2654435761u) & (keys_.size() - 1); }
  size_t Next(size_t i) const { return (i + 1) & (keys_.size() - 1); }
  void Grow() {
    std::vector<uint32_t> keys(std::max<size_t>(16, keys_.size() * 2), kEmpty);
    std::vector<V> values(keys.size());
    keys.swap(keys_);
    values.swap(values_);
    size_ = 0;
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i] != kEmpty) (*this)[keys[i]] = values[i];
  }
  std::vector<uint32_t> keys_;
  std::vector<V> values_;
  size_t size_ = 0;
};

class ScheduleExecutor {
 public:
  using DoneFn = std::function<void(const RankResult& result)>;
  // An op's first transfer step on this endpoint was issued: (op).
  using OpStartFn = std::function<void(uint32_t op)>;
  // An op's last transfer step on this endpoint finished: (op, its range in
  // RankResult::ops, relative to the clock origin).
  using OpFinishFn = std::function<void(uint32_t op, const TimeRange& range)>;

  // SCHEDULE must outlive the executor. The executor takes over the transport's
  // data and error callbacks at once, so data that comes before Start is kept.
  ScheduleExecutor(const models::Schedule& schedule, int32_t endpoint, Transport& transport,
                 ExecutorOptions options = {});

  // Issues the steps without dependencies; DONE runs once, when every step
  // finished or the run failed.
  void Start(DoneFn done);
  // Stops the run with MESSAGE (first failure wins).
  void Fail(const std::string& message);
  // Called as ops start and finish on this endpoint (compute gaps are not
  // ops' steps), for executors that report them (ns-3 trace sources).
  void set_on_op_start(OpStartFn fn) { on_op_start_ = std::move(fn); }
  void set_on_op_finish(OpFinishFn fn) { on_op_finish_ = std::move(fn); }

  bool finished() const { return finished_; }
  const RankResult& result() const { return result_; }
  // Moves the result out (once finished), for a simulator that keeps
  // thousands of endpoints' results without a second copy.
  RankResult TakeResult() { return std::move(result_); }
  // Whether this endpoint still has to receive from PEER: a peer that closes
  // its sending side after everything it owed us arrived finished normally.
  bool expects_from(int32_t peer) const;
  // Peers this endpoint posted receives from that did not complete yet
  // (what a stall watchdog names), ascending.
  std::vector<int32_t> awaited_peers() const { return matcher_.waiting_peers(); }

 private:
  void Issue(uint32_t step);
  void Complete(uint32_t step);
  void Pump();
  void OnData(int32_t peer, uint16_t channel, uint64_t tag, uint64_t bytes);
  void OnNotice(int32_t peer, uint16_t channel, uint64_t tag, uint64_t bytes);
  void Arrived(int32_t peer, uint64_t tag, uint64_t bytes);
  void LocalSendPartDone(uint32_t step);
  // Model time of BYTES on the local link: serialisation only, or with latency.
  uint64_t LocalNs(uint64_t bytes, bool with_latency) const;
  void Finish();
  uint64_t& StartOf(uint32_t step) { return options_.step_times ? result_.steps[step].start_ns : in_flight_[step]; }

  const models::Schedule& schedule_;
  const models::RankSchedule& rank_;
  int32_t endpoint_;
  Transport& transport_;
  ExecutorOptions options_;
  ReceiveMatcher matcher_;
  DoneFn done_;
  OpStartFn on_op_start_;
  OpFinishFn on_op_finish_;
  RankResult result_;
  std::vector<uint32_t> op_steps_left_;  // per entry of result_.op_ids: transfer steps not finished
  std::vector<uint8_t> op_started_;      // per entry of result_.op_ids, with on_op_start_: reported
  SmallCounts waiting_deps_;  // per step: dependencies not yet finished
  // The steps waiting on each step, by step: step S's dependents_count_[S]
  // of them start at dependents_at_[S / kBlock] plus the counts of the steps
  // before S in its block of kBlock (2.25 B a step instead of 4).
  static constexpr uint32_t kBlock = 16;
  std::vector<uint32_t> dependents_;
  SmallCounts dependents_count_;
  std::vector<uint32_t> dependents_at_;  // per block of kBlock steps
  uint32_t DependentsBegin(uint32_t step) const;
  std::vector<uint32_t> ready_;
  // Without options_.step_times: when each step in flight started (a few
  // dozen entries; a vector of every step's would be 8 B a step, 2 GB at
  // 16,384 ranks).
  StepMap<uint64_t> in_flight_;
  // Per peer this endpoint receives from, ascending: bytes + messages still to
  // receive (a sorted list, not one entry per endpoint of the job).
  std::vector<std::pair<int32_t, uint64_t>> peer_outstanding_;
  uint64_t* Outstanding(int32_t peer);
  // Local sends in flight: parts done of two (notice sent, model time passed).
  StepMap<uint8_t> local_send_parts_;
  bool pumping_ = false;
  bool started_ = false;
  bool finished_ = false;
};

}  // namespace dltrace::executor
