// Lowering a merged trace: orders calls and transfers so every rank sees its
// own recorded order, and lowers each through the chosen algorithm. The
// pieces: lowering/recorded_ops (the ops and each rank's order),
// lowering/iterations, lowering/nccl_lanes (GPU streams), lowering/host_threads
// (MPI threads); this file holds the order in which ops are lowered.
#include "dltrace/models/lower.h"

#include <queue>
#include <unordered_map>

#include "lowering/host_threads.h"
#include "lowering/nccl_lanes.h"
#include "lowering/recorded_ops.h"

namespace dltrace::models {

namespace {

using formats::OpEvent;
using lowering::HostThreads;
using lowering::IsNccl;
using lowering::NcclLanes;
using lowering::Part;
using lowering::RecordedOps;

uint64_t Key(uint32_t op, int32_t rank) { return (uint64_t(op) << 32) | uint32_t(rank); }

// Whether the job's transfers are NCCL's: any rank recorded an NCCL call.
bool HasNcclOps(const MergedTrace& m) {
  for (const auto& rt : m.set->ranks)
    for (const auto& op : rt.ops)
      if (IsNccl(op.kind)) return true;
  return false;
}

class Lowerer : public lowering::OpProgress {
 public:
  Lowerer(const MergedTrace& m, const LowerOptions& o, std::vector<std::string>* notes)
      : m_(m), options_(o), notes_(notes) {}

  Schedule Run() {
    BuildEndpoints();
    rec_ = lowering::CollectRecordedOps(m_, &s_, notes_);
    iteration_of_ = lowering::AssignIterations(m_, options_, rec_, &s_);
    NcclLanes lanes(m_, rec_);
    HostThreads threads(m_, rec_, &s_);
    lanes_ = &lanes;
    threads_ = &threads;
    Order();
    return std::move(s_);
  }

  bool Lowered(uint32_t x) const override { return lowered_[x]; }
  void Reach(uint32_t x, int32_t r, std::vector<uint32_t> entry) override {
    if (!lowered_[x] && entry_.emplace(Key(x, r), std::move(entry)).second) Ready(x);
  }
  void TakeExits(uint32_t x, int32_t r, std::vector<uint32_t>* out) override {
    auto it = exits_.find(Key(x, r));
    if (it == exits_.end()) return;
    out->insert(out->end(), it->second.begin(), it->second.end());
    exits_.erase(it);
  }

 private:
  void Note(const std::string& n) {
    if (notes_) notes_->push_back(n);
  }

  void BuildEndpoints() {
    s_.world_size = m_.world_size;
    s_.local_link = LocalLinkFor(options_, HasNcclOps(m_));
    for (const auto& h : m_.hosts) s_.hosts.push_back(h.name);
    for (int32_t r = 0; r < m_.world_size; ++r)
      s_.endpoints.push_back({EndpointRole::kWorker, r, m_.host_of_rank[size_t(r)]});
    algo_ = FindAlgorithm(options_.algorithm);
    if (!algo_) algo_ = FindAlgorithm(kRecordedAlgorithm);
    AddExtraEndpoints(*algo_, options_, &s_);
    s_.ranks.resize(s_.endpoints.size());
  }

  const OpEvent& TraceOp(const Part& p) const { return rec_.TraceOp(m_, p); }

  // Lowers every op once, in an order in which each op's steps can wait for
  // what came before it on every rank it involves: NCCL ops in each rank's
  // recorded order, MPI ops as each host thread reaches them (a nonblocking
  // call holds back nothing after it; a Wait holds back what follows until
  // the ops it completed were lowered). Traces whose orders contradict each
  // other are lowered earliest first anyway.
  void Order() {
    StepBuilder builder(&s_);
    builder_ = &builder;
    pending_.resize(s_.ops.size());
    for (size_t x = 0; x < s_.ops.size(); ++x) pending_[x] = uint32_t(rec_.parts[x].size());
    lowered_.assign(s_.ops.size(), 0);
    const auto ready = [this](uint32_t x) { Ready(x); };
    for (int32_t r = 0; r < m_.world_size; ++r) {
      lanes_->Start(r, ready);
      lanes_->Advance(r, lowered_, ready);
      threads_->Advance(r, *this);
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
      for (const Part& p : rec_.parts[x]) {
        lanes_->Advance(p.rank, lowered_, ready);
        threads_->Advance(p.rank, *this);
      }
    }
  }

  void Ready(uint32_t x) {
    if (!lowered_[x] && --pending_[x] == 0) ready_.push({rec_.time[x], x});
  }

  // Nothing is ready: the ranks' orders contradict each other. Lowers the
  // earliest op some rank is waiting at, its other parts where their ranks stand.
  void ForceOne() {
    uint32_t best = kNoOp;
    auto consider = [&](uint32_t x) {
      if (!lowered_[x] && (best == kNoOp || rec_.time[x] < rec_.time[best])) best = x;
    };
    for (int32_t r = 0; r < m_.world_size; ++r) {
      if (const auto* ops = lanes_->AtCursor(r))
        for (uint32_t x : *ops) consider(x);
      threads_->ForEachWaitingOp(r, consider);
    }
    if (best == kNoOp)  // not at any cursor: lower what is left in op order
      for (uint32_t x = 0; x < lowered_.size() && best == kNoOp; ++x)
        if (!lowered_[x]) best = x;
    if (!forced_++) Note("ranks recorded calls in contradicting orders; lowered earliest first");
    for (const Part& p : rec_.parts[best]) {
      const OpEvent& e = TraceOp(p);
      if (IsNccl(e.kind)) continue;
      entry_.emplace(Key(best, p.rank), threads_->Frontier(p.rank, e));
    }
    pending_[best] = 0;
    ready_.push({rec_.time[best], best});
  }

  void LowerOp(uint32_t x) {
    StepBuilder& b = *builder_;
    ScheduleOp& op = s_.ops[x];
    op.iteration = iteration_of_[x] >= 0 ? iteration_of_[x] : last_iteration_;
    last_iteration_ = op.iteration;
    b.BeginOp(x);
    for (const Part& p : rec_.parts[x]) {
      const OpEvent& e = TraceOp(p);
      if (IsNccl(e.kind)) lanes_->Enter(b, p.rank, e);
      else b.SetEntry(p.rank, entry_.at(Key(x, p.rank)));
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
    for (const Part& p : rec_.parts[x]) {
      const OpEvent& e = TraceOp(p);
      if (IsNccl(e.kind)) {
        lanes_->Exit(b, p.rank, e);
        continue;
      }
      // What a later call waits for once this op is done (a Wait for a
      // nonblocking one): its last steps, or its entry when it had none here.
      auto entry = entry_.find(Key(x, p.rank));
      exits_[Key(x, p.rank)] = b.Touched(p.rank) ? b.Exits(p.rank) : entry->second;
      entry_.erase(entry);
    }
  }

  const MergedTrace& m_;
  const LowerOptions& options_;
  std::vector<std::string>* notes_;
  Schedule s_;
  RecordedOps rec_;
  std::vector<int32_t> iteration_of_;
  int32_t last_iteration_ = 0;
  const Algorithm* algo_ = nullptr;
  StepBuilder* builder_ = nullptr;
  NcclLanes* lanes_ = nullptr;
  HostThreads* threads_ = nullptr;
  // Per (op, rank) of MPI ops: the steps its steps there wait for, from when
  // the rank's thread reached it until it is lowered; then its exits there,
  // until the thread goes past what waits for them.
  std::unordered_map<uint64_t, std::vector<uint32_t>> entry_, exits_;
  std::vector<uint32_t> pending_;
  std::vector<char> lowered_;
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
