// Lowering a merged trace: orders calls and transfers so every rank sees
// its own recorded order, turns idle time into compute steps, finds iterations.
#include "dltrace/models/lower.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <queue>
#include <unordered_map>

namespace dltrace::models {

using formats::OpEvent;
using formats::OpKind;

IterationPattern DetectIterations(const std::vector<uint64_t>& sig) {
  const size_t m = sig.size();
  for (size_t period = 1; 2 * period <= m; ++period) {
    for (size_t prefix = 0; prefix <= 16 && prefix + 2 * period <= m; ++prefix) {
      size_t run = 0;
      while (prefix + run + period < m && sig[prefix + run] == sig[prefix + run + period]) ++run;
      // At least two whole periods, covering nearly all that follows the prefix
      // (a few trailing ops, like a final barrier, need not repeat).
      if (run >= period && double(run + period) >= 0.9 * double(m - prefix))
        return {period, prefix};
    }
  }
  return {};
}

namespace {

bool IsNccl(OpKind kind) { return kind >= OpKind::NcclAllReduce; }

// Where an op runs in order with others on its rank: its GPU stream, or its host thread.
std::pair<int, uint64_t> LaneOf(const OpEvent& op) {
  if (IsNccl(op.kind)) return {1, op.stream};
  return {0, op.thread};
}

int64_t StartNs(const OpEvent& op) {
  return IsNccl(op.kind) && op.gpu_start_ns ? *op.gpu_start_ns : op.enter_ns;
}
int64_t EndNs(const OpEvent& op) {
  return IsNccl(op.kind) && op.gpu_end_ns ? *op.gpu_end_ns : op.exit_ns;
}

// Calls that complete requests (and, for Test*, may complete none).
bool IsCompletion(OpKind kind) {
  return kind == OpKind::MpiWait || kind == OpKind::MpiWaitall || kind == OpKind::MpiWaitany ||
         kind == OpKind::MpiWaitsome || kind == OpKind::MpiTest || kind == OpKind::MpiTestall ||
         kind == OpKind::MpiTestany || kind == OpKind::MpiTestsome;
}
// Calls whose time is waiting for messages the schedule models, not compute.
bool IsMessageWait(OpKind kind) {
  return IsCompletion(kind) || kind == OpKind::MpiProbe || kind == OpKind::MpiIprobe;
}

// An NCCL stream's ordering state.
struct Lane {
  std::vector<uint32_t> exits;
  int64_t last_end = 0;
  bool started = false;
  // NCCL ops issued between ncclGroupStart/End run together: each starts
  // where the group started, and what follows waits for all of them.
  uint32_t group = 0;
  std::vector<uint32_t> group_entry, group_exits;
};

struct Part {
  int32_t rank;
  uint32_t trace_op;
};

// Ops of one rank at one position of its recorded order: one op, the two
// transfers of a send-receive, or the ops of one NCCL group (which NCCL runs
// together, so their order within the group means nothing).
struct Item {
  std::vector<uint32_t> ops;
  uint32_t group = 0;
  uint32_t trace_op = 0;
  bool nccl = false;
};

// One call of an MPI host thread, in the order the thread made them.
struct HostCall {
  enum class Type : uint8_t {
    kItem,  // an op of the schedule (blocking, or nonblocking: started here)
    kWait,  // a Wait/Test that completed nonblocking ops of the schedule
    kSkip,  // time spent waiting for messages (Probe, a Test that completed nothing)
  };
  Type type = Type::kSkip;
  bool nonblocking = false;
  bool reached = false;  // kItem: its entry was made
  int64_t enter = 0, exit = 0;
  uint32_t item = 0;               // kItem: index into the rank's items
  std::vector<uint32_t> completed;  // kWait: schedule ops it completed
};

// An MPI host thread: its calls and how far the lowering walked them.
// FRONTIER holds the steps the thread's next call waits for.
struct HostThread {
  std::vector<HostCall> calls;
  size_t pos = 0;
  std::vector<uint32_t> frontier;
  int64_t last_exit = 0;
  int64_t carry = 0;  // compute time since LAST_EXIT that skipped calls cut off
};

uint64_t Key(uint32_t op, int32_t rank) { return (uint64_t(op) << 32) | uint32_t(rank); }

class Lowerer {
 public:
  Lowerer(const MergedTrace& m, const LowerOptions& o, std::vector<std::string>* notes)
      : m_(m), options_(o), notes_(notes) {
    if (options_.nccl.algo.empty() && options_.nccl.proto.empty() && options_.nccl.version.empty())
      options_.nccl = RecordedNcclSettings();
  }

  Schedule Run() {
    BuildEndpoints();
    BuildOps();
    BuildItems();
    AssignIterations();
    BuildHostThreads();
    Order();
    return std::move(s_);
  }

 private:
  void Note(const std::string& n) {
    if (notes_) notes_->push_back(n);
  }

  // The NCCL settings and version the first rank that recorded NCCL's version ran with.
  NcclSettings RecordedNcclSettings() const {
    for (const auto& rt : m_.set->ranks)
      if (!rt.header.nccl_version.empty())
        return NcclSettingsFrom(rt.header.nccl_env, rt.header.nccl_version);
    return {};
  }

  // Whether the job's transfers are NCCL's: any rank recorded an NCCL call.
  bool HasNcclOps() const {
    for (const auto& rt : m_.set->ranks)
      for (const auto& op : rt.ops)
        if (IsNccl(op.kind)) return true;
    return false;
  }

  void BuildEndpoints() {
    s_.world_size = m_.world_size;
    s_.local_link = LocalLinkFor(options_, HasNcclOps());
    for (const auto& h : m_.hosts) s_.hosts.push_back(h.name);
    for (int32_t r = 0; r < m_.world_size; ++r)
      s_.endpoints.push_back({EndpointRole::kWorker, r, m_.host_of_rank[size_t(r)]});
    algo_ = FindAlgorithm(options_.algorithm);
    if (!algo_) algo_ = FindAlgorithm(kRecordedAlgorithm);
    AddExtraEndpoints(*algo_, options_, &s_);
    s_.ranks.resize(s_.endpoints.size());
    first_ns_.assign(size_t(m_.world_size), 0);
    for (const auto& rt : m_.set->ranks) {
      int32_t g = rt.header.global_rank;
      if (g >= 0 && g < m_.world_size) first_ns_[size_t(g)] = RankOriginNs(rt);
    }
  }

  const OpEvent& TraceOp(const Part& p) const { return m_.rank(p.rank)->ops[p.trace_op]; }

  void BuildOps() {
    op_of_call_.assign(m_.calls.size(), kNoOp);
    op_of_transfer_.assign(m_.transfers.size(), kNoOp);
    size_t skipped = 0;
    for (uint32_t c = 0; c < m_.calls.size(); ++c) {
      const CollectiveCall& call = m_.calls[c];
      if (!call.consistent) {
        ++skipped;
        continue;
      }
      ScheduleOp op;
      op.source = ScheduleOp::Source::kCollective;
      op.collective = call.collective;
      op.kind = call.kind;
      op.recorded = c;
      op.comm = int32_t(call.comm);
      op.bytes = call.bytes;
      std::vector<Part> parts;
      const auto& members = m_.comms[call.comm].members;
      for (size_t k = 0; k < call.parts.size(); ++k)
        parts.push_back({members[k], uint32_t(call.parts[k])});
      op_of_call_[c] = Add(op, std::move(parts));
    }
    if (skipped)
      Note(std::to_string(skipped) + " collective calls not recorded consistently on all members were left out");
    size_t self = 0;
    for (uint32_t t = 0; t < m_.transfers.size(); ++t) {
      const Transfer& tr = m_.transfers[t];
      if (tr.src == tr.dst) {
        ++self;
        continue;
      }
      ScheduleOp op;
      op.source = ScheduleOp::Source::kTransfer;
      op.collective = formats::Collective::kSend;
      op.kind = m_.rank(tr.src)->ops[tr.send_op].kind;
      op.recorded = t;
      op.comm = int32_t(tr.comm);
      op.bytes = tr.bytes;
      op.algorithm = kRecordedAlgorithm;
      op_of_transfer_[t] = Add(op, {{tr.src, tr.send_op}, {tr.dst, tr.recv_op}});
    }
    if (self) Note(std::to_string(self) + " messages a rank sent to itself were left out");
  }

  uint32_t Add(const ScheduleOp& op, std::vector<Part> parts) {
    int64_t t = INT64_MAX;
    for (const Part& p : parts) t = std::min(t, TraceOp(p).enter_ns);
    s_.ops.push_back(op);
    parts_.push_back(std::move(parts));
    time_.push_back(t);
    return uint32_t(s_.ops.size() - 1);
  }

  void BuildItems() {
    items_.resize(size_t(m_.world_size));
    nccl_items_.resize(size_t(m_.world_size));
    for (const auto& rt : m_.set->ranks) {
      int32_t g = rt.header.global_rank;
      if (g < 0 || g >= m_.world_size) continue;
      const auto& links = m_.links[size_t(g)];
      auto& items = items_[size_t(g)];
      bool any_nccl = false;
      for (uint32_t i = 0; i < links.size(); ++i) {
        const OpLink& l = links[i];
        Item item;
        if (l.kind == OpLink::Kind::kCall) {
          if (op_of_call_[l.index] != kNoOp) item.ops.push_back(op_of_call_[l.index]);
        } else if (l.kind == OpLink::Kind::kTransfer) {
          if (op_of_transfer_[l.index] != kNoOp) item.ops.push_back(op_of_transfer_[l.index]);
          if (l.second >= 0 && op_of_transfer_[size_t(l.second)] != kNoOp)
            item.ops.push_back(op_of_transfer_[size_t(l.second)]);
        }
        if (item.ops.empty()) continue;
        item.trace_op = i;
        item.nccl = i < rt.ops.size() && IsNccl(rt.ops[i].kind);
        any_nccl = any_nccl || item.nccl;
        if (item.nccl) item.group = rt.ops[i].group;
        if (item.group && !items.empty() && items.back().group == item.group)
          items.back().ops.insert(items.back().ops.end(), item.ops.begin(), item.ops.end());
        else
          items.push_back(std::move(item));
      }
      // The recorder writes a nonblocking MPI call when a Wait or Test
      // completes it: without NCCL ops (whose file order the lowering keeps),
      // order a rank's items as it made the calls.
      if (!any_nccl)
        std::stable_sort(items.begin(), items.end(), [&](const Item& a, const Item& b) {
          return rt.ops[a.trace_op].enter_ns < rt.ops[b.trace_op].enter_ns;
        });
      for (uint32_t k = 0; k < items.size(); ++k)
        if (items[k].nccl) nccl_items_[size_t(g)].push_back(k);
    }
  }

  void AssignIterations() {
    iteration_of_.assign(s_.ops.size(), -1);
    int32_t ref = -1;
    for (int32_t r = 0; r < m_.world_size && ref < 0; ++r)
      if (!items_[size_t(r)].empty()) ref = r;
    s_.iterations = 1;
    if (ref < 0) return;
    const auto& items = items_[size_t(ref)];
    IterationPattern pattern;
    if (options_.iteration_ops > 0) pattern.period = size_t(options_.iteration_ops);
    // A writer's attribute gives each rank's own period (pipeline stages of a
    // hybrid job make different numbers of calls per iteration).
    auto attribute_period = [&](int32_t r) -> size_t {
      if (options_.iteration_ops > 0 || !m_.rank(r)) return 0;
      for (const auto& [k, v] : m_.rank(r)->header.attributes)
        if (k == kIterationOpsAttribute) return size_t(std::strtoull(v.c_str(), nullptr, 10));
      return 0;
    };
    if (size_t p = attribute_period(ref)) pattern.period = p;
    if (!pattern.period) {
      std::vector<uint64_t> sig;
      for (const Item& it : items) {
        const ScheduleOp& op = s_.ops[it.ops.front()];
        sig.push_back((uint64_t(op.kind) << 56) ^ (uint64_t(uint32_t(op.comm)) << 40) ^ op.bytes);
      }
      pattern = DetectIterations(sig);
    }
    if (!pattern.period) return;
    const size_t n = items.size() > pattern.prefix ? items.size() - pattern.prefix : 0;
    s_.iterations = int32_t(std::max<size_t>(1, n / pattern.period));
    for (size_t i = 0; i < items.size(); ++i) {
      size_t it = i < pattern.prefix ? 0 : (i - pattern.prefix) / pattern.period;
      for (uint32_t x : items[i].ops)
        iteration_of_[x] = int32_t(std::min<size_t>(it, size_t(s_.iterations - 1)));
    }
    for (int32_t r = ref + 1; r < m_.world_size; ++r) {
      const size_t period = attribute_period(r);
      if (!period) continue;
      const auto& own = items_[size_t(r)];
      for (size_t i = 0; i < own.size(); ++i)
        for (uint32_t x : own[i].ops)
          if (iteration_of_[x] < 0)
            iteration_of_[x] = int32_t(std::min<size_t>(i / period, size_t(s_.iterations - 1)));
    }
  }

  // Each MPI host thread's calls in the order it made them: the schedule's
  // ops, the Waits/Tests that completed nonblocking ones (found by the
  // completion time the recorder wrote, which falls inside the completing
  // call), and calls that waited for messages (Probe, Tests that completed nothing).
  void BuildHostThreads() {
    threads_.resize(size_t(m_.world_size));
    thread_index_.resize(size_t(m_.world_size));
    for (const auto& rt : m_.set->ranks) {
      const int32_t g = rt.header.global_rank;
      if (g < 0 || g >= m_.world_size) continue;
      auto& threads = threads_[size_t(g)];
      auto& index = thread_index_[size_t(g)];
      auto thread_of = [&](const OpEvent& e) -> HostThread& {
        auto [it, fresh] = index.emplace(e.thread, threads.size());
        if (fresh) {
          threads.emplace_back();
          threads.back().last_exit = first_ns_[size_t(g)];
        }
        return threads[it->second];
      };
      const auto& items = items_[size_t(g)];
      for (uint32_t k = 0; k < items.size(); ++k) {
        if (items[k].nccl) continue;
        const OpEvent& e = rt.ops[items[k].trace_op];
        HostCall c;
        c.type = HostCall::Type::kItem;
        c.nonblocking = formats::IsNonblocking(e.kind);
        c.enter = e.enter_ns;
        c.exit = e.exit_ns;
        c.item = k;
        thread_of(e).calls.push_back(std::move(c));
      }
      for (const OpEvent& e : rt.ops) {
        if (IsNccl(e.kind) || !IsMessageWait(e.kind)) continue;
        HostCall c;
        c.type = IsCompletion(e.kind) ? HostCall::Type::kWait : HostCall::Type::kSkip;
        c.enter = e.enter_ns;
        c.exit = e.exit_ns;
        thread_of(e).calls.push_back(std::move(c));
      }
      auto by_time = [](const HostCall& a, const HostCall& b) { return a.enter < b.enter; };
      for (HostThread& t : threads) std::stable_sort(t.calls.begin(), t.calls.end(), by_time);
      // Attach each completed nonblocking op to the call that completed it.
      for (uint32_t k = 0; k < items.size(); ++k) {
        if (items[k].nccl) continue;
        const OpEvent& e = rt.ops[items[k].trace_op];
        if (!formats::IsNonblocking(e.kind) || !e.completion_ns) continue;
        const int64_t done = *e.completion_ns;
        HostThread& t = thread_of(e);
        auto it = std::upper_bound(t.calls.begin(), t.calls.end(), done,
                                   [](int64_t v, const HostCall& c) { return v < c.enter; });
        while (it != t.calls.begin()) {
          --it;
          if (it->type == HostCall::Type::kWait) break;
        }
        if (it != t.calls.end() && it->type == HostCall::Type::kWait && it->enter <= done &&
            done <= it->exit) {
          it->completed.insert(it->completed.end(), items[k].ops.begin(), items[k].ops.end());
          continue;
        }
        // No completing call on record (a torn file): complete it where it was seen done.
        HostCall c;
        c.type = HostCall::Type::kWait;
        c.enter = c.exit = done;
        c.completed = items[k].ops;
        t.calls.insert(std::upper_bound(t.calls.begin(), t.calls.end(), c, by_time), std::move(c));
      }
      for (HostThread& t : threads)
        for (HostCall& c : t.calls)
          if (c.type == HostCall::Type::kWait && c.completed.empty()) c.type = HostCall::Type::kSkip;
    }
  }

  // Lowers every op once, in an order in which each op's steps can wait for
  // what came before it on every rank it involves: NCCL ops in each rank's
  // recorded order, MPI ops as each host thread reaches them (a nonblocking
  // call holds back nothing after it; a Wait holds back what follows until
  // the ops it completed were lowered). Traces whose orders contradict each
  // other are lowered earliest first anyway.
  void Order() {
    StepBuilder builder(&s_);
    builder_ = &builder;
    lanes_.resize(size_t(m_.world_size));
    pending_.resize(s_.ops.size());
    for (size_t x = 0; x < s_.ops.size(); ++x) pending_[x] = uint32_t(parts_[x].size());
    lowered_.assign(s_.ops.size(), 0);
    cursor_.assign(size_t(m_.world_size), 0);
    for (int32_t r = 0; r < m_.world_size; ++r) {
      Arrive(r);
      Advance(r);
      AdvanceThreads(r);
    }
    size_t done = 0;
    while (done < s_.ops.size()) {
      if (ready_.empty()) ForceOne();
      uint32_t x = ready_.top().second;
      ready_.pop();
      if (lowered_[x]) continue;
      LowerOp(x);
      lowered_[x] = 1;
      ++done;
      for (const Part& p : parts_[x]) {
        Advance(p.rank);
        AdvanceThreads(p.rank);
      }
    }
  }

  void Ready(uint32_t x) {
    if (!lowered_[x] && --pending_[x] == 0) ready_.push({time_[x], x});
  }

  // NCCL: the item at the rank's cursor has arrived.
  void Arrive(int32_t r) {
    const auto& order = nccl_items_[size_t(r)];
    if (cursor_[size_t(r)] >= order.size()) return;
    for (uint32_t x : items_[size_t(r)][order[cursor_[size_t(r)]]].ops) Ready(x);
  }

  void Advance(int32_t r) {
    const auto& order = nccl_items_[size_t(r)];
    size_t& c = cursor_[size_t(r)];
    while (c < order.size()) {
      for (uint32_t x : items_[size_t(r)][order[c]].ops)
        if (!lowered_[x]) return;
      ++c;
      Arrive(r);
    }
  }

  // A compute step of OP on rank R, outside any op's lowering: the time a
  // host thread computed before a call.
  uint32_t AddCompute(int32_t r, uint32_t op, int64_t ns, const std::vector<uint32_t>& deps) {
    RankSchedule& rs = s_.ranks[size_t(r)];
    Step s;
    s.type = StepType::kCompute;
    s.op = op;
    s.duration_ns = uint64_t(std::max<int64_t>(ns, 0));
    s.deps_begin = uint32_t(rs.deps.size());
    rs.deps.insert(rs.deps.end(), deps.begin(), deps.end());
    s.deps_end = uint32_t(rs.deps.size());
    rs.steps.push_back(s);
    return uint32_t(rs.steps.size() - 1);
  }

  // Compute time between the thread's last call and one entering at ENTER.
  int64_t ComputeBefore(HostThread& t, int64_t enter) {
    int64_t ns = t.carry + std::max<int64_t>(0, enter - t.last_exit);
    t.carry = 0;
    return ns;
  }

  void AdvanceThreads(int32_t r) {
    if (size_t(r) >= threads_.size()) return;
    for (HostThread& t : threads_[size_t(r)]) AdvanceThread(r, t);
  }

  // Walks thread T of rank R as far as what was lowered allows, making each
  // op's entry steps (the compute before it, after what it waits for).
  void AdvanceThread(int32_t r, HostThread& t) {
    while (t.pos < t.calls.size()) {
      HostCall& c = t.calls[t.pos];
      if (c.type == HostCall::Type::kSkip) {
        if (c.enter >= t.last_exit) t.carry += c.enter - t.last_exit;
        t.last_exit = std::max(t.last_exit, c.exit);
        ++t.pos;
        continue;
      }
      if (c.type == HostCall::Type::kWait) {
        for (uint32_t x : c.completed)
          if (!lowered_[x]) return;
        const int64_t gap = ComputeBefore(t, c.enter);
        std::vector<uint32_t> after;
        if (gap > 0) after.push_back(AddCompute(r, c.completed.front(), gap, t.frontier));
        else after = t.frontier;
        for (uint32_t x : c.completed) TakeExits(x, r, &after);
        t.frontier = std::move(after);
        t.last_exit = std::max(t.last_exit, c.exit);
        ++t.pos;
        continue;
      }
      const Item& item = items_[size_t(r)][c.item];
      if (!c.reached) {
        c.reached = true;
        const int64_t gap = ComputeBefore(t, c.enter);
        std::vector<uint32_t> entry = t.frontier;
        // One compute step also joins what the thread waited for, so the
        // op's first steps wait on one step each.
        if (gap > 0 || entry.size() > 1) entry = {AddCompute(r, item.ops.front(), gap, t.frontier)};
        for (uint32_t x : item.ops)
          if (!lowered_[x] && entry_.emplace(Key(x, r), entry).second) Ready(x);
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
        if (!lowered_[x]) return;
      std::vector<uint32_t> after;
      for (uint32_t x : item.ops) TakeExits(x, r, &after);
      std::sort(after.begin(), after.end());
      after.erase(std::unique(after.begin(), after.end()), after.end());
      t.frontier = std::move(after);
      t.last_exit = std::max(t.last_exit, c.exit);
      ++t.pos;
    }
  }

  void TakeExits(uint32_t x, int32_t r, std::vector<uint32_t>* out) {
    auto it = exits_.find(Key(x, r));
    if (it == exits_.end()) return;
    out->insert(out->end(), it->second.begin(), it->second.end());
    exits_.erase(it);
  }

  // Nothing is ready: the ranks' orders contradict each other. Lowers the
  // earliest op some rank is waiting at, its other parts where their ranks stand.
  void ForceOne() {
    uint32_t best = kNoOp;
    auto consider = [&](uint32_t x) {
      if (!lowered_[x] && (best == kNoOp || time_[x] < time_[best])) best = x;
    };
    for (int32_t r = 0; r < m_.world_size; ++r) {
      const auto& order = nccl_items_[size_t(r)];
      size_t c = cursor_[size_t(r)];
      if (c < order.size())
        for (uint32_t x : items_[size_t(r)][order[c]].ops) consider(x);
      for (const HostThread& t : threads_[size_t(r)]) {
        if (t.pos >= t.calls.size()) continue;
        const HostCall& call = t.calls[t.pos];
        if (call.type == HostCall::Type::kWait)
          for (uint32_t x : call.completed) consider(x);
        else if (call.type == HostCall::Type::kItem)
          for (uint32_t x : items_[size_t(r)][call.item].ops) consider(x);
      }
    }
    if (best == kNoOp)  // not at any cursor: lower what is left in op order
      for (uint32_t x = 0; x < lowered_.size() && best == kNoOp; ++x)
        if (!lowered_[x]) best = x;
    if (!forced_++) Note("ranks recorded calls in contradicting orders; lowered earliest first");
    for (const Part& p : parts_[best]) {
      const OpEvent& e = TraceOp(p);
      if (IsNccl(e.kind)) continue;
      HostThread& t = threads_[size_t(p.rank)][thread_index_[size_t(p.rank)].at(e.thread)];
      entry_.emplace(Key(best, p.rank), t.frontier);
    }
    pending_[best] = 0;
    ready_.push({time_[best], best});
  }

  void LowerOp(uint32_t x) {
    StepBuilder& b = *builder_;
    ScheduleOp& op = s_.ops[x];
    op.iteration = iteration_of_[x] >= 0 ? iteration_of_[x] : last_iteration_;
    last_iteration_ = op.iteration;
    b.BeginOp(x);
    for (const Part& p : parts_[x]) {
      const OpEvent& e = TraceOp(p);
      if (!IsNccl(e.kind)) {
        b.SetEntry(p.rank, entry_.at(Key(x, p.rank)));
        continue;
      }
      Lane& lane = lanes_[size_t(p.rank)][LaneOf(e)];
      const bool grouped = e.group != 0;
      if (grouped && lane.started && lane.group == e.group) {
        b.SetEntry(p.rank, lane.group_entry);  // a later op of the group
        continue;
      }
      int64_t since = lane.started ? lane.last_end : first_ns_[size_t(p.rank)];
      int64_t gap = StartNs(e) - since;
      std::vector<uint32_t> entry = lane.exits;
      b.SetEntry(p.rank, entry);
      // The previous op may end in many steps (a ring's sends); one compute
      // step joins them, so the new op's first steps wait on one step each.
      if (gap > 0 || lane.exits.size() > 1) {
        uint32_t c = b.Compute(p.rank, uint64_t(std::max<int64_t>(gap, 0)), {});
        entry = {c};
        b.SetEntry(p.rank, entry);
      }
      lane.group = grouped ? e.group : 0;
      if (grouped) {
        lane.group_entry = std::move(entry);
        lane.group_exits.clear();
      }
    }
    if (op.source == ScheduleOp::Source::kCollective) {
      const CollectiveCall& call = m_.calls[op.recorded];
      CollectiveSpec spec;
      spec.collective = call.collective;
      spec.bytes = call.bytes;
      spec.members = m_.comms[call.comm].members;
      spec.root = call.root;
      spec.seq = call.ordinal;
      // NCCL's own choice, where a member's recorder saw it (profiler plugin).
      for (const Part& p : parts_[x]) {
        const OpEvent& e = TraceOp(p);
        if (e.nccl_algorithm == formats::NcclAlgorithm::Unknown) continue;
        spec.recorded_algo = NcclAlgo(int8_t(e.nccl_algorithm));
        spec.recorded_proto = NcclProto(int8_t(e.nccl_protocol));
        spec.recorded_channels = e.nccl_channels;
        break;
      }
      op.algorithm = LowerCollective(*algo_, spec, options_, b, &op);
    } else {
      const Transfer& t = m_.transfers[op.recorded];
      b.Transfer(t.src, t.dst, t.bytes, 0, {}, {});
    }
    b.EndOp();
    for (const Part& p : parts_[x]) {
      const OpEvent& e = TraceOp(p);
      if (!IsNccl(e.kind)) {
        // What a later call waits for once this op is done (a Wait for a
        // nonblocking one): its last steps, or its entry when it had none here.
        auto entry = entry_.find(Key(x, p.rank));
        exits_[Key(x, p.rank)] = b.Touched(p.rank) ? b.Exits(p.rank) : entry->second;
        entry_.erase(entry);
        continue;
      }
      Lane& lane = lanes_[size_t(p.rank)][LaneOf(e)];
      if (lane.group != 0 && e.group == lane.group) {
        if (b.Touched(p.rank)) {
          const auto& exits = b.Exits(p.rank);
          lane.group_exits.insert(lane.group_exits.end(), exits.begin(), exits.end());
        }
        if (!lane.group_exits.empty()) lane.exits = lane.group_exits;
      } else if (b.Touched(p.rank)) {
        lane.exits = b.Exits(p.rank);
      }
      lane.last_end = std::max(lane.started ? lane.last_end : INT64_MIN, EndNs(e));
      lane.started = true;
    }
  }

  const MergedTrace& m_;
  LowerOptions options_;
  std::vector<std::string>* notes_;
  Schedule s_;
  std::vector<int64_t> first_ns_;
  std::vector<uint32_t> op_of_call_, op_of_transfer_;
  std::vector<std::vector<Part>> parts_;
  std::vector<int64_t> time_;
  std::vector<std::vector<Item>> items_;
  std::vector<std::vector<uint32_t>> nccl_items_;  // per rank: its NCCL items, in order
  std::vector<int32_t> iteration_of_;
  int32_t last_iteration_ = 0;
  const Algorithm* algo_ = nullptr;
  StepBuilder* builder_ = nullptr;
  std::vector<std::map<std::pair<int, uint64_t>, Lane>> lanes_;  // NCCL streams
  std::vector<std::vector<HostThread>> threads_;                  // MPI host threads
  std::vector<std::map<uint32_t, size_t>> thread_index_;          // recorder thread -> threads_ index
  // Per (op, rank) of MPI ops: the steps its steps there wait for, from when
  // the rank's thread reached it until it is lowered; then its exits there,
  // until the thread goes past what waits for them.
  std::unordered_map<uint64_t, std::vector<uint32_t>> entry_, exits_;
  std::vector<uint32_t> pending_;
  std::vector<char> lowered_;
  std::vector<size_t> cursor_;
  std::priority_queue<std::pair<int64_t, uint32_t>, std::vector<std::pair<int64_t, uint32_t>>,
                      std::greater<>>
      ready_;
  size_t forced_ = 0;
};

}  // namespace

Schedule LowerTrace(const MergedTrace& merged, const LowerOptions& options,
                    std::vector<std::string>* notes) {
  return Lowerer(merged, options, notes).Run();
}

}  // namespace dltrace::models
