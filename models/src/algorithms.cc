// SPDX-License-Identifier: GPL-2.0-only
// The algorithm table and the step builder. Each Lower* function describes
// one algorithm for one piece of one collective; LowerCollective adds channels and pipelining.
#include "dltrace/models/algorithms.h"

#include <algorithm>
#include <utility>

namespace dltrace::models {

using formats::Collective;

// ---------------------------------------------------------------- builder

StepBuilder::StepBuilder(Schedule* schedule) : schedule_(schedule) {
  size_t n = schedule->ranks.size();
  entry_.resize(n);
  exits_.resize(n);
  op_begin_.resize(n, 0);
  touched_mark_.resize(n, 0);
}

void StepBuilder::BeginOp(uint32_t op) {
  op_ = op;
  transfers_ = 0;
  channel_ = 0;
  touched_.clear();
}

void StepBuilder::SetEntry(int32_t endpoint, const std::vector<uint32_t>& deps) {
  entry_[size_t(endpoint)] = deps;
}

uint32_t StepBuilder::Add(int32_t endpoint, const Step& step, DepList deps) {
  RankSchedule& r = schedule_->ranks[size_t(endpoint)];
  if (touched_mark_[size_t(endpoint)] != op_ + 1) {
    touched_mark_[size_t(endpoint)] = op_ + 1;
    op_begin_[size_t(endpoint)] = uint32_t(r.steps.size());
    touched_.push_back(endpoint);
  }
  Step s = step;
  if (s.type == StepType::kCompute) s.tag = MakeTag(op_, 0);  // a transfer's tag already names op_
  bool any = false;
  for (const uint32_t* d = deps.begin(); d != deps.end(); ++d)
    if (*d != kNoStep) {
      r.deps.push_back(*d);
      any = true;
    }
  if (!any)
    for (uint32_t d : entry_[size_t(endpoint)]) r.deps.push_back(d);
  s.deps_end = uint32_t(r.deps.size());
  r.steps.push_back(s);
  return uint32_t(r.steps.size() - 1);
}

StepBuilder::Pair StepBuilder::Transfer(int32_t from, int32_t to, uint64_t bytes,
                                        uint16_t channel, DepList send_deps, DepList recv_deps) {
  const auto& eps = schedule_->endpoints;
  int32_t hf = eps[size_t(from)].host, ht = eps[size_t(to)].host;
  Step s;
  s.local = hf >= 0 && hf == ht;
  s.channel = channel;
  s.bytes = bytes;
  s.tag = MakeTag(op_, transfers_++);
  s.type = StepType::kSend;
  s.peer = to;
  Pair p;
  p.send = Add(from, s, send_deps);
  s.type = StepType::kRecv;
  s.peer = from;
  p.recv = Add(to, s, recv_deps);
  return p;
}

uint32_t StepBuilder::Compute(int32_t endpoint, uint64_t duration_ns, DepList deps) {
  Step s;
  s.type = StepType::kCompute;
  s.set_duration_ns(duration_ns);
  return Add(endpoint, s, deps);
}

void StepBuilder::Reduce(int32_t endpoint, uint32_t recv) {
  if (host_reduces_) schedule_->ranks[size_t(endpoint)].steps[recv].reduce = true;
}

void StepBuilder::EndOp() {
  std::vector<char> waited;
  for (int32_t e : touched_) {
    const RankSchedule& r = schedule_->ranks[size_t(e)];
    uint32_t begin = op_begin_[size_t(e)], end = uint32_t(r.steps.size());
    waited.assign(end - begin, 0);
    for (uint32_t i = begin; i < end; ++i)
      for (const uint32_t* d = r.deps_begin(r.steps[i]); d != r.deps_end(r.steps[i]); ++d)
        if (*d >= begin) waited[*d - begin] = 1;
    auto& x = exits_[size_t(e)];
    x.clear();
    for (uint32_t i = begin; i < end; ++i)
      if (!waited[i - begin]) x.push_back(i);
  }
}

// ---------------------------------------------------------------- helpers

namespace {

int32_t Size(const CollectiveSpec& s) { return int32_t(s.members.size()); }
int32_t Mod(int64_t a, int32_t n) { return int32_t(((a % n) + n) % n); }

// Start offset of block B when BYTES are cut into N blocks with Share().
uint64_t BlockOffset(uint64_t bytes, uint64_t n, uint64_t b) {
  return b * (bytes / n) + std::min(b, bytes % n);
}

// A protocol's cost per step beyond the link's (NCCL's per-hop latency), as
// a compute step before each send; zero adds nothing.
struct StepLatency {
  uint64_t intra_ns = 0, inter_ns = 0;  // hop inside a host / across hosts
};

// What a send FROM -> TO waits for: DEPS, then LAT's step latency for that hop.
std::vector<uint32_t> WithStepLatency(StepBuilder& out, int32_t from, int32_t to,
                                      std::vector<uint32_t> deps, const StepLatency& lat) {
  const auto& eps = out.schedule().endpoints;
  const bool inter = eps[size_t(from)].host != eps[size_t(to)].host;
  const uint64_t ns = inter ? lat.inter_ns : lat.intra_ns;
  if (ns > 0) deps = {out.Compute(from, ns, deps)};
  return deps;
}

// The send FROM -> TO that waits for AFTER (kNoStep: the op's entry), with LAT's step latency first.
StepBuilder::Pair Hop(StepBuilder& out, int32_t from, int32_t to, uint64_t bytes, uint32_t after,
                      const StepLatency& lat) {
  std::vector<uint32_t> deps;
  if (after != kNoStep) deps.push_back(after);
  return out.Transfer(from, to, bytes, out.channel(), WithStepLatency(out, from, to, deps, lat), {});
}

// N-1 steps around the ring: at step s rank i sends block (i + first - s)
// to its right neighbour once its previous receive is in. With REDUCE (a
// reduce-scatter; null for an all-gather) the receiver adds the block into
// its own, taking REDUCE's host time, before sending it on. Returns each
// rank's last receive.
std::vector<uint32_t> RingPass(const CollectiveSpec& spec, uint64_t bytes, int32_t first,
                               const LowerOptions* reduce, StepBuilder& out,
                               std::vector<uint32_t> last_recv, const StepLatency& lat) {
  const int32_t n = Size(spec);
  std::vector<uint32_t> recv(size_t(n), kNoStep);
  for (int32_t s = 0; s + 1 < n; ++s) {
    for (int32_t i = 0; i < n; ++i) {
      const int32_t right = (i + 1) % n;
      const int32_t to = spec.members[size_t(right)];
      const uint64_t block = Share(bytes, uint64_t(n), uint64_t(Mod(i + first - s, n)));
      auto p = Hop(out, spec.members[size_t(i)], to, block, last_recv[size_t(i)], lat);
      recv[size_t(right)] = p.recv;
      if (!reduce) continue;
      out.Reduce(to, p.recv);
      const double host_ns =
          (reduce->reduce_gbps > 0 ? double(block) / reduce->reduce_gbps : 0) + reduce->per_message_ns;
      if (host_ns >= 1) recv[size_t(right)] = out.Compute(to, uint64_t(host_ns), {p.recv});
    }
    last_recv = recv;
  }
  return last_recv;
}

// Reduce-scatter around the ring: rank i sends block i-s at step s and
// reduces block i-s-1 into what it holds. Returns each rank's last receive.
std::vector<uint32_t> RingReduceScatter(const CollectiveSpec& spec, uint64_t bytes, const LowerOptions& options,
                                        StepBuilder& out, std::vector<uint32_t> last_recv,
                                        const StepLatency& lat = {}) {
  return RingPass(spec, bytes, 0, &options, out, std::move(last_recv), lat);
}

// All-gather around the ring, starting with block (i + first) on rank i.
std::vector<uint32_t> RingAllGather(const CollectiveSpec& spec, uint64_t bytes, int32_t first,
                                    StepBuilder& out, std::vector<uint32_t> last_recv,
                                    const StepLatency& lat = {}) {
  return RingPass(spec, bytes, first, nullptr, out, std::move(last_recv), lat);
}

// A chain through ORDER (communicator ranks): each passes BYTES on after
// receiving them. Broadcast, reduce (towards the root) and scan use it.
void Chain(const CollectiveSpec& spec, const std::vector<int32_t>& order, uint64_t bytes,
           StepBuilder& out, const StepLatency& lat = {}) {
  const bool reduce = spec.collective != Collective::kBroadcast;  // reduce, scan: each adds its own
  uint32_t prev_recv = kNoStep;
  for (size_t k = 0; k + 1 < order.size(); ++k) {
    const int32_t to = spec.members[size_t(order[k + 1])];
    auto p = Hop(out, spec.members[size_t(order[k])], to, bytes, prev_recv, lat);
    if (reduce) out.Reduce(to, p.recv);
    prev_recv = p.recv;
  }
}

void PairwiseAllToAll(const CollectiveSpec& spec, uint64_t bytes, StepBuilder& out) {
  const int32_t n = Size(spec);
  std::vector<uint32_t> last_send(size_t(n), kNoStep), last_recv(size_t(n), kNoStep);
  std::vector<uint32_t> send(static_cast<size_t>(n)), recv(static_cast<size_t>(n));
  for (int32_t k = 1; k < n; ++k) {
    for (int32_t i = 0; i < n; ++i) {
      int32_t to = (i + k) % n;
      auto p = out.Transfer(spec.members[size_t(i)], spec.members[size_t(to)],
                            Share(bytes, uint64_t(n), uint64_t(to)), out.channel(),
                            {last_send[size_t(i)], last_recv[size_t(i)]}, {});
      send[size_t(i)] = p.send;
      recv[size_t(to)] = p.recv;
    }
    last_send = send;
    last_recv = recv;
  }
}

// Rank i sends block j to rank j (reduce-scatter), or its own block to all (all-gather).
void Direct(const CollectiveSpec& spec, uint64_t bytes, bool own_block, StepBuilder& out,
            const std::vector<uint32_t>& after) {
  const int32_t n = Size(spec);
  for (int32_t i = 0; i < n; ++i)
    for (int32_t j = 0; j < n; ++j) {
      if (i == j) continue;
      auto p = out.Transfer(spec.members[size_t(i)], spec.members[size_t(j)],
                            Share(bytes, uint64_t(n), uint64_t(own_block ? i : j)), out.channel(),
                            {after.empty() ? kNoStep : after[size_t(i)]}, {});
      if (!own_block) out.Reduce(spec.members[size_t(j)], p.recv);  // reduce-scatter
    }
}

// Dissemination barrier: ceil(log2 n) rounds of empty messages.
void Dissemination(const CollectiveSpec& spec, StepBuilder& out) {
  const int32_t n = Size(spec);
  std::vector<uint32_t> last(size_t(n), kNoStep), cur(static_cast<size_t>(n));
  for (int32_t d = 1; d < n; d <<= 1) {
    for (int32_t i = 0; i < n; ++i) {
      int32_t to = (i + d) % n;
      auto p = out.Transfer(spec.members[size_t(i)], spec.members[size_t(to)], 0, out.channel(),
                            {last[size_t(i)]}, {});
      cur[size_t(to)] = p.recv;
    }
    last = cur;
  }
}

// ---------------------------------------------------------------- algorithms

// Ring (NCCL's default for large messages), with chains and pairwise
// exchange for what a ring does not define. Handles every collective.
bool LowerRing(const CollectiveSpec& spec, uint64_t bytes, const LowerOptions& options,
               StepBuilder& out) {
  const int32_t n = Size(spec);
  if (n < 2) return true;
  std::vector<uint32_t> none(size_t(n), kNoStep);
  std::vector<int32_t> order;
  switch (spec.collective) {
    case Collective::kAllReduce: {
      auto after = RingReduceScatter(spec, bytes, options, out, none);
      RingAllGather(spec, bytes, 1, out, after);
      return true;
    }
    case Collective::kReduceScatter:
      RingReduceScatter(spec, bytes, options, out, none);
      return true;
    case Collective::kAllGather:
      RingAllGather(spec, bytes, 0, out, none);
      return true;
    case Collective::kBroadcast:
      for (int32_t k = 0; k < n; ++k) order.push_back((spec.root + k) % n);
      Chain(spec, order, bytes, out);
      return true;
    case Collective::kReduce:
      for (int32_t k = 1; k <= n; ++k) order.push_back((spec.root + k) % n);
      Chain(spec, order, bytes, out);
      return true;
    case Collective::kScan:
      for (int32_t k = 0; k < n; ++k) order.push_back(k);
      Chain(spec, order, bytes, out);
      return true;
    case Collective::kGather:
    case Collective::kScatter:
      for (int32_t i = 0; i < n; ++i) {
        if (i == spec.root) continue;
        bool gather = spec.collective == Collective::kGather;
        int32_t a = spec.members[size_t(gather ? i : spec.root)];
        int32_t b = spec.members[size_t(gather ? spec.root : i)];
        out.Transfer(a, b, Share(bytes, uint64_t(n), uint64_t(i)), out.channel(), {}, {});
      }
      return true;
    case Collective::kAllToAll:
      PairwiseAllToAll(spec, bytes, out);
      return true;
    case Collective::kBarrier:
      Dissemination(spec, out);
      return true;
    default:
      return false;
  }
}

// Up a tree (children before parents) and/or down it, with the tree given as
// a parent per communicator rank.
void TreeUpDown(const CollectiveSpec& spec, const std::vector<int32_t>& parent, uint64_t bytes,
                bool up, bool down, StepBuilder& out, const StepLatency& lat = {}) {
  const int32_t n = Size(spec);
  std::vector<std::vector<int32_t>> children(static_cast<size_t>(n));
  int32_t root = -1;
  for (int32_t i = 0; i < n; ++i) {
    if (parent[size_t(i)] < 0) root = i;
    else children[size_t(parent[size_t(i)])].push_back(i);
  }
  std::vector<int32_t> bfs{root};
  for (size_t k = 0; k < bfs.size(); ++k)
    for (int32_t c : children[size_t(bfs[k])]) bfs.push_back(c);
  // Receives each node waits on before it may send on.
  std::vector<std::vector<uint32_t>> from_children(static_cast<size_t>(n));
  if (up) {
    for (size_t k = bfs.size(); k-- > 1;) {
      int32_t v = bfs[k], p = parent[size_t(v)];
      const int32_t from = spec.members[size_t(v)], to = spec.members[size_t(p)];
      auto t = out.Transfer(from, to, bytes, out.channel(),
                            WithStepLatency(out, from, to, from_children[size_t(v)], lat), {});
      out.Reduce(to, t.recv);  // up the tree is a reduction
      from_children[size_t(p)].push_back(t.recv);
    }
  }
  if (down) {
    std::vector<uint32_t> from_parent(size_t(n), kNoStep);
    for (int32_t v : bfs) {
      for (int32_t c : children[size_t(v)]) {
        std::vector<uint32_t> deps = from_children[size_t(v)];
        if (v != root) deps = {from_parent[size_t(v)]};
        const int32_t from = spec.members[size_t(v)], to = spec.members[size_t(c)];
        auto t = out.Transfer(from, to, bytes, out.channel(),
                              WithStepLatency(out, from, to, deps, lat), {});
        from_parent[size_t(c)] = t.recv;
      }
    }
  }
}

// Double binary tree for all-reduce (each tree reduces and broadcasts half
// the data, as NCCL does); one binary tree for broadcast and reduce.
bool LowerTree(const CollectiveSpec& spec, uint64_t bytes, const LowerOptions&,
               StepBuilder& out) {
  const int32_t n = Size(spec);
  if (n < 2) return true;
  std::vector<int32_t> parent(static_cast<size_t>(n));
  switch (spec.collective) {
    case Collective::kAllReduce:
      for (int tree = 0; tree < 2; ++tree) {
        for (int32_t i = 0; i < n; ++i) parent[size_t(i)] = TreeParent(n, i, tree);
        TreeUpDown(spec, parent, Share(bytes, 2, uint64_t(tree)), true, true, out);
      }
      return true;
    case Collective::kBroadcast:
    case Collective::kReduce:
      // Tree 0 rooted at communicator rank 0, relabelled so the root is spec.root.
      for (int32_t i = 0; i < n; ++i) {
        int32_t p = TreeParent(n, Mod(i - spec.root, n), 0);
        parent[size_t(i)] = p < 0 ? -1 : (p + spec.root) % n;
      }
      TreeUpDown(spec, parent, bytes, spec.collective == Collective::kReduce,
                 spec.collective == Collective::kBroadcast, out);
      return true;
    default:
      return false;
  }
}

// An algorithm that defines all-reduce alone: false for other collectives
// (the table's fallback lowers them); fewer than two ranks move nothing.
template <void (*Lower)(const CollectiveSpec&, int32_t n, uint64_t, const LowerOptions&, StepBuilder&)>
bool AllReduceOnly(const CollectiveSpec& spec, uint64_t bytes, const LowerOptions& options, StepBuilder& out) {
  if (spec.collective != Collective::kAllReduce) return false;
  const int32_t n = Size(spec);
  if (n >= 2) Lower(spec, n, bytes, options, out);
  return true;
}

// Rabenseifner: reduce-scatter by recursive halving, all-gather by recursive
// doubling over the largest power of two p <= n. With n = p + r, the first
// 2r ranks pair up first: even ones hand their whole vector to the odd
// neighbour, which takes part for both and hands the result back at the end.
void HalvingDoubling(const CollectiveSpec& spec, int32_t n, uint64_t bytes, const LowerOptions&,
                     StepBuilder& out) {
  int32_t p = 1;
  while (p * 2 <= n) p *= 2;
  const int32_t rem = n - p;
  auto actual = [&](int32_t nr) { return nr < rem ? 2 * nr + 1 : nr + rem; };
  auto ep = [&](int32_t rank) { return spec.members[size_t(rank)]; };
  std::vector<uint32_t> last(size_t(p), kNoStep);  // per new rank: last receive
  for (int32_t i = 0; i < rem; ++i) {
    auto t = out.Transfer(ep(2 * i), ep(2 * i + 1), bytes, out.channel(), {}, {});
    out.Reduce(ep(2 * i + 1), t.recv);  // the odd neighbour adds the even one's vector
    last[size_t(i)] = t.recv;
  }
  // Block ranges [lo, hi) of p blocks each new rank holds, before each halving step.
  std::vector<std::pair<int32_t, int32_t>> range(size_t(p), {0, p});
  std::vector<std::vector<std::pair<int32_t, int32_t>>> history;
  auto range_bytes = [&](int32_t lo, int32_t hi) {
    return BlockOffset(bytes, uint64_t(p), uint64_t(hi)) -
           BlockOffset(bytes, uint64_t(p), uint64_t(lo));
  };
  std::vector<uint32_t> cur(static_cast<size_t>(p));
  for (int32_t mask = p / 2; mask >= 1; mask /= 2) {
    history.push_back(range);
    std::vector<std::pair<int32_t, int32_t>> next = range;
    for (int32_t nr = 0; nr < p; ++nr) {
      auto [lo, hi] = range[size_t(nr)];
      int32_t mid = (lo + hi) / 2;
      bool lower = (nr & mask) == 0;
      int32_t partner = nr ^ mask;
      auto sent = lower ? std::make_pair(mid, hi) : std::make_pair(lo, mid);
      next[size_t(nr)] = lower ? std::make_pair(lo, mid) : std::make_pair(mid, hi);
      auto t = out.Transfer(ep(actual(nr)), ep(actual(partner)), range_bytes(sent.first, sent.second),
                            out.channel(), {last[size_t(nr)]}, {});
      out.Reduce(ep(actual(partner)), t.recv);
      cur[size_t(partner)] = t.recv;
    }
    range = next;
    last = cur;
  }
  for (int32_t mask = 1; mask < p; mask *= 2) {
    for (int32_t nr = 0; nr < p; ++nr) {
      auto [lo, hi] = range[size_t(nr)];
      auto t = out.Transfer(ep(actual(nr)), ep(actual(nr ^ mask)), range_bytes(lo, hi),
                            out.channel(), {last[size_t(nr)]}, {});
      cur[size_t(nr ^ mask)] = t.recv;
    }
    range = history.back();
    history.pop_back();
    last = cur;
  }
  for (int32_t i = 0; i < rem; ++i)
    out.Transfer(ep(2 * i + 1), ep(2 * i), bytes, out.channel(), {last[size_t(i)]}, {});
}

// Parameter server: every worker pushes shard j of its gradient to server j
// and pulls the averaged shard back. A server on a worker keeps that worker's shard local.
bool LowerParameterServer(const CollectiveSpec& spec, uint64_t bytes, const LowerOptions& options,
                          StepBuilder& out) {
  if (spec.collective != Collective::kAllReduce) return false;
  const int32_t n = Size(spec);
  std::vector<int32_t> servers;
  const auto& eps = out.schedule().endpoints;
  for (size_t e = 0; e < eps.size(); ++e)
    if (eps[e].role == EndpointRole::kServer) servers.push_back(int32_t(e));
  if (servers.empty())
    for (int32_t j = 0; j < std::min(std::max(options.servers, 1), n); ++j)
      servers.push_back(spec.members[size_t(j)]);
  const uint64_t k = servers.size();
  for (uint64_t j = 0; j < k; ++j) {
    const uint64_t shard = Share(bytes, k, j);
    const int32_t server = servers[j];
    std::vector<uint32_t> pushes(size_t(n), kNoStep);
    for (int32_t w = 0; w < n; ++w)
      if (spec.members[size_t(w)] != server) {
        pushes[size_t(w)] = out.Transfer(spec.members[size_t(w)], server, shard, out.channel(), {}, {}).recv;
        out.Reduce(server, pushes[size_t(w)]);  // the server sums the pushes
      }
    for (int32_t w = 0; w < n; ++w) {
      if (spec.members[size_t(w)] == server) continue;
      if (options.async_servers)
        out.Transfer(server, spec.members[size_t(w)], shard, out.channel(), {pushes[size_t(w)]}, {});
      else
        out.Transfer(server, spec.members[size_t(w)], shard, out.channel(), pushes, {});
    }
  }
  return true;
}

// Step-wise ring reduce (the seed study): only the reduce pass around the
// ring; each worker goes on with the partial average it holds.
void Stepwise(const CollectiveSpec& spec, int32_t n, uint64_t bytes, const LowerOptions& options,
              StepBuilder& out) {
  RingReduceScatter(spec, bytes, options, out, std::vector<uint32_t>(size_t(n), kNoStep));
}

// Gossip: each worker sends its whole vector to `gossip_peers` others at
// distances that rotate with the call, and averages what it receives.
void Gossip(const CollectiveSpec& spec, int32_t n, uint64_t bytes, const LowerOptions& options,
            StepBuilder& out) {
  const int32_t fanout = std::min(std::max(options.gossip_peers, 1), n - 1);
  for (int32_t j = 0; j < fanout; ++j) {
    int32_t d = int32_t((spec.seq + uint64_t(j)) % uint64_t(n - 1)) + 1;
    for (int32_t i = 0; i < n; ++i) {
      const int32_t to = spec.members[size_t((i + d) % n)];
      auto p = out.Transfer(spec.members[size_t(i)], to, bytes, out.channel(), {}, {});
      out.Reduce(to, p.recv);  // averaged into its own
    }
  }
}

// Direct exchange: every block goes straight to the rank that needs it.
bool LowerPairwise(const CollectiveSpec& spec, uint64_t bytes, const LowerOptions&,
                   StepBuilder& out) {
  const int32_t n = Size(spec);
  if (n < 2) return spec.collective == Collective::kAllToAll ||
                      spec.collective == Collective::kAllReduce ||
                      spec.collective == Collective::kAllGather ||
                      spec.collective == Collective::kReduceScatter;
  switch (spec.collective) {
    case Collective::kAllToAll:
      PairwiseAllToAll(spec, bytes, out);
      return true;
    case Collective::kReduceScatter:
      Direct(spec, bytes, false, out, {});
      return true;
    case Collective::kAllGather:
      Direct(spec, bytes, true, out, {});
      return true;
    case Collective::kAllReduce: {
      // Reduce-scatter then all-gather, each rank's gather waiting for all it received.
      const auto& ranks = out.schedule().ranks;
      std::vector<uint32_t> before(static_cast<size_t>(n));
      for (int32_t i = 0; i < n; ++i)
        before[size_t(i)] = uint32_t(ranks[size_t(spec.members[size_t(i)])].steps.size());
      Direct(spec, bytes, false, out, {});
      // Last receive each rank got in the first phase (the n-1 receives are
      // independent; waiting for the last one created is waiting in order).
      std::vector<uint32_t> after(size_t(n), kNoStep);
      for (int32_t i = 0; i < n; ++i) {
        const auto& steps = ranks[size_t(spec.members[size_t(i)])].steps;
        for (uint32_t s = before[size_t(i)]; s < steps.size(); ++s)
          if (steps[s].type == StepType::kRecv) after[size_t(i)] = s;
      }
      Direct(spec, bytes, true, out, after);
      return true;
    }
    default:
      return false;
  }
}

// ---------------------------------------------------------------- nccl

// At most this many pipeline pieces per channel are lowered (NCCL moves an
// op in chunk-sized steps; beyond this, pieces grow so that a 1 GiB tree
// all-reduce stays tens of thousands of steps, not millions).
constexpr uint64_t kMaxNcclPiecesPerChannel = 16;

// Members grouped by host, hosts in order of their first member: NCCL's
// nodes, each a chain of its GPUs in communicator-rank order.
std::vector<std::vector<int32_t>> NodesOf(const CollectiveSpec& spec, const StepBuilder& out) {
  std::vector<std::vector<int32_t>> nodes;
  std::vector<int32_t> host_of_node;
  const auto& eps = out.schedule().endpoints;
  for (int32_t i = 0; i < Size(spec); ++i) {
    const int32_t h = eps[size_t(spec.members[size_t(i)])].host;
    size_t k = 0;
    while (k < host_of_node.size() && (host_of_node[k] != h || h < 0)) ++k;
    if (k == host_of_node.size()) {
      host_of_node.push_back(h);
      nodes.emplace_back();
    }
    nodes[k].push_back(i);
  }
  return nodes;
}

// NCCL's tree TREE (0 or 1) as a parent per communicator rank: a double
// binary tree over the nodes (TreeParent), and inside each node a chain
// from its head; tree 1 runs the chain the other way, so another GPU
// talks to the network.
std::vector<int32_t> NcclTreeParents(const std::vector<std::vector<int32_t>>& nodes, int32_t n,
                                     int tree) {
  std::vector<int32_t> parent(size_t(n), -1);
  const int32_t nn = int32_t(nodes.size());
  auto chain = [&](int32_t k) {
    std::vector<int32_t> c = nodes[size_t(k)];
    if (tree == 1) std::reverse(c.begin(), c.end());
    return c;
  };
  for (int32_t k = 0; k < nn; ++k) {
    const auto c = chain(k);
    for (size_t j = 1; j < c.size(); ++j) parent[size_t(c[j])] = c[j - 1];
    const int32_t up = TreeParent(nn, k, tree);
    parent[size_t(c.front())] = up < 0 ? -1 : chain(up).front();
  }
  return parent;
}

// PAT for one GPU per node: all-gather as Bruck's log2 n steps (at distance
// d each rank sends the min(d, n - d) blocks it holds to rank i - d);
// reduce-scatter the same steps in reverse order and direction.
void PatSteps(const CollectiveSpec& spec, uint64_t bytes, bool gather, StepBuilder& out,
              const StepLatency& lat) {
  const int32_t n = Size(spec);
  std::vector<int32_t> distances;
  for (int32_t d = 1; d < n; d <<= 1) distances.push_back(d);
  if (!gather) std::reverse(distances.begin(), distances.end());
  std::vector<uint32_t> last(size_t(n), kNoStep), cur(size_t(n), kNoStep);
  const uint64_t block = bytes / uint64_t(n);
  for (int32_t d : distances) {
    const uint64_t blocks = uint64_t(std::min(d, n - d));
    for (int32_t i = 0; i < n; ++i) {
      const int32_t to = gather ? Mod(i - d, n) : (i + d) % n;
      auto p = Hop(out, spec.members[size_t(i)], spec.members[size_t(to)], blocks * block,
                   last[size_t(i)], lat);
      cur[size_t(to)] = p.recv;
    }
    last = cur;
  }
}

bool IsNcclTuned(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kAllGather ||
         c == Collective::kReduceScatter || c == Collective::kBroadcast ||
         c == Collective::kReduce;
}

// NCCL as it runs a collective: the algorithm and protocol recorded for the
// call, else NCCL's tuning model under the recorded settings; the op's
// payload over that many channels, each cut into pipeline pieces of the
// protocol's chunk, with the protocol's wire bytes, its base latency once
// per op and its per-hop latency before every send. Collectives NCCL runs
// as point-to-point (all-to-all, gather, scatter) lower as the ring entry does.
void LowerNcclOp(const CollectiveSpec& spec, const LowerOptions& options, StepBuilder& out,
                 ScheduleOp* op) {
  const int32_t n = Size(spec);
  if (n < 2 || !IsNcclTuned(spec.collective)) {
    LowerOptions plain = options;
    plain.algorithm = kRingAlgorithm;
    LowerCollective(*FindAlgorithm(kRingAlgorithm), spec, plain, out);
    if (op) op->nccl_reason = n < 2 ? "one rank" : "point-to-point";
    return;
  }
  const NcclSystem& system = options.nccl_system ? *options.nccl_system : DefaultNcclSystem();
  const auto nodes = NodesOf(spec, out);
  NcclCall call{spec.collective, spec.bytes, n, int32_t(nodes.size())};
  NcclChoice choice;
  std::string reason;
  if (spec.recorded_algo != NcclAlgo::kUnknown && spec.recorded_proto != NcclProto::kUnknown) {
    choice = NcclChannelsFor(call, spec.recorded_algo, spec.recorded_proto, options.nccl, system);
    if (spec.recorded_channels > 0) choice.channels = spec.recorded_channels;
    reason = NcclReasonName(NcclReason::kRecorded);
  } else {
    choice = ChooseNccl(call, options.nccl, system);
    reason = NcclReasonName(choice.reason);
  }
  // What is lowered: Ring, Tree (all-reduce) and PAT (all-gather and
  // reduce-scatter, one GPU per node) as NCCL runs them; anything else
  // (NVLS, CollNet, or a recorded pair NCCL would not run) as a ring.
  NcclAlgo lowered = choice.algo;
  const bool tree_ok = lowered == NcclAlgo::kTree && spec.collective == Collective::kAllReduce;
  const bool pat_ok = lowered == NcclAlgo::kPat && (spec.collective == Collective::kAllGather ||
                                                    spec.collective == Collective::kReduceScatter);
  if (!tree_ok && !pat_ok && lowered != NcclAlgo::kRing) {
    reason += std::string(", lowered as Ring");
    lowered = NcclAlgo::kRing;
  }
  if (op) {
    op->nccl_algorithm = NcclAlgoName(choice.algo);
    op->nccl_protocol = NcclProtoName(choice.proto);
    op->nccl_channels = choice.channels;
    op->nccl_reason = reason;
  }
  const NcclProto proto = choice.proto;
  StepLatency lat;
  lat.intra_ns = uint64_t(NcclStepLatencyUs(lowered, proto, false, system) * 1000);
  lat.inter_ns = uint64_t(NcclStepLatencyUs(lowered, proto, true, system) * 1000);
  // Launch and synchronisation, once per op on every member.
  const uint64_t base_ns = uint64_t(NcclBaseLatencyUs(lowered, proto) * 1000);
  if (base_ns > 0)
    for (int32_t m : spec.members) out.SetEntry(m, {out.Compute(m, base_ns, {})});

  const uint64_t channels = uint64_t(std::max(choice.channels, 1));
  // Payload one pipeline piece of a channel carries: a ring moves one chunk
  // per rank per step, a tree or PAT one chunk.
  const uint64_t piece_payload = std::max<uint64_t>(
      1, lowered == NcclAlgo::kRing ? choice.chunk_bytes * uint64_t(n) : choice.chunk_bytes);
  // NCCL reduces on the GPU inside its kernels: no host arithmetic or per-message cost.
  static const LowerOptions kGpuReduces;
  const bool host_reduces = out.host_reduces();
  out.set_host_reduces(false);
  std::vector<int32_t> order;
  for (uint64_t c = 0; c < channels; ++c) {
    out.set_channel(uint16_t(c));
    const uint64_t channel_bytes = Share(spec.bytes, channels, c);
    uint64_t pieces = std::max<uint64_t>(1, (channel_bytes + piece_payload - 1) / piece_payload);
    pieces = std::min(pieces, kMaxNcclPiecesPerChannel);
    for (uint64_t p = 0; p < pieces; ++p) {
      const uint64_t wire = NcclWireBytes(proto, Share(channel_bytes, pieces, p));
      std::vector<uint32_t> none(size_t(n), kNoStep);
      switch (spec.collective) {
        case Collective::kAllReduce:
          if (lowered == NcclAlgo::kTree) {
            // Channels alternate between the two trees: each carries half.
            TreeUpDown(spec, NcclTreeParents(nodes, n, int(c % 2)), wire, true, true, out, lat);
          } else {
            RingAllGather(spec, wire, 1, out, RingReduceScatter(spec, wire, kGpuReduces, out, none, lat), lat);
          }
          break;
        case Collective::kReduceScatter:
          if (lowered == NcclAlgo::kPat) PatSteps(spec, wire, false, out, lat);
          else RingReduceScatter(spec, wire, kGpuReduces, out, none, lat);
          break;
        case Collective::kAllGather:
          if (lowered == NcclAlgo::kPat) PatSteps(spec, wire, true, out, lat);
          else RingAllGather(spec, wire, 0, out, none, lat);
          break;
        case Collective::kBroadcast:
        case Collective::kReduce: {
          // A pipeline along the ring from (broadcast) or to (reduce) the root.
          order.clear();
          const bool bcast = spec.collective == Collective::kBroadcast;
          for (int32_t k = bcast ? 0 : 1; k < (bcast ? n : n + 1); ++k)
            order.push_back((spec.root + k) % n);
          Chain(spec, order, wire, out, lat);
          break;
        }
        default:
          break;
      }
    }
  }
  out.set_channel(0);
  out.set_host_reduces(host_reduces);
}

bool LowerRecorded(const CollectiveSpec& spec, uint64_t bytes, const LowerOptions& options,
                   StepBuilder& out) {
  return LowerRing(spec, bytes, options, out);
}

// Separate servers (at least one) unless they run on workers 0..k-1.
int ParameterServerEndpoints(const LowerOptions& options) {
  return options.colocated_servers ? 0 : std::max(options.servers, 1);
}

}  // namespace

int32_t TreeParent(int32_t nranks, int32_t rank, int tree) {
  // Tree 1 is tree 0 shifted by one (odd n) or mirrored (even n), so a rank
  // that is a leaf in one tree is mostly inside the other (NCCL's ncclGetDtree).
  int32_t r = rank;
  if (tree == 1) r = nranks % 2 == 1 ? Mod(rank - 1, nranks) : nranks - 1 - rank;
  if (r == 0) return -1;
  int32_t bit = 1;
  while (!(r & bit)) bit <<= 1;
  int32_t up = (r ^ bit) | (bit << 1);
  if (up >= nranks) up = r ^ bit;
  if (tree == 1) up = nranks % 2 == 1 ? (up + 1) % nranks : nranks - 1 - up;
  return up;
}

const std::vector<Algorithm>& AllAlgorithms() {
  static const std::vector<Algorithm> table = {
      {"recorded", "point-to-point as recorded; collectives as NCCL's default ring",
       LowerRecorded},
      {"ring", "ring all-reduce (reduce-scatter + all-gather), ring all-gather and "
               "reduce-scatter, chain broadcast and reduce",
       LowerRing},
      {"tree", "double binary tree all-reduce (NCCL); binary tree broadcast and reduce",
       LowerTree},
      {"hd", "recursive halving-doubling all-reduce (Rabenseifner), non-powers of two folded in",
       AllReduceOnly<HalvingDoubling>},
      {"ps", "parameter server all-reduce: push shards to k servers, pull them back",
       LowerParameterServer, ParameterServerEndpoints},
      {"stepwise", "step-wise ring reduce: only the reduce pass around the ring",
       AllReduceOnly<Stepwise>},
      {"gossip", "each worker exchanges its whole vector with a few rotating neighbours",
       AllReduceOnly<Gossip>},
      {"pairwise", "direct exchange: all-to-all, all-gather, reduce-scatter, all-reduce",
       LowerPairwise},
      {"nccl", "as NCCL runs it: the recorded or tuning-model algorithm (Ring, double binary "
               "Tree, PAT), protocol (LL, LL128, Simple) and channels",
       LowerRing, nullptr, kRingAlgorithm, LowerNcclOp},
  };
  return table;
}

const Algorithm* FindAlgorithm(const std::string& name) {
  for (const auto& a : AllAlgorithms())
    if (name == a.name) return &a;
  return nullptr;
}

const Algorithm& Algorithm::Fallback() const { return *FindAlgorithm(fallback); }

std::vector<std::string> AlgorithmNames() {
  std::vector<std::string> names;
  for (const auto& a : AllAlgorithms()) names.push_back(a.name);
  return names;
}

std::string AlgorithmNamesJoined(const std::string& separator) {
  std::string joined;
  for (const auto& a : AllAlgorithms()) joined += (joined.empty() ? "" : separator) + a.name;
  return joined;
}

void AddExtraEndpoints(const Algorithm& algo, const LowerOptions& options, Schedule* s) {
  for (int j = 0; j < algo.ExtraEndpoints(options); ++j) {
    s->endpoints.push_back({EndpointRole::kServer, -1, int32_t(s->hosts.size())});
    s->hosts.push_back("server" + std::to_string(j));
  }
}

const char* LowerCollective(const Algorithm& algo, const CollectiveSpec& spec,
                            const LowerOptions& options, StepBuilder& out, ScheduleOp* op) {
  if (algo.lower_op) {
    algo.lower_op(spec, options, out, op);
    return algo.name;
  }
  const uint64_t channels = uint64_t(std::max(options.channels, 1));
  const char* used = algo.name;
  const Algorithm& fallback = algo.Fallback();
  for (uint64_t c = 0; c < channels; ++c) {
    out.set_channel(uint16_t(c));
    const uint64_t channel_bytes = Share(spec.bytes, channels, c);
    uint64_t pieces = 1;
    if (options.chunk_bytes > 0 && channel_bytes > options.chunk_bytes)
      pieces = (channel_bytes + options.chunk_bytes - 1) / options.chunk_bytes;
    for (uint64_t p = 0; p < pieces; ++p) {
      const uint64_t piece = Share(channel_bytes, pieces, p);
      if (used == algo.name && algo.lower(spec, piece, options, out)) continue;
      used = fallback.name;
      fallback.lower(spec, piece, options, out);
    }
  }
  out.set_channel(0);
  return used;
}

Link LocalLinkFor(const LowerOptions& options, bool nccl) {
  Link link = nccl ? kNvlinkLink : kSharedMemoryLink;
  if (options.local_gbps) link.gbps = *options.local_gbps;
  if (options.local_latency_ns) link.latency_ns = *options.local_latency_ns;
  return link;
}

Schedule LowerSingleCollective(const CollectiveSpec& spec, int32_t world_size,
                               const LowerOptions& options) {
  Schedule s;
  s.world_size = world_size;
  s.local_link = LocalLinkFor(options, true);
  for (int32_t r = 0; r < world_size; ++r) {
    s.endpoints.push_back({EndpointRole::kWorker, r, r});
    s.hosts.push_back("host" + std::to_string(r));
  }
  const Algorithm* algo = FindAlgorithm(options.algorithm);
  if (!algo) algo = FindAlgorithm(kRingAlgorithm);
  s.algorithm = algo->name;
  AddExtraEndpoints(*algo, options, &s);
  s.ranks.resize(s.endpoints.size());
  ScheduleOp op;
  op.source = ScheduleOp::Source::kSynthetic;
  op.collective = spec.collective;
  op.bytes = spec.bytes;
  s.ops.push_back(op);
  StepBuilder b(&s);
  b.BeginOp(0);
  s.ops[0].algorithm = LowerCollective(*algo, spec, options, b, &s.ops[0]);
  b.EndOp();
  s.iterations = 1;
  return s;
}

}  // namespace dltrace::models
