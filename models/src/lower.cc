// Lowering a merged trace: orders calls and transfers so every rank sees
// its own recorded order, turns idle time into compute steps, finds iterations.
#include "dltrace/models/lower.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <queue>

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
};

class Lowerer {
 public:
  Lowerer(const MergedTrace& m, const LowerOptions& o, std::vector<std::string>* notes)
      : m_(m), options_(o), notes_(notes) {}

  Schedule Run() {
    BuildEndpoints();
    BuildOps();
    BuildItems();
    AssignIterations();
    Order();
    return std::move(s_);
  }

 private:
  void Note(const std::string& n) {
    if (notes_) notes_->push_back(n);
  }

  void BuildEndpoints() {
    s_.world_size = m_.world_size;
    s_.local_link = options_.local_link;
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
    for (const auto& rt : m_.set->ranks) {
      int32_t g = rt.header.global_rank;
      if (g < 0 || g >= m_.world_size) continue;
      const auto& links = m_.links[size_t(g)];
      auto& items = items_[size_t(g)];
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
        if (i < rt.ops.size() && IsNccl(rt.ops[i].kind)) item.group = rt.ops[i].group;
        if (item.group && !items.empty() && items.back().group == item.group)
          items.back().ops.insert(items.back().ops.end(), item.ops.begin(), item.ops.end());
        else
          items.push_back(std::move(item));
      }
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

  // Lowers every op once, in an order that keeps each rank's recorded order
  // (a merge of the per-rank orders, earliest first). Traces whose orders
  // contradict each other are lowered earliest-first anyway.
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
      for (const Part& p : parts_[x]) Advance(p.rank);
    }
  }

  void Arrive(int32_t r) {
    const auto& items = items_[size_t(r)];
    if (cursor_[size_t(r)] >= items.size()) return;
    for (uint32_t x : items[cursor_[size_t(r)]].ops)
      if (!lowered_[x] && --pending_[x] == 0) ready_.push({time_[x], x});
  }

  void Advance(int32_t r) {
    const auto& items = items_[size_t(r)];
    size_t& c = cursor_[size_t(r)];
    while (c < items.size()) {
      for (uint32_t x : items[c].ops)
        if (!lowered_[x]) return;
      ++c;
      Arrive(r);
    }
  }

  void ForceOne() {
    uint32_t best = kNoOp;
    for (int32_t r = 0; r < m_.world_size; ++r) {
      size_t c = cursor_[size_t(r)];
      if (c >= items_[size_t(r)].size()) continue;
      for (uint32_t x : items_[size_t(r)][c].ops)
        if (!lowered_[x] && (best == kNoOp || time_[x] < time_[best])) best = x;
    }
    if (best == kNoOp)  // not at any cursor: lower what is left in op order
      for (uint32_t x = 0; x < lowered_.size() && best == kNoOp; ++x)
        if (!lowered_[x]) best = x;
    if (!forced_++) Note("ranks recorded calls in contradicting orders; lowered earliest first");
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
      Lane& lane = lanes_[size_t(p.rank)][LaneOf(e)];
      const bool grouped = IsNccl(e.kind) && e.group != 0;
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
        gap_step_[p.rank] = c;
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
      op.algorithm = LowerCollective(*algo_, spec, options_, b);
    } else {
      const Transfer& t = m_.transfers[op.recorded];
      b.Transfer(t.src, t.dst, t.bytes, 0, {}, {});
    }
    b.EndOp();
    for (const Part& p : parts_[x]) {
      const OpEvent& e = TraceOp(p);
      Lane& lane = lanes_[size_t(p.rank)][LaneOf(e)];
      if (!IsNccl(e.kind) && formats::IsNonblocking(e.kind)) {
        // The host thread goes on at once: later ops wait for the idle time
        // before this call, not for its transfer.
        auto g = gap_step_.find(p.rank);
        if (g != gap_step_.end()) lane.exits = {g->second};
      } else if (lane.group != 0 && IsNccl(e.kind) && e.group == lane.group) {
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
    gap_step_.clear();
  }

  const MergedTrace& m_;
  const LowerOptions& options_;
  std::vector<std::string>* notes_;
  Schedule s_;
  std::vector<int64_t> first_ns_;
  std::vector<uint32_t> op_of_call_, op_of_transfer_;
  std::vector<std::vector<Part>> parts_;
  std::vector<int64_t> time_;
  std::vector<std::vector<Item>> items_;
  std::vector<int32_t> iteration_of_;
  int32_t last_iteration_ = 0;
  const Algorithm* algo_ = nullptr;
  StepBuilder* builder_ = nullptr;
  std::vector<std::map<std::pair<int, uint64_t>, Lane>> lanes_;
  std::vector<uint32_t> pending_;
  std::vector<char> lowered_;
  std::vector<size_t> cursor_;
  std::priority_queue<std::pair<int64_t, uint32_t>, std::vector<std::pair<int64_t, uint32_t>>,
                      std::greater<>>
      ready_;
  std::map<int32_t, uint32_t> gap_step_;
  size_t forced_ = 0;
};

}  // namespace

Schedule LowerTrace(const MergedTrace& merged, const LowerOptions& options,
                    std::vector<std::string>* notes) {
  return Lowerer(merged, options, notes).Run();
}

}  // namespace dltrace::models
