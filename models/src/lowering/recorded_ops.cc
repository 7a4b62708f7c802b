// SPDX-License-Identifier: GPL-2.0-only
// The lowering's input: schedule ops from a merged trace's collective calls
// and transfers, and each rank's recorded order of them.
#include "recorded_ops.h"

#include <algorithm>

namespace dltrace::models::lowering {

using formats::OpEvent;

namespace {

class Collector {
 public:
  Collector(const MergedTrace& m, Schedule* s, std::vector<std::string>* notes)
      : m_(m), s_(*s), notes_(notes) {}

  RecordedOps Run() {
    rec_.first_ns.assign(size_t(m_.world_size), 0);
    for (const auto& rt : m_.set->ranks) {
      int32_t g = rt.header.global_rank;
      if (g >= 0 && g < m_.world_size) rec_.first_ns[size_t(g)] = RankOriginNs(rt);
    }
    CollectOps();
    OrderItems();
    return std::move(rec_);
  }

 private:
  void Note(const std::string& n) {
    if (notes_) notes_->push_back(n);
  }

  void CollectOps() {
    op_of_call_.assign(m_.calls.size(), kNoOp);
    op_of_transfer_.assign(m_.transfers.size(), kNoOp);
    op_of_one_sided_.assign(m_.one_sided.size(), kNoOp);
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
      if (!parts.empty()) op.datatype = m_.rank(parts.front().rank)->ops[parts.front().trace_op].datatype;
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
    // One-sided ops: the origin's call alone (a passive target makes none);
    // the target's side has no entry of its own (LowerOneSided in lower.cc).
    size_t local = 0;
    for (uint32_t k = 0; k < m_.one_sided.size(); ++k) {
      const OneSidedOp& o = m_.one_sided[k];
      if (o.origin == o.target) {
        ++local;
        continue;
      }
      ScheduleOp op;
      op.source = ScheduleOp::Source::kOneSided;
      op.kind = m_.rank(o.origin)->ops[o.op].kind;
      op.collective = formats::CollectiveOf(op.kind);
      op.recorded = k;
      op.comm = int32_t(o.comm);
      op.bytes = o.bytes;
      op.algorithm = kRecordedAlgorithm;
      op_of_one_sided_[k] = Add(op, {{o.origin, o.op}});
    }
    if (local) Note(std::to_string(local) + " one-sided ops a rank made on its own window part were left out");
  }

  uint32_t Add(const ScheduleOp& op, std::vector<Part> parts) {
    int64_t t = INT64_MAX;
    for (const Part& p : parts) t = std::min(t, rec_.TraceOp(m_, p).enter_ns);
    s_.ops.push_back(op);
    rec_.parts.push_back(std::move(parts));
    rec_.time.push_back(t);
    return uint32_t(s_.ops.size() - 1);
  }

  void OrderItems() {
    rec_.items.resize(size_t(m_.world_size));
    for (const auto& rt : m_.set->ranks) {
      int32_t g = rt.header.global_rank;
      if (g < 0 || g >= m_.world_size) continue;
      const auto& links = m_.links[size_t(g)];
      auto& items = rec_.items[size_t(g)];
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
        } else if (l.kind == OpLink::Kind::kOneSided) {
          if (op_of_one_sided_[l.index] != kNoOp) item.ops.push_back(op_of_one_sided_[l.index]);
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
    }
  }

  const MergedTrace& m_;
  Schedule& s_;
  std::vector<std::string>* notes_;
  RecordedOps rec_;
  std::vector<uint32_t> op_of_call_, op_of_transfer_, op_of_one_sided_;
};

}  // namespace

RecordedOps CollectRecordedOps(const MergedTrace& m, Schedule* s, std::vector<std::string>* notes) {
  return Collector(m, s, notes).Run();
}

}  // namespace dltrace::models::lowering
