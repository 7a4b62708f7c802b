// SPDX-License-Identifier: GPL-2.0-only
// Merging the rank files of a trace set. Nothing here trusts one file: every
// fact that must agree across ranks is compared, and disagreements become problems.
#include "dltrace/models/merge.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace dltrace::models {

using formats::Collective;

namespace {

constexpr size_t kMaxProblems = 50;

class Problems {
 public:
  explicit Problems(std::vector<std::string>* out) : out_(out) {}
  void Add(const std::string& p) {
    if (out_->size() < kMaxProblems) out_->push_back(p);
    else ++dropped_;
  }
  void Finish() {
    if (dropped_) out_->push_back("... and " + std::to_string(dropped_) + " more problems");
  }

 private:
  std::vector<std::string>* out_;
  size_t dropped_ = 0;
};

std::string CommLabel(const WorldCommunicator& c) {
  return "communicator " + (c.name.empty() ? std::string("?") : c.name) + " (" +
         formats::ApiName(c.api) + ", " + std::to_string(c.members.size()) + " ranks)";
}

bool Rooted(Collective c) {
  return c == Collective::kBroadcast || c == Collective::kReduce || c == Collective::kGather ||
         c == Collective::kScatter;
}

bool SizedAlike(formats::OpKind kind) {
  // Vector variants legitimately differ in size per rank.
  using formats::OpKind;
  return kind != OpKind::MpiGatherv && kind != OpKind::MpiScatterv &&
         kind != OpKind::MpiAllgatherv && kind != OpKind::MpiAlltoallv &&
         kind != OpKind::MpiAlltoallw && kind != OpKind::MpiReduceScatter &&
         kind != OpKind::MpiIgatherv && kind != OpKind::MpiIscatterv &&
         kind != OpKind::MpiIallgatherv && kind != OpKind::MpiIalltoallv &&
         kind != OpKind::MpiIalltoallw &&
         formats::CollectiveOf(kind) != formats::Collective::kNeighborExchange;
}

void MergeCommunicators(MergedTrace& m, Problems& problems) {
  std::map<std::string, uint32_t> by_key;
  for (const auto& rt : m.set->ranks) {
    const int32_t g = rt.header.global_rank;
    if (g < 0 || g >= m.world_size) continue;
    std::map<std::string, int> seen;  // MPI communicators with equal members: k-th of them
    for (const auto& c : rt.communicators) {
      std::vector<int32_t> members = c.members;
      if (members.empty() && c.size > 0 && c.rank >= 0 && c.rank < c.size) {
        members.assign(size_t(c.size), -1);
        members[size_t(c.rank)] = g;
      }
      std::string key;
      if (c.api == formats::Api::Nccl && c.nccl_unique_id_hash != 0) {
        key = "nccl:" + std::to_string(c.nccl_unique_id_hash);
      } else {
        std::string m_key = std::string(formats::ApiName(c.api)) + ":" + std::to_string(c.size) + ":";
        if (!c.members.empty())
          for (int32_t x : c.members) m_key += std::to_string(x) + ",";
        else
          m_key += c.name;
        key = m_key + "#" + std::to_string(seen[m_key]++);
      }
      auto [it, fresh] = by_key.emplace(key, uint32_t(m.comms.size()));
      if (fresh) {
        WorldCommunicator w;
        w.api = c.api;
        w.name = c.name;
        w.nccl_unique_id_hash = c.nccl_unique_id_hash;
        w.members = members;
        m.comms.push_back(std::move(w));
      } else {
        WorldCommunicator& w = m.comms[it->second];
        if (w.members.size() != members.size()) {
          problems.Add(CommLabel(w) + ": rank " + std::to_string(g) + " says it has " +
                       std::to_string(members.size()) + " ranks");
        } else {
          for (size_t k = 0; k < members.size(); ++k) {
            if (members[k] < 0) continue;
            if (w.members[k] < 0) w.members[k] = members[k];
            else if (w.members[k] != members[k])
              problems.Add(CommLabel(w) + ": communicator rank " + std::to_string(k) +
                           " is world rank " + std::to_string(w.members[k]) + " in one file, " +
                           std::to_string(members[k]) + " in rank " + std::to_string(g) + "'s");
          }
        }
      }
      m.comm_index[size_t(g)][c.id] = it->second;
    }
  }
  for (uint32_t i = 0; i < m.comms.size(); ++i) {
    const WorldCommunicator& w = m.comms[i];
    for (size_t k = 0; k < w.members.size(); ++k) {
      int32_t g = w.members[k];
      if (g < 0) {
        problems.Add(CommLabel(w) + ": no rank file records communicator rank " +
                     std::to_string(k));
      } else if (g >= m.world_size) {
        problems.Add(CommLabel(w) + ": member " + std::to_string(g) + " is outside the world of " +
                     std::to_string(m.world_size));
      } else if (!m.rank(g)) {
        problems.Add(CommLabel(w) + ": member rank " + std::to_string(g) + " has no rank file");
      } else {
        bool found = false;
        for (auto& [id, idx] : m.comm_index[size_t(g)]) found = found || idx == i;
        if (!found)
          problems.Add(CommLabel(w) + ": rank " + std::to_string(g) +
                       " is a member but its file does not record the communicator");
      }
    }
  }
}

int32_t CommRankOf(const WorldCommunicator& c, int32_t world) {
  for (size_t k = 0; k < c.members.size(); ++k)
    if (c.members[k] == world) return int32_t(k);
  return -1;
}

void MergeCollectives(MergedTrace& m, Problems& problems) {
  std::vector<std::vector<uint32_t>> by_ordinal(m.comms.size());
  for (const auto& rt : m.set->ranks) {
    const int32_t g = rt.header.global_rank;
    if (g < 0 || g >= m.world_size) continue;
    std::vector<uint64_t> ordinal(m.comms.size(), 0);
    for (uint32_t i = 0; i < rt.ops.size(); ++i) {
      const formats::OpEvent& op = rt.ops[i];
      if (!formats::IsCollective(op.kind)) continue;
      auto ci = m.comm_index[size_t(g)].find(op.comm);
      if (ci == m.comm_index[size_t(g)].end()) {
        problems.Add("rank " + std::to_string(g) + " op " + std::to_string(i) + " (" +
                     formats::OpKindName(op.kind) + ") names communicator " +
                     std::to_string(op.comm) + ", which its file does not describe");
        continue;
      }
      const uint32_t c = ci->second;
      const WorldCommunicator& comm = m.comms[c];
      const uint64_t k = ordinal[c]++;
      auto& list = by_ordinal[c];
      if (list.size() <= k) {
        list.push_back(uint32_t(m.calls.size()));
        CollectiveCall call;
        call.collective = formats::CollectiveOf(op.kind);
        call.kind = op.kind;
        call.comm = c;
        call.ordinal = k;
        call.bytes = op.bytes;
        call.root = Rooted(call.collective) ? std::max(op.peer, 0) : 0;
        call.parts.assign(comm.members.size(), -1);
        m.calls.push_back(std::move(call));
      }
      CollectiveCall& call = m.calls[list[k]];
      const std::string where = CommLabel(comm) + " collective #" + std::to_string(k) + ": rank " +
                                std::to_string(g);
      if (formats::CollectiveOf(op.kind) != call.collective) {
        problems.Add(where + " called " + formats::OpKindName(op.kind) + ", others " +
                     formats::OpKindName(call.kind));
        call.consistent = false;
        continue;
      }
      if (SizedAlike(op.kind) && op.bytes != call.bytes) {
        problems.Add(where + " moved " + std::to_string(op.bytes) + " bytes, others " +
                     std::to_string(call.bytes));
        call.bytes = std::max(call.bytes, op.bytes);
      }
      if (Rooted(call.collective) && op.peer != call.root)
        problems.Add(where + " has root " + std::to_string(op.peer) + ", others " +
                     std::to_string(call.root));
      int32_t cr = CommRankOf(comm, g);
      if (cr < 0) {
        problems.Add(where + " is not a member");
        continue;
      }
      call.parts[size_t(cr)] = i;
      m.links[size_t(g)][i] = {OpLink::Kind::kCall, list[k], -1};
    }
  }
  for (CollectiveCall& call : m.calls) {
    std::string missing;
    for (size_t k = 0; k < call.parts.size(); ++k)
      if (call.parts[k] < 0) {
        int32_t g = m.comms[call.comm].members[k];
        missing += (missing.empty() ? "" : ",") +
                   (g >= 0 ? std::to_string(g) : "comm rank " + std::to_string(k));
      }
    if (!missing.empty()) {
      call.consistent = false;
      problems.Add(CommLabel(m.comms[call.comm]) + " collective #" + std::to_string(call.ordinal) +
                   " (" + formats::OpKindName(call.kind) + ") not recorded on rank(s) " + missing);
    }
  }
}

void MergePointToPoint(MergedTrace& m, Problems& problems) {
  struct PendingSend {
    int32_t src;
    uint32_t op;
    int32_t tag;
    int64_t enter_ns;
    bool matched;
  };
  // (comm, src, dst) -> sends in the order the sender made them (MPI's non-overtaking rule).
  std::map<std::tuple<uint32_t, int32_t, int32_t>, std::vector<PendingSend>> sends;
  // A send-receive records its send peer in `peer` and both directions in
  // the per-peer byte arrays; its receive side comes from those.
  auto recv_peer = [](const formats::OpEvent& op) -> int32_t {
    if (formats::CollectiveOf(op.kind) != Collective::kSendRecv) return op.peer;
    for (size_t i = 0; i < op.peer_recv_bytes.size(); ++i)
      if (op.peer_recv_bytes[i] > 0) return int32_t(i);
    return op.peer;
  };
  auto peer_world = [&](int32_t g, const formats::OpEvent& op, uint32_t* comm,
                        bool receiving = false) -> int32_t {
    auto ci = m.comm_index[size_t(g)].find(op.comm);
    if (ci == m.comm_index[size_t(g)].end()) return -2;
    *comm = ci->second;
    const auto& members = m.comms[ci->second].members;
    const int32_t peer = receiving ? recv_peer(op) : op.peer;
    if (peer < 0) return -1;  // any source
    return peer < int32_t(members.size()) ? members[size_t(peer)] : -2;
  };
  // Calls FN(g, i, op, c) for every op I of every rank G in the world whose collective C is A or B.
  auto each_op = [&](Collective a, Collective b, auto&& fn) {
    for (const auto& rt : m.set->ranks) {
      const int32_t g = rt.header.global_rank;
      if (g < 0 || g >= m.world_size) continue;
      for (uint32_t i = 0; i < rt.ops.size(); ++i) {
        const formats::OpEvent& op = rt.ops[i];
        const Collective c = formats::CollectiveOf(op.kind);
        if (c == a || c == b) fn(g, i, op, c);
      }
    }
  };
  each_op(Collective::kSend, Collective::kSendRecv,
          [&](int32_t g, uint32_t i, const formats::OpEvent& op, Collective) {
    uint32_t comm = 0;
    int32_t dst = peer_world(g, op, &comm);
    if (dst < 0) {
      problems.Add("rank " + std::to_string(g) + " op " + std::to_string(i) + " (" +
                   formats::OpKindName(op.kind) + "): no such peer " + std::to_string(op.peer));
      return;
    }
    sends[{comm, g, dst}].push_back({g, i, op.tag, op.enter_ns, false});
  });
  size_t unmatched_recvs = 0;
  each_op(Collective::kRecv, Collective::kSendRecv,
          [&](int32_t g, uint32_t i, const formats::OpEvent& op, Collective c) {
    uint32_t comm = 0;
    int32_t src = peer_world(g, op, &comm, /*receiving=*/true);
    if (src == -2) return;
    // The recorded tag of a send-receive is its send tag; match its receive
    // side by order from the source alone.
    const int32_t want_tag = c == Collective::kSendRecv ? -1 : op.tag;
    PendingSend* best = nullptr;
    auto consider = [&](std::vector<PendingSend>& q) {
      for (PendingSend& s : q) {
        if (s.matched) continue;
        if (want_tag >= 0 && s.tag != want_tag) continue;
        if (!best || s.enter_ns < best->enter_ns) best = &s;
        break;  // the earliest matching send of this sender
      }
    };
    if (src >= 0) {
      auto it = sends.find({comm, src, g});
      if (it != sends.end()) consider(it->second);
    } else {
      for (auto it = sends.lower_bound({comm, INT32_MIN, INT32_MIN});
           it != sends.end() && std::get<0>(it->first) == comm; ++it)
        if (std::get<2>(it->first) == g) consider(it->second);
    }
    if (!best) {
      ++unmatched_recvs;
      if (unmatched_recvs <= 5)
        problems.Add("rank " + std::to_string(g) + " op " + std::to_string(i) + " (" +
                     formats::OpKindName(op.kind) + " from " + std::to_string(src) +
                     "): no matching send");
      return;
    }
    best->matched = true;
    Transfer t;
    t.src = best->src;
    t.dst = g;
    t.send_op = best->op;
    t.recv_op = i;
    t.bytes = m.rank(best->src)->ops[best->op].bytes;
    t.comm = comm;
    const uint32_t ti = uint32_t(m.transfers.size());
    m.transfers.push_back(t);
    auto link_op = [&](int32_t rank, uint32_t index) {
      OpLink& l = m.links[size_t(rank)][index];
      if (l.kind == OpLink::Kind::kTransfer) l.second = ti;  // a send-receive's other half
      else l = {OpLink::Kind::kTransfer, ti, -1};
    };
    link_op(t.src, t.send_op);
    link_op(t.dst, t.recv_op);
  });
  if (unmatched_recvs > 5)
    problems.Add(std::to_string(unmatched_recvs) + " receives in all have no matching send");
  size_t unmatched_sends = 0;
  for (auto& [key, q] : sends)
    for (const PendingSend& s : q)
      if (!s.matched && ++unmatched_sends <= 5)
        problems.Add("rank " + std::to_string(s.src) + " op " + std::to_string(s.op) +
                     " (send to " + std::to_string(std::get<2>(key)) + "): no matching receive");
  if (unmatched_sends > 5)
    problems.Add(std::to_string(unmatched_sends) + " sends in all have no matching receive");
}

}  // namespace

int64_t RankOriginNs(const formats::RankTrace& rank) {
  int64_t first = INT64_MAX;
  for (const auto& op : rank.ops)
    if (formats::CollectiveOf(op.kind) != Collective::kNone) first = std::min(first, op.enter_ns);
  const int64_t start = int64_t(rank.header.start_monotonic_ns);
  if (start > 0 && start <= first) return start;
  return first == INT64_MAX ? 0 : first;
}

// One-sided ops name their target by its rank in the window's group.
void MergeOneSided(MergedTrace& m, Problems& problems) {
  for (const auto& rt : m.set->ranks) {
    const int32_t g = rt.header.global_rank;
    if (g < 0 || g >= m.world_size) continue;
    for (uint32_t i = 0; i < rt.ops.size(); ++i) {
      const formats::OpEvent& op = rt.ops[i];
      if (!formats::IsOneSided(op.kind)) continue;
      auto ci = m.comm_index[size_t(g)].find(op.comm);
      const std::string where = "rank " + std::to_string(g) + " op " + std::to_string(i) + " (" +
                                formats::OpKindName(op.kind) + ")";
      if (ci == m.comm_index[size_t(g)].end()) {
        problems.Add(where + " names window " + std::to_string(op.comm) +
                     ", which its file does not describe");
        continue;
      }
      const auto& members = m.comms[ci->second].members;
      if (op.peer < 0 || size_t(op.peer) >= members.size() || members[size_t(op.peer)] < 0) {
        problems.Add(where + " targets rank " + std::to_string(op.peer) + " of a window of " +
                     std::to_string(members.size()));
        continue;
      }
      m.one_sided.push_back({g, members[size_t(op.peer)], i, op.bytes, ci->second});
      m.links[size_t(g)][i] = {OpLink::Kind::kOneSided, uint32_t(m.one_sided.size() - 1), -1};
    }
  }
}

MergedTrace Merge(const formats::TraceSet& set) {
  MergedTrace m;
  m.set = &set;
  m.world_size = set.world_size;
  Problems problems(&m.problems);
  for (const auto& rt : set.ranks) m.world_size = std::max(m.world_size, rt.header.global_rank + 1);
  for (const auto& rt : set.ranks)
    if (rt.header.global_rank < 0) problems.Add(rt.path + ": no global rank in its header; left out");
  m.host_of_rank.assign(size_t(m.world_size), -1);
  m.comm_index.resize(size_t(m.world_size));
  m.links.resize(size_t(m.world_size));
  for (int32_t r = 0; r < m.world_size; ++r)
    if (!set.rank(r)) problems.Add("rank " + std::to_string(r) + " has no trace file");
  for (const auto& rt : set.ranks) {
    const int32_t g = rt.header.global_rank;
    if (g < 0 || g >= m.world_size) continue;
    m.links[size_t(g)].resize(rt.ops.size());
    size_t h = 0;
    while (h < m.hosts.size() && m.hosts[h].name != rt.header.host) ++h;
    if (h == m.hosts.size()) m.hosts.push_back({rt.header.host, {}});
    m.hosts[h].ranks.push_back(g);
    m.host_of_rank[size_t(g)] = int32_t(h);
  }
  MergeCommunicators(m, problems);
  MergeCollectives(m, problems);
  MergePointToPoint(m, problems);
  MergeOneSided(m, problems);
  problems.Finish();
  return m;
}

}  // namespace dltrace::models
