// SPDX-License-Identifier: GPL-2.0-only
// The schedule executor: a ready queue over the dependency graph of one
// endpoint's steps; transports call back into it when sends, timers and data finish.
#include "dltrace/executor/schedule_executor.h"

#include <algorithm>
#include <cmath>

namespace dltrace::executor {

using models::Step;
using models::StepType;

ScheduleExecutor::ScheduleExecutor(const models::Schedule& schedule, int32_t endpoint,
                               Transport& transport, ExecutorOptions options)
    : schedule_(schedule),
      rank_(schedule.ranks.at(size_t(endpoint))),
      endpoint_(endpoint),
      transport_(transport),
      options_(options),
      matcher_([this](uint32_t id) { Complete(id); }) {
  // A receive posted before its data starts when the data does: waiting for
  // a peer is not time spent in the op (a parameter server posts its pushes'
  // receives long before the workers send).
  matcher_.set_on_first_arrival([this](uint32_t id) {
    StartOf(id) = transport_.NowNs() - result_.clock_origin_ns;
  });
  const size_t n = rank_.steps.size();
  result_.endpoint = endpoint;
  result_.steps_total = n;
  if (options_.step_times) result_.steps.resize(n);
  result_.iterations.resize(size_t(std::max(schedule.iterations, 1)));
  // The ops and peers of this endpoint's transfers, each once, ascending.
  // (Thousands of steps, a few hundred ops and a few peers: each is added
  // unless it repeats the one before, then sorted once.)
  for (const Step& s : rank_.steps) {
    if (s.type == StepType::kCompute) continue;
    if (s.op() < schedule.ops.size() && (result_.op_ids.empty() || result_.op_ids.back() != s.op()))
      result_.op_ids.push_back(s.op());
    if (s.type == StepType::kRecv && (peer_outstanding_.empty() || peer_outstanding_.back().first != s.peer))
      peer_outstanding_.emplace_back(s.peer, 0);
  }
  std::sort(result_.op_ids.begin(), result_.op_ids.end());
  result_.op_ids.erase(std::unique(result_.op_ids.begin(), result_.op_ids.end()), result_.op_ids.end());
  result_.op_ids.shrink_to_fit();
  std::sort(peer_outstanding_.begin(), peer_outstanding_.end());
  peer_outstanding_.erase(std::unique(peer_outstanding_.begin(), peer_outstanding_.end()), peer_outstanding_.end());
  peer_outstanding_.shrink_to_fit();
  const size_t op_count = result_.op_ids.size();
  result_.ops.resize(op_count);
  result_.op_sent.assign(op_count, 0);
  result_.op_received.assign(op_count, 0);
  op_steps_left_.assign(op_count, 0);
  waiting_deps_.assign(n);
  dependents_count_.assign(n);
  for (size_t i = 0; i < n; ++i) {
    const Step& s = rank_.steps[i];
    for (const uint32_t* d = rank_.deps_begin(s); d != rank_.deps_end(s); ++d) {
      waiting_deps_.Increment(uint32_t(i));
      dependents_count_.Increment(*d);
    }
    if (s.type != StepType::kCompute) {
      const size_t slot = result_.OpSlot(s.op());
      if (slot != RankResult::kNoSlot) ++op_steps_left_[slot];
    }
    if (s.type == StepType::kSend) result_.bytes_scheduled_send += s.bytes;
    if (s.type == StepType::kRecv) result_.bytes_scheduled_recv += s.bytes;
    // A zero-byte message counts as one so that its arrival is awaited too.
    if (s.type == StepType::kRecv) *Outstanding(s.peer) += s.bytes ? s.bytes : 1;
  }
  // Where each block's dependents start; FILL: where each step's next one goes.
  std::vector<uint32_t> fill(n);
  dependents_at_.assign((n + kBlock - 1) / kBlock, 0);
  uint32_t at = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (i % kBlock == 0) dependents_at_[i / kBlock] = at;
    fill[i] = at;
    at += dependents_count_[i];
  }
  // Data may come before Start (a peer that started first): the matcher keeps it.
  transport_.set_on_data([this](int32_t peer, uint16_t channel, uint64_t tag, uint64_t bytes) {
    OnData(peer, channel, tag, bytes);
  });
  transport_.set_on_notice([this](int32_t peer, uint16_t channel, uint64_t tag, uint64_t bytes) {
    OnNotice(peer, channel, tag, bytes);
  });
  transport_.set_on_error([this](const std::string& message) { Fail(message); });
  dependents_.resize(at);
  for (size_t i = 0; i < n; ++i) {
    const Step& s = rank_.steps[i];
    for (const uint32_t* d = rank_.deps_begin(s); d != rank_.deps_end(s); ++d)
      dependents_[fill[*d]++] = uint32_t(i);
  }
}

void SmallCounts::Increment(uint32_t i) {
  if (small_[i] < kMany - 1) {
    ++small_[i];
  } else if (small_[i] == kMany - 1) {
    small_[i] = kMany;
    many_[i] = kMany;
  } else {
    ++many_.at(i);
  }
}

uint32_t ScheduleExecutor::DependentsBegin(uint32_t step) const {
  uint32_t at = dependents_at_[step / kBlock];
  for (uint32_t i = step - step % kBlock; i < step; ++i) at += dependents_count_[i];
  return at;
}

size_t RankResult::OpSlot(uint32_t op) const {
  auto it = std::lower_bound(op_ids.begin(), op_ids.end(), op);
  return it != op_ids.end() && *it == op ? size_t(it - op_ids.begin()) : kNoSlot;
}

uint64_t* ScheduleExecutor::Outstanding(int32_t peer) {
  auto it = std::lower_bound(peer_outstanding_.begin(), peer_outstanding_.end(), std::make_pair(peer, uint64_t(0)));
  return it != peer_outstanding_.end() && it->first == peer ? &it->second : nullptr;
}

bool ScheduleExecutor::expects_from(int32_t peer) const {
  auto it = std::lower_bound(peer_outstanding_.begin(), peer_outstanding_.end(), std::make_pair(peer, uint64_t(0)));
  return it != peer_outstanding_.end() && it->first == peer && it->second > 0;
}

void ScheduleExecutor::Start(DoneFn done) {
  done_ = std::move(done);
  started_ = true;
  result_.clock_origin_ns = transport_.NowNs();
  for (uint32_t i = 0; i < rank_.steps.size(); ++i)
    if (waiting_deps_[i] == 0) ready_.push_back(i);
  Pump();
}

void ScheduleExecutor::Pump() {
  if (pumping_) return;  // a callback that ran inside Issue: the loop below picks it up
  pumping_ = true;
  while (!ready_.empty() && !finished_) {
    uint32_t id = ready_.back();
    ready_.pop_back();
    Issue(id);
  }
  pumping_ = false;
  if (!finished_ && result_.steps_done == result_.steps_total) Finish();
}

void ScheduleExecutor::Issue(uint32_t id) {
  const Step& s = rank_.steps[id];
  if (options_.step_times) result_.steps[id].valid = true;
  StartOf(id) = transport_.NowNs() - result_.clock_origin_ns;
  if (on_op_start_ && s.type != StepType::kCompute) {
    const size_t slot = result_.OpSlot(s.op());
    if (op_started_.empty()) op_started_.assign(result_.ops.size(), 0);
    if (slot != RankResult::kNoSlot && !op_started_[slot]) {
      op_started_[slot] = 1;
      on_op_start_(s.op());
    }
  }
  switch (s.type) {
    case StepType::kCompute: {
      double ns = double(s.duration_ns()) * options_.time_scale;
      if (ns < 1) {
        Complete(id);
      } else {
        transport_.StartTimer(uint64_t(std::llround(ns)), [this, id] { Complete(id); });
      }
      break;
    }
    case StepType::kSend:
      if (s.local && options_.model_local_steps) {
        // Done once the notice is out and the model's serialisation time passed.
        transport_.SendNotice(s.peer, s.channel, s.tag, s.bytes, [this, id] { LocalSendPartDone(id); });
        transport_.StartTimer(LocalNs(s.bytes, false), [this, id] { LocalSendPartDone(id); });
        break;
      }
      transport_.Send(s.peer, s.channel, s.tag, s.bytes, [this, id] {
        const Step& sent = rank_.steps[id];
        result_.bytes_sent += sent.bytes;
        const size_t slot = result_.OpSlot(sent.op());
        if (slot != RankResult::kNoSlot) result_.op_sent[slot] += sent.bytes;
        Complete(id);
      });
      break;
    case StepType::kRecv: {
      std::string error;
      if (!matcher_.Post(s.peer, s.tag, s.bytes, id, &error)) Fail(error);
      break;
    }
  }
}

uint64_t ScheduleExecutor::LocalNs(uint64_t bytes, bool with_latency) const {
  const models::Link& l = schedule_.local_link;
  double ns = l.gbps > 0 ? double(bytes) * 8.0 / l.gbps : 0;
  if (with_latency) ns += std::max(l.latency_ns, 0.0);
  return uint64_t(std::llround(ns));
}

void ScheduleExecutor::LocalSendPartDone(uint32_t id) {
  if (finished_) return;
  if (++local_send_parts_[id] < 2) return;
  local_send_parts_.erase(id);
  const Step& s = rank_.steps[id];
  result_.bytes_sent += s.bytes;
  result_.bytes_local_sent += s.bytes;
  const size_t slot = result_.OpSlot(s.op());
  if (slot != RankResult::kNoSlot) result_.op_sent[slot] += s.bytes;
  Complete(id);
}

void ScheduleExecutor::OnData(int32_t peer, uint16_t /*channel*/, uint64_t tag, uint64_t bytes) {
  if (finished_) return;
  if (uint64_t* left = Outstanding(peer)) *left -= std::min<uint64_t>(*left, bytes ? bytes : 1);
  Arrived(peer, tag, bytes);
}

void ScheduleExecutor::OnNotice(int32_t peer, uint16_t /*channel*/, uint64_t tag, uint64_t bytes) {
  if (finished_) return;
  // The peer owes nothing more for this message: it may finish and close
  // while the model's time runs here.
  if (uint64_t* left = Outstanding(peer)) *left -= std::min<uint64_t>(*left, bytes ? bytes : 1);
  transport_.StartTimer(LocalNs(bytes, true), [this, peer, tag, bytes] {
    if (finished_) return;
    result_.bytes_local_received += bytes;
    Arrived(peer, tag, bytes);
  });
}

void ScheduleExecutor::Arrived(int32_t peer, uint64_t tag, uint64_t bytes) {
  result_.bytes_received += bytes;
  const size_t slot = result_.OpSlot(models::TagOp(tag));
  if (slot != RankResult::kNoSlot) result_.op_received[slot] += bytes;
  std::string error;
  if (!matcher_.Arrive(peer, tag, bytes, &error)) Fail(error);
}

void ScheduleExecutor::Complete(uint32_t id) {
  if (finished_) return;
  const Step& s = rank_.steps[id];
  TimeRange here;  // without step times: this step's, as far as the op and iteration need it
  if (const uint64_t* at = in_flight_.find(id)) {  // without step times
    here.start_ns = *at;
    in_flight_.erase(id);
  }
  here.valid = true;
  TimeRange& t = options_.step_times ? result_.steps[id] : here;
  t.end_ns = transport_.NowNs() - result_.clock_origin_ns;
  ++result_.steps_done;
  auto widen = [&](TimeRange& r) {
    if (!r.valid) {
      r = t;
      return;
    }
    r.start_ns = std::min(r.start_ns, t.start_ns);
    r.end_ns = std::max(r.end_ns, t.end_ns);
  };
  if (s.op() < schedule_.ops.size()) {
    const size_t slot = s.type != StepType::kCompute ? result_.OpSlot(s.op()) : RankResult::kNoSlot;
    if (slot != RankResult::kNoSlot) {
      widen(result_.ops[slot]);
      if (--op_steps_left_[slot] == 0 && on_op_finish_) on_op_finish_(s.op(), result_.ops[slot]);
    }
    int32_t it = schedule_.ops[s.op()].iteration;
    if (it >= 0 && size_t(it) < result_.iterations.size()) widen(result_.iterations[size_t(it)]);
  }
  const uint32_t begin = DependentsBegin(id), end = begin + dependents_count_[id];
  for (uint32_t k = begin; k < end; ++k)
    if (waiting_deps_.Decrement(dependents_[k]) == 0) ready_.push_back(dependents_[k]);
  Pump();
}

void ScheduleExecutor::Finish() {
  finished_ = true;
  result_.complete = result_.error.empty();
  result_.end_ns = transport_.NowNs() - result_.clock_origin_ns;
  if (done_) done_(result_);
}

void ScheduleExecutor::Fail(const std::string& message) {
  if (finished_) return;
  result_.error = message;
  if (!started_) {
    finished_ = true;
    return;
  }
  Finish();
}

}  // namespace dltrace::executor
