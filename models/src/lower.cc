// SPDX-License-Identifier: GPL-2.0-only
// Lowering a merged trace: orders calls and transfers so every rank sees its
// own recorded order, and lowers each through the chosen algorithm. The
// pieces: lowering/recorded_ops (the ops and each rank's order),
// lowering/iterations, lowering/nccl_lanes (GPU streams), lowering/host_threads
// (MPI threads), lowering/lone_op (an op's parts lowered at different times);
// this file holds the order in which ops are lowered.
#include "dltrace/models/lower.h"

#include <cinttypes>
#include <cstdio>
#include <memory>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "lowering/host_threads.h"
#include "lowering/lone_op.h"
#include "lowering/nccl_lanes.h"
#include "lowering/recorded_ops.h"

namespace dltrace::models {

namespace {

using formats::OpEvent;
using lowering::HostThreads;
using formats::OpKind;
using lowering::IsNccl;
using lowering::LoneOp;
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

// Sends that complete only once their receive was matched: synchronous
// mode, and blocking standard mode over the eager limit.
bool MustMeetReceive(OpKind kind, uint64_t bytes, uint64_t eager_limit) {
  if (kind == OpKind::MpiSsend || kind == OpKind::MpiIssend) return true;
  const bool standard = kind == OpKind::MpiSend || kind == OpKind::MpiRsend ||
                        kind == OpKind::MpiSendrecv || kind == OpKind::MpiSendrecvReplace;
  return standard && bytes > eager_limit;
}

class Lowerer : public lowering::OpProgress {
 public:
  Lowerer(const MergedTrace& m, const LowerOptions& o, std::vector<std::string>* notes,
          std::vector<ForcedOrder>* forced)
      : m_(m), options_(o), notes_(notes), forced_out_(forced) {
    if (options_.algorithm.empty()) options_.algorithm = DefaultAlgorithm(m_);
    if (options_.nccl.algo.empty() && options_.nccl.proto.empty() && options_.nccl.version.empty())
      options_.nccl = RecordedNcclSettings();
  }

  Schedule Run() {
    BuildEndpoints();
    rec_ = lowering::CollectRecordedOps(m_, &s_, notes_);
    iteration_of_ = lowering::AssignIterations(m_, options_, rec_, &s_);
    NcclLanes lanes(m_, rec_);
    HostThreads threads(m_, rec_, &s_);
    lanes_ = &lanes;
    threads_ = &threads;
    Order();
    if (!forced_.empty()) {
      Note("ranks recorded calls in contradicting orders: " + std::to_string(forced_.size()) +
           " op" + (forced_.size() == 1 ? "" : "s") +
           " lowered where each rank stood, earliest first; the first: " +
           DescribeForcedOrder(m_, s_, forced_.front()));
      if (forced_out_) *forced_out_ = std::move(forced_);
    }
    // The steps grew one push_back at a time (about 40 % spare capacity on
    // average); a large job keeps them for the whole run, so give it back.
    for (auto& r : s_.ranks) {
      r.steps.shrink_to_fit();
      r.deps.shrink_to_fit();
    }
    return std::move(s_);
  }

  bool Done(uint32_t x, int32_t r) const override {
    return lowered_[x] || done_parts_.count(Key(x, r));
  }
  void Reach(uint32_t x, int32_t r, std::vector<uint32_t> entry) override {
    if (lowered_[x] || !entry_.emplace(Key(x, r), std::move(entry)).second) return;
    waiting_.insert({rec_.time[x], x});
    Ready(x);
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

  // The NCCL settings and version the first rank that recorded NCCL's version ran with.
  NcclSettings RecordedNcclSettings() const {
    for (const auto& rt : m_.set->ranks)
      if (!rt.header.nccl_version.empty())
        return NcclSettingsFrom(rt.header.nccl_env, rt.header.nccl_version);
    return {};
  }

  void BuildEndpoints() {
    s_.world_size = m_.world_size;
    s_.local_link = LocalLinkFor(options_, HasNcclOps(m_));
    for (const auto& h : m_.hosts) s_.hosts.push_back(h.name);
    for (int32_t r = 0; r < m_.world_size; ++r)
      s_.endpoints.push_back({EndpointRole::kWorker, r, m_.host_of_rank[size_t(r)]});
    algo_ = FindAlgorithm(options_.algorithm);
    if (!algo_) algo_ = FindAlgorithm(kRecordedAlgorithm);
    s_.algorithm = algo_->name;
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
    started_.assign(s_.ops.size(), 0);
    const auto ready = [this](uint32_t x) { Ready(x); };
    for (int32_t r = 0; r < m_.world_size; ++r) {
      lanes_->Start(r, ready);
      lanes_->Advance(r, lowered_, ready);
      threads_->Advance(r, *this);
    }
    while (done_ < s_.ops.size()) {
      if (ready_.empty() && !LowerPartsAlone()) ForceOne();
      if (ready_.empty()) continue;
      uint32_t x = ready_.top().second;
      ready_.pop();
      if (lowered_[x]) continue;
      LowerOp(x);
      Finish(x);
      for (const Part& p : rec_.parts[x]) {
        lanes_->Advance(p.rank, lowered_, ready);
        threads_->Advance(p.rank, *this);
      }
    }
  }

  void Finish(uint32_t x) {
    lowered_[x] = 1;
    ++done_;
    waiting_.erase({rec_.time[x], x});
    lone_.erase(x);
    for (const Part& p : rec_.parts[x]) done_parts_.erase(Key(x, p.rank));
  }

  // The op's iteration, fixed when its first steps are made.
  void StartOp(uint32_t x) {
    if (started_[x]) return;
    started_[x] = 1;
    ScheduleOp& op = s_.ops[x];
    op.iteration = iteration_of_[x] >= 0 ? iteration_of_[x] : last_iteration_;
    last_iteration_ = op.iteration;
  }

  // The op's steps through the chosen algorithm (B between BeginOp and EndOp).
  void LowerSteps(uint32_t x, StepBuilder& b) {
    ScheduleOp& op = s_.ops[x];
    // NCCL reduces on the GPU; MPI libraries on the host.
    b.set_host_reduces(!IsNccl(op.kind));
    if (op.source == ScheduleOp::Source::kOneSided) {
      LowerOneSided(m_.one_sided[op.recorded], op.collective, b);
    } else if (op.source == ScheduleOp::Source::kCollective &&
               op.collective == formats::Collective::kNeighborExchange) {
      LowerNeighborExchange(m_.calls[op.recorded], b);
      op.algorithm = kRecordedAlgorithm;
    } else if (op.source == ScheduleOp::Source::kCollective) {
      const CollectiveCall& call = m_.calls[op.recorded];
      CollectiveSpec spec;
      spec.collective = call.collective;
      spec.bytes = call.bytes;
      spec.members = m_.comms[call.comm].members;
      spec.root = call.root;
      spec.seq = call.ordinal;
      // NCCL's own choice, where a member's recorder saw it (profiler plugin).
      for (const Part& p : rec_.parts[x]) {
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
  }

  // A put goes from origin to target; a get is a request to the target and
  // its reply; a get-accumulate both (bytes each way). The target takes part
  // in no call of its own (passive target; a fence or wait there is its
  // own op): its steps wait for nothing but the origin's. The origin's call
  // is nonblocking: the synchronisation that closed its epoch (fence,
  // unlock, complete, flush) waits for these steps.
  void LowerOneSided(const OneSidedOp& o, formats::Collective c, StepBuilder& b) {
    b.SetEntry(o.target, {});
    using formats::Collective;
    if (c == Collective::kPut) {
      b.Transfer(o.origin, o.target, o.bytes, 0, {}, {});
      return;
    }
    auto request = b.Transfer(o.origin, o.target, c == Collective::kGet ? 0 : o.bytes, 0, {}, {});
    b.Transfer(o.target, o.origin, o.bytes, 0, {request.recv}, {});
  }

  // A neighbourhood collective is the point-to-point messages it stands
  // for: what each member recorded sending to each other member.
  void LowerNeighborExchange(const CollectiveCall& call, StepBuilder& b) {
    const auto& members = m_.comms[call.comm].members;
    for (size_t k = 0; k < call.parts.size(); ++k) {
      if (call.parts[k] < 0) continue;
      const int32_t from = members[k];
      const formats::OpEvent& e = m_.rank(from)->ops[size_t(call.parts[k])];
      for (size_t j = 0; j < e.peer_send_bytes.size() && j < members.size(); ++j)
        if (e.peer_send_bytes[j] > 0 && members[j] != from)
          b.Transfer(from, members[j], e.peer_send_bytes[j], 0, {}, {});
    }
  }

  LoneOp& Lone(uint32_t x) {
    auto it = lone_.find(x);
    if (it == lone_.end())
      it = lone_.emplace(x, std::make_unique<LoneOp>(s_, x, [&](StepBuilder& b) { LowerSteps(x, b); }))
               .first;
    return *it->second;
  }

  // The receiver of a transfer whose send must meet its receive; -1 otherwise.
  int32_t SyncReceiver(uint32_t x) const {
    const ScheduleOp& op = s_.ops[x];
    if (op.source != ScheduleOp::Source::kTransfer) return -1;
    const Transfer& t = m_.transfers[op.recorded];
    const auto& eps = s_.endpoints;
    const bool local = eps[size_t(t.src)].host >= 0 && eps[size_t(t.src)].host == eps[size_t(t.dst)].host;
    const uint64_t limit = local ? options_.eager_limit_local_bytes : options_.eager_limit_bytes;
    return MustMeetReceive(op.kind, t.bytes, limit) ? t.dst : -1;
  }

  // Nothing can be lowered whole: lowers, per MPI op some rank reached, the
  // parts that can complete without the ranks not there yet (each message
  // they receive was lowered on its sender's side, or comes from a part
  // lowered with them). Returns whether any part was lowered.
  bool LowerPartsAlone() {
    std::vector<uint32_t> candidates;
    for (const auto& [t, x] : waiting_) candidates.push_back(x);
    bool any = false;
    for (uint32_t x : candidates) {
      if (lowered_[x] || IsNccl(s_.ops[x].kind)) continue;
      std::vector<int32_t> ranks;
      if (!LowerAlone(x, &ranks)) continue;
      any = true;
      for (int32_t r : ranks) threads_->Advance(r, *this);
    }
    return any;
  }

  // Lowers what parts of X can be lowered now, their world ranks into
  // *RANKS; false when none could.
  bool LowerAlone(uint32_t x, std::vector<int32_t>* ranks) {
    LoneOp& lone = Lone(x);
    const int32_t workers = m_.world_size;
    auto done = [&](int32_t e) { return lone_done_.count(Key(x, e)) > 0; };
    auto reached = [&](int32_t e) { return e >= workers || entry_.count(Key(x, e)) > 0; };
    std::set<int32_t> group;
    for (const Part& p : rec_.parts[x])
      if (reached(p.rank) && !done(p.rank)) group.insert(p.rank);
    for (int32_t e : lone.Endpoints())
      if (e >= workers && !done(e)) group.insert(e);
    const int32_t sync_receiver = SyncReceiver(x);
    const int32_t sender = s_.ops[x].source == ScheduleOp::Source::kTransfer
                               ? m_.transfers[s_.ops[x].recorded].src
                               : -1;
    for (bool changed = true; changed;) {
      changed = false;
      for (auto it = group.begin(); it != group.end();) {
        bool ok = true;
        for (int32_t from : lone.Senders(*it))
          if (!done(from) && !group.count(from)) ok = false;
        if (*it == sender && sync_receiver >= 0 && !done(sync_receiver) && !group.count(sync_receiver))
          ok = false;
        if (ok) {
          ++it;
        } else {
          it = group.erase(it);
          changed = true;
        }
      }
    }
    if (group.empty()) return false;
    StartOp(x);
    for (int32_t e : group) {
      lone_done_.insert(Key(x, e));
      if (e >= workers) {
        lone.CopyTo(&s_, e, {});
        continue;
      }
      auto entry = entry_.find(Key(x, e));
      exits_[Key(x, e)] = lone.CopyTo(&s_, e, entry->second);
      entry_.erase(entry);
      done_parts_.insert(Key(x, e));
      ranks->push_back(e);
    }
    // Every part done: the op is lowered.
    bool all = true;
    for (const Part& p : rec_.parts[x]) all = all && done(p.rank);
    for (int32_t e : lone.Endpoints()) all = all && done(e);
    if (all) {
      for (const Part& p : rec_.parts[x]) lone_done_.erase(Key(x, p.rank));
      for (int32_t e : lone.Endpoints()) lone_done_.erase(Key(x, e));
      Finish(x);
    }
    return true;
  }

  void Ready(uint32_t x) {
    if (!lowered_[x] && --pending_[x] == 0) ready_.push({rec_.time[x], x});
  }

  // Nothing can be lowered, whole or in parts: the ranks' orders contradict
  // each other. Lowers the earliest op some rank is waiting at, its other
  // parts where their ranks stand, and says so.
  void ForceOne() {
    uint32_t best = kNoOp;
    auto consider = [&](uint32_t x) {
      if (!lowered_[x] && (best == kNoOp || rec_.time[x] < rec_.time[best])) best = x;
    };
    for (int32_t r = 0; r < m_.world_size; ++r) {
      if (const lowering::Item* item = lanes_->AtCursor(r))
        for (uint32_t x : item->ops) consider(x);
      threads_->ForEachWaitingOp(r, consider);
    }
    if (best == kNoOp)  // not at any cursor: lower what is left in op order
      for (uint32_t x = 0; x < lowered_.size() && best == kNoOp; ++x)
        if (!lowered_[x]) best = x;
    ForcedOrder f;
    f.op = best;
    for (const Part& p : rec_.parts[best]) {
      const OpEvent& e = TraceOp(p);
      const int64_t origin = rec_.first_ns[size_t(p.rank)];
      ForcedOrder::Party party;
      party.rank = p.rank;
      party.call = p.trace_op;
      party.enter_ns = e.enter_ns - origin;
      if (IsNccl(e.kind)) {
        const lowering::Item* at = lanes_->AtCursor(p.rank);
        party.reached = at && std::find(at->ops.begin(), at->ops.end(), best) != at->ops.end();
        if (!party.reached && at) {
          const OpEvent& a = m_.rank(p.rank)->ops[at->trace_op];
          party.at_kind = a.kind;
          party.at_call = at->trace_op;
          party.at_enter_ns = a.enter_ns - origin;
        }
      } else {
        party.reached = Done(best, p.rank) || entry_.count(Key(best, p.rank));
        if (!party.reached) {
          const auto at = threads_->StandingAt(p.rank, e);
          party.at_kind = at.kind;
          party.at_call = at.call;
          party.at_enter_ns = at.enter_ns - origin;
          entry_.emplace(Key(best, p.rank), threads_->Frontier(p.rank, e));
        }
      }
      f.parties.push_back(party);
    }
    forced_.push_back(std::move(f));
    pending_[best] = 0;
    ready_.push({rec_.time[best], best});
  }

  void LowerOp(uint32_t x) {
    StartOp(x);
    if (lone_.count(x)) {  // some parts were lowered alone, or tried: copy the rest
      LoneOp& lone = *lone_[x];
      for (const Part& p : rec_.parts[x]) {
        if (lone_done_.erase(Key(x, p.rank))) continue;
        auto entry = entry_.find(Key(x, p.rank));
        exits_[Key(x, p.rank)] = lone.CopyTo(&s_, p.rank, entry->second);
        entry_.erase(entry);
      }
      for (int32_t e : lone.Endpoints())
        if (e >= m_.world_size && !lone_done_.erase(Key(x, e))) lone.CopyTo(&s_, e, {});
      return;
    }
    StepBuilder& b = *builder_;
    b.BeginOp(x);
    for (const Part& p : rec_.parts[x]) {
      const OpEvent& e = TraceOp(p);
      if (IsNccl(e.kind)) lanes_->Enter(b, p.rank, e);
      else b.SetEntry(p.rank, entry_.at(Key(x, p.rank)));
    }
    LowerSteps(x, b);
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
  LowerOptions options_;
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
  std::vector<char> lowered_, started_;
  size_t done_ = 0;
  // MPI ops some rank reached and that are not lowered, earliest first.
  std::set<std::pair<int64_t, uint32_t>> waiting_;
  // Ops whose parts are lowered at different times, and which parts
  // (Key(op, endpoint)) were; done_parts_ only the ranks' (what Done says).
  std::unordered_map<uint32_t, std::unique_ptr<LoneOp>> lone_;
  std::unordered_set<uint64_t> lone_done_, done_parts_;
  std::priority_queue<std::pair<int64_t, uint32_t>, std::vector<std::pair<int64_t, uint32_t>>,
                      std::greater<>>
      ready_;
  std::vector<ForcedOrder> forced_;
  std::vector<ForcedOrder>* forced_out_;
};

}  // namespace

std::string DefaultAlgorithm(const MergedTrace& merged) {
  return HasNcclOps(merged) ? kNcclAlgorithm : kRecordedAlgorithm;
}

Schedule LowerTrace(const MergedTrace& merged, const LowerOptions& options,
                    std::vector<std::string>* notes, std::vector<ForcedOrder>* forced) {
  return Lowerer(merged, options, notes, forced).Run();
}

std::string DescribeForcedOrder(const MergedTrace& m, const Schedule& s, const ForcedOrder& f) {
  char buf[160];
  const ScheduleOp& op = s.ops[f.op];
  std::string out = formats::OpKindName(op.kind);
  if (op.source == ScheduleOp::Source::kTransfer) {
    const Transfer& t = m.transfers[op.recorded];
    std::snprintf(buf, sizeof buf, " %d->%d of %" PRIu64 " bytes", t.src, t.dst, t.bytes);
    out += buf;
  } else {
    out += " #" + std::to_string(m.calls[op.recorded].ordinal);
  }
  if (op.comm >= 0 && size_t(op.comm) < m.comms.size()) {
    const WorldCommunicator& c = m.comms[size_t(op.comm)];
    out += " on communicator " + std::to_string(op.comm);
    if (!c.name.empty()) out += " (" + c.name + ")";
    out += " {";
    for (size_t k = 0; k < c.members.size(); ++k)
      out += (k ? "," : "") + std::to_string(c.members[k]);
    out += "}";
  }
  out += ":";
  for (size_t k = 0; k < f.parties.size(); ++k) {
    const auto& p = f.parties[k];
    std::snprintf(buf, sizeof buf, "%s rank %d call %u at %.6f s", k ? ";" : "", p.rank, p.call,
                  double(p.enter_ns) / 1e9);
    out += buf;
    if (p.reached) {
      out += " (waiting there)";
    } else if (p.at_kind != OpKind::Unknown) {
      std::snprintf(buf, sizeof buf, " (still at %s, call %u at %.6f s)",
                    formats::OpKindName(p.at_kind), p.at_call, double(p.at_enter_ns) / 1e9);
      out += buf;
    } else {
      out += " (past its last call)";
    }
  }
  return out;
}

}  // namespace dltrace::models
