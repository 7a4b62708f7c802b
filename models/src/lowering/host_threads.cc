// SPDX-License-Identifier: GPL-2.0-only
// MPI host threads in the lowering: their calls in the order made, walked as
// far as the lowered ops allow.
#include "host_threads.h"

#include <algorithm>

namespace dltrace::models::lowering {

using formats::OpEvent;
using formats::OpKind;

namespace {

// Calls that complete requests (and, for Test*, may complete none).
bool IsCompletion(OpKind kind) {
  // (window synchronisations complete the one-sided ops of their epoch)
  return kind == OpKind::MpiWait || kind == OpKind::MpiWaitall || kind == OpKind::MpiWaitany ||
         kind == OpKind::MpiWaitsome || kind == OpKind::MpiTest || kind == OpKind::MpiTestall ||
         kind == OpKind::MpiTestany || kind == OpKind::MpiTestsome ||
         (formats::IsWindowSync(kind) && kind != OpKind::MpiWinLock &&
          kind != OpKind::MpiWinLockAll && kind != OpKind::MpiWinPost &&
          kind != OpKind::MpiWinStart);
}
// Calls whose time is waiting for messages the schedule models, not compute.
bool IsMessageWait(OpKind kind) {
  return IsCompletion(kind) || kind == OpKind::MpiProbe || kind == OpKind::MpiIprobe;
}

}  // namespace

HostThreads::HostThreads(const MergedTrace& m, const RecordedOps& rec, Schedule* s)
    : rec_(rec), s_(*s), threads_(size_t(m.world_size)), index_(size_t(m.world_size)) {
  for (const auto& rt : m.set->ranks) {
    const int32_t g = rt.header.global_rank;
    if (g >= 0 && g < m.world_size) Build(rt, g);
  }
}

// The schedule's ops, the Waits/Tests that completed nonblocking ones (found
// by the completion time the recorder wrote, which falls inside the
// completing call), and calls that waited for messages (Probe, Tests that
// completed nothing), per thread in the order they were made.
void HostThreads::Build(const formats::RankTrace& rt, int32_t g) {
  auto& threads = threads_[size_t(g)];
  auto& index = index_[size_t(g)];
  auto thread_of = [&](const OpEvent& e) -> Thread& {
    auto [it, fresh] = index.emplace(e.thread, threads.size());
    if (fresh) {
      threads.emplace_back();
      threads.back().last_exit = rec_.first_ns[size_t(g)];
    }
    return threads[it->second];
  };
  const auto& items = rec_.items[size_t(g)];
  for (uint32_t k = 0; k < items.size(); ++k) {
    if (items[k].nccl) continue;
    const OpEvent& e = rt.ops[items[k].trace_op];
    Call c;
    c.type = Call::Type::kItem;
    c.nonblocking = formats::IsNonblocking(e.kind);
    c.kind = e.kind;
    c.trace_op = items[k].trace_op;
    c.enter = e.enter_ns;
    c.exit = e.exit_ns;
    c.item = k;
    thread_of(e).calls.push_back(std::move(c));
  }
  for (uint32_t i = 0; i < rt.ops.size(); ++i) {
    const OpEvent& e = rt.ops[i];
    if (IsNccl(e.kind) || !IsMessageWait(e.kind)) continue;
    Call c;
    c.type = IsCompletion(e.kind) ? Call::Type::kWait : Call::Type::kSkip;
    c.kind = e.kind;
    c.trace_op = i;
    c.enter = e.enter_ns;
    c.exit = e.exit_ns;
    thread_of(e).calls.push_back(std::move(c));
  }
  // A call that both completes ops and is one (MPI_Win_fence: it completes
  // its epoch's puts and synchronises the window's group) completes first.
  auto by_time = [](const Call& a, const Call& b) {
    if (a.enter != b.enter) return a.enter < b.enter;
    return a.type == Call::Type::kWait && b.type != Call::Type::kWait;
  };
  for (Thread& t : threads) std::stable_sort(t.calls.begin(), t.calls.end(), by_time);
  // Attach each completed nonblocking op to the call that completed it.
  for (uint32_t k = 0; k < items.size(); ++k) {
    if (items[k].nccl) continue;
    const OpEvent& e = rt.ops[items[k].trace_op];
    if (!formats::IsNonblocking(e.kind) || !e.completion_ns) continue;
    const int64_t done = *e.completion_ns;
    Thread& t = thread_of(e);
    auto it = std::upper_bound(t.calls.begin(), t.calls.end(), done,
                               [](int64_t v, const Call& c) { return v < c.enter; });
    while (it != t.calls.begin()) {
      --it;
      if (it->type == Call::Type::kWait) break;
    }
    if (it != t.calls.end() && it->type == Call::Type::kWait && it->enter <= done &&
        done <= it->exit) {
      it->completed.insert(it->completed.end(), items[k].ops.begin(), items[k].ops.end());
      continue;
    }
    // No completing call on record (a torn file): complete it where it was seen done.
    Call c;
    c.type = Call::Type::kWait;
    c.enter = c.exit = done;
    c.completed = items[k].ops;
    t.calls.insert(std::upper_bound(t.calls.begin(), t.calls.end(), c, by_time), std::move(c));
  }
  for (Thread& t : threads)
    for (Call& c : t.calls)
      if (c.type == Call::Type::kWait && c.completed.empty()) c.type = Call::Type::kSkip;
}

// A compute step of OP on RANK, outside any op's lowering: the time a host
// thread computed before a call.
uint32_t HostThreads::AddCompute(int32_t rank, uint32_t op, int64_t ns,
                                 const std::vector<uint32_t>& deps) {
  RankSchedule& rs = s_.ranks[size_t(rank)];
  Step s;
  s.type = StepType::kCompute;
  s.tag = MakeTag(op, 0);
  s.set_duration_ns(uint64_t(std::max<int64_t>(ns, 0)));
  rs.deps.insert(rs.deps.end(), deps.begin(), deps.end());
  s.deps_end = uint32_t(rs.deps.size());
  rs.steps.push_back(s);
  return uint32_t(rs.steps.size() - 1);
}

int64_t HostThreads::ComputeBefore(Thread& t, int64_t enter) {
  int64_t ns = t.carry + std::max<int64_t>(0, enter - t.last_exit);
  t.carry = 0;
  return ns;
}

void HostThreads::Advance(int32_t rank, OpProgress& progress) {
  if (size_t(rank) >= threads_.size()) return;
  for (Thread& t : threads_[size_t(rank)]) AdvanceThread(rank, t, progress);
}

void HostThreads::AdvanceThread(int32_t r, Thread& t, OpProgress& progress) {
  while (t.pos < t.calls.size()) {
    Call& c = t.calls[t.pos];
    if (c.type == Call::Type::kSkip) {
      if (c.enter >= t.last_exit) t.carry += c.enter - t.last_exit;
      t.last_exit = std::max(t.last_exit, c.exit);
      ++t.pos;
      continue;
    }
    if (c.type == Call::Type::kWait) {
      for (uint32_t x : c.completed)
        if (!progress.Done(x, r)) return;
      const int64_t gap = ComputeBefore(t, c.enter);
      std::vector<uint32_t> after;
      if (gap > 0) after.push_back(AddCompute(r, c.completed.front(), gap, t.frontier));
      else after = t.frontier;
      for (uint32_t x : c.completed) progress.TakeExits(x, r, &after);
      t.frontier = std::move(after);
      t.last_exit = std::max(t.last_exit, c.exit);
      ++t.pos;
      continue;
    }
    const Item& item = rec_.items[size_t(r)][c.item];
    if (!c.reached) {
      c.reached = true;
      const int64_t gap = ComputeBefore(t, c.enter);
      std::vector<uint32_t> entry = t.frontier;
      // One compute step also joins what the thread waited for, so the
      // op's first steps wait on one step each.
      if (gap > 0 || entry.size() > 1) entry = {AddCompute(r, item.ops.front(), gap, t.frontier)};
      for (uint32_t x : item.ops)
        if (!progress.Done(x, r)) progress.Reach(x, r, entry);
      if (c.nonblocking) {
        // Started: the thread goes on at once.
        t.frontier = std::move(entry);
        t.last_exit = std::max(t.last_exit, c.exit);
        ++t.pos;
        continue;
      }
    }
    if (c.nonblocking) {  // reached before, when an op was forced
      t.last_exit = std::max(t.last_exit, c.exit);
      ++t.pos;
      continue;
    }
    for (uint32_t x : item.ops)
      if (!progress.Done(x, r)) return;
    std::vector<uint32_t> after;
    for (uint32_t x : item.ops) progress.TakeExits(x, r, &after);
    std::sort(after.begin(), after.end());
    after.erase(std::unique(after.begin(), after.end()), after.end());
    t.frontier = std::move(after);
    t.last_exit = std::max(t.last_exit, c.exit);
    ++t.pos;
  }
}

void HostThreads::ForEachWaitingOp(int32_t rank, const std::function<void(uint32_t)>& fn) const {
  for (const Thread& t : threads_[size_t(rank)]) {
    if (t.pos >= t.calls.size()) continue;
    const Call& call = t.calls[t.pos];
    if (call.type == Call::Type::kWait)
      for (uint32_t x : call.completed) fn(x);
    else if (call.type == Call::Type::kItem)
      for (uint32_t x : rec_.items[size_t(rank)][call.item].ops) fn(x);
  }
}

HostThreads::Position HostThreads::StandingAt(int32_t rank, const OpEvent& e) const {
  const Thread& t = threads_[size_t(rank)][index_[size_t(rank)].at(e.thread)];
  if (t.pos >= t.calls.size()) return {};
  const Call& c = t.calls[t.pos];
  return {c.kind, c.trace_op, c.enter};
}

const std::vector<uint32_t>& HostThreads::Frontier(int32_t rank, const OpEvent& e) const {
  return threads_[size_t(rank)][index_[size_t(rank)].at(e.thread)].frontier;
}

}  // namespace dltrace::models::lowering
