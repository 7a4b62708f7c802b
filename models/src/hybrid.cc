// SPDX-License-Identifier: GPL-2.0-only
// Hybrid-parallel transformer training as Megatron-LM runs it: the collectives
// and pipeline transfers of every rank for one or more iterations, timed on
// a simple model of the GPUs and links, written as NCCL-like rank files.

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <unordered_map>

#include "dltrace/formats/op_kind.h"
#include "dltrace/formats/writer.h"
#include "dltrace/models/lower.h"
#include "dltrace/models/synth.h"

namespace dltrace::models {

using formats::Collective;
using formats::OpKind;

// ---------------------------------------------------------------- architectures

const std::vector<TransformerSpec>& AllTransformers() {
  // Sources are also listed in models/README.md.
  static const std::vector<TransformerSpec> specs = {
      {"gpt3-175b", "GPT-3 175B, 96 layers, hidden 12288, 174.6B parameters",
       "Brown et al. 2020, Language Models are Few-Shot Learners, Table 2.1 (96 layers, "
       "d_model 12288, 96 heads, context 2048); FFN 4 x d_model and the GPT-2 vocabulary of 50257",
       96, 12288, 96, 96, 4 * 12288, 50257, 2048, 0, 0, false, true},
      {"llama2-70b", "Llama-2 70B, 80 layers, hidden 8192, GQA 64/8 heads, 69.0B parameters",
       "Touvron et al. 2023, Llama 2, Table 1; meta-llama/Llama-2-70b-hf config.json "
       "(hidden 8192, intermediate 28672, 80 layers, 64 heads, 8 KV heads, vocab 32000, 4096 positions)",
       80, 8192, 64, 8, 28672, 32000, 4096, 0, 0, true, false},
      {"llama3-8b", "Llama-3 8B, 32 layers, hidden 4096, GQA 32/8 heads, 8.0B parameters",
       "meta-llama/Meta-Llama-3-8B config.json (hidden 4096, intermediate 14336, 32 layers, "
       "32 heads, 8 KV heads, vocab 128256, 8192 positions)",
       32, 4096, 32, 8, 14336, 128256, 8192, 0, 0, true, false},
      {"mixtral-8x7b", "Mixtral 8x7B, 32 layers, 8 experts top-2, 46.7B parameters",
       "Jiang et al. 2024, Mixtral of Experts, Table 1 (dim 4096, 32 layers, 32 heads, 8 KV "
       "heads, hidden_dim 14336, vocab 32000, 8 experts, top 2); sequence length 4096 here",
       32, 4096, 32, 8, 14336, 32000, 4096, 8, 2, true, false},
  };
  return specs;
}

const TransformerSpec* FindTransformer(const std::string& name) {
  for (const auto& t : AllTransformers())
    if (name == t.name) return &t;
  return nullptr;
}

namespace {

// Parameters of one layer's parts (whole, before tensor parallelism splits
// them). Megatron splits the QKV, projection and MLP matrices and the
// column-parallel biases over TP ranks; norms and row-parallel biases are
// replicated on each.
struct LayerParameters {
  uint64_t qkv = 0, proj = 0, mlp = 0;  // mlp: all experts
  uint64_t router = 0, replicated = 0;
};

LayerParameters LayerParametersOf(const TransformerSpec& t) {
  const uint64_t h = t.hidden, g = t.kv_heads * (h / t.heads);
  const uint64_t mats = t.gated_mlp ? 3 : 2;
  LayerParameters p;
  p.qkv = h * (h + 2 * g) + (t.gpt_style ? h + 2 * g : 0);
  p.proj = h * h;
  p.mlp = uint64_t(std::max(t.experts, 1)) * (mats * h * t.ffn + (t.gpt_style ? t.ffn : 0));
  p.router = t.experts ? h * uint64_t(t.experts) : 0;
  // LayerNorm weight + bias twice and the two row-parallel biases (GPT), or two RMSNorm weights.
  p.replicated = t.gpt_style ? 6 * h : 2 * h;
  return p;
}

}  // namespace

uint64_t TransformerParameters(const TransformerSpec& t) {
  const LayerParameters l = LayerParametersOf(t);
  const uint64_t layer = l.qkv + l.proj + l.mlp + l.router + l.replicated;
  const uint64_t h = t.hidden;
  uint64_t outside = t.vocab * h * (t.gpt_style ? 1 : 2)  // tied or separate LM head
                     + (t.gpt_style ? uint64_t(t.seq_len) * h + 2 * h : h);  // positions; final norm
  return uint64_t(t.layers) * layer + outside;
}

// ---------------------------------------------------------------- layout

std::vector<int32_t> MegatronLayout::TpGroup(int r) const {
  std::vector<int32_t> g;
  for (int t = 0; t < tp; ++t) g.push_back(Rank(t, DpIndex(r), PpIndex(r)));
  return g;
}
std::vector<int32_t> MegatronLayout::PpGroup(int r) const {
  std::vector<int32_t> g;
  for (int p = 0; p < pp; ++p) g.push_back(Rank(TpIndex(r), DpIndex(r), p));
  return g;
}
std::vector<int32_t> MegatronLayout::DpGroup(int r) const {
  std::vector<int32_t> g;
  for (int d = 0; d < dp; ++d) g.push_back(Rank(TpIndex(r), d, PpIndex(r)));
  return g;
}
std::vector<int32_t> MegatronLayout::EpGroup(int r) const {
  std::vector<int32_t> g;
  const int first = DpIndex(r) / ep * ep;
  for (int e = 0; e < ep; ++e) g.push_back(Rank(TpIndex(r), first + e, PpIndex(r)));
  return g;
}
std::vector<int32_t> MegatronLayout::EmbeddingGroup(int r) const {
  if (pp < 2 || (PpIndex(r) != 0 && PpIndex(r) != pp - 1)) return {};
  return {Rank(TpIndex(r), DpIndex(r), 0), Rank(TpIndex(r), DpIndex(r), pp - 1)};
}
std::vector<int32_t> MegatronLayout::ExpertDpGroup(int r) const {
  std::vector<int32_t> g;
  for (int d = DpIndex(r) % ep; d < dp; d += ep) g.push_back(Rank(TpIndex(r), d, PpIndex(r)));
  return g;
}

MegatronLayout LayoutOf(const SynthOptions& o) {
  MegatronLayout l;
  l.tp = o.tp;
  l.pp = o.pp;
  l.ep = o.ep;
  l.dp = o.dp > 0 ? o.dp : std::max(1, o.ranks / std::max(1, o.tp * o.pp));
  return l;
}

double ComputeNs(const SynthOptions& o, double flops) {
  return flops / o.tp / (o.gpu_tflops * 1e12 * o.mfu) * 1e9;
}

LayerFlops TransformerLayerFlops(const TransformerSpec& t, const SynthOptions& o) {
  const double b = o.micro_batch_size, s = o.seq_len ? o.seq_len : t.seq_len, h = double(t.hidden);
  const double g = double(t.kv_heads) * (h / double(t.heads));
  const double mats = t.gated_mlp ? 3 : 2;
  LayerFlops f;
  f.attention = 2 * b * s * (h * (h + 2 * g) + h * h) + 4 * b * s * s * h;
  f.mlp = 2 * b * s * mats * h * double(t.ffn) * (t.experts ? t.top_k : 1);
  return f;
}

// ---------------------------------------------------------------- programs

namespace {

enum CommKind : uint32_t { kTp, kPp, kDp, kEp, kExpertDp, kEmbedding, kCommKinds };
const char* const kCommNames[kCommKinds] = {"tp", "pp", "dp", "ep", "edp", "embd"};
enum Lane : uint8_t { kComputeLane, kGradLane };
constexpr uint64_t kLaneStream[2] = {0x7f0000001000ull, 0x7f0000002000ull};
constexpr uint32_t kNone = 0xFFFFFFFFu;

// One step of a rank's program on one lane: a collective, one side of a
// pipeline transfer, or a marker (kind Unknown, not written) that only anchors
// the other lane's timing. It starts GAP_NS of compute after the lane's
// previous entry ended, and not before entry AFTER of the other lane ended.
struct Entry {
  OpKind kind = OpKind::Unknown;
  Lane lane = kComputeLane;
  uint8_t comm = 0;      // CommKind: the file-local communicator id
  uint8_t dtype = 0;     // 0 bf16, 1 fp32 (gradients in --dtype fp32), 2 fp32 (losses)
  int32_t peer = -1;     // communicator rank of a send/recv peer
  uint32_t group = 0;    // NCCL group of a pipeline batch; 0 none
  uint32_t after = kNone;
  uint32_t meet = kNone;  // rendezvous index
  uint64_t bytes = 0;
  int64_t gap_ns = 0;
  int64_t start_ns = 0, end_ns = 0;
};

struct Rendezvous {
  int32_t needed = 0, arrived = 0;
  int64_t latest_start = 0, duration_ns = 0, end_ns = 0;
};

struct RankProgram {
  std::vector<Entry> lanes[2];
  uint64_t iteration_items = 0;  // collectives and groups per iteration
};

class HybridBuilder {
 public:
  explicit HybridBuilder(const SynthOptions& o)
      : o_(o), t_(*FindTransformer(o.model)), l_(LayoutOf(o)) {
    s_ = o.seq_len ? o.seq_len : t_.seq_len;
    microbatches_ = o.microbatches ? o.microbatches : o.pp;
    grad_bytes_ = o.dtype == "bf16" ? 2 : 4;
    const uint64_t b = uint64_t(o.micro_batch_size), h = t_.hidden;
    activation_ = uint64_t(s_) * b * h * 2;
    p2p_ = activation_ / (o.sequence_parallel ? uint64_t(o.tp) : 1);
    dispatch_ = uint64_t(s_) / uint64_t(o.tp) * b * uint64_t(std::max(t_.top_k, 1)) * h * 2;
    flops_ = TransformerLayerFlops(t_, o);
    head_flops_ = 2.0 * double(b) * s_ * double(h) * double(t_.vocab);
    layers_per_stage_ = t_.layers / o.pp;
    Parameters();
  }

  const MegatronLayout& layout() const { return l_; }
  int microbatches() const { return microbatches_; }

  std::vector<int32_t> Members(CommKind k, int r) const {
    switch (k) {
      case kTp: return l_.TpGroup(r);
      case kPp: return l_.PpGroup(r);
      case kDp: return l_.DpGroup(r);
      case kEp: return l_.EpGroup(r);
      case kEmbedding: {
        auto g = l_.EmbeddingGroup(r);
        return g.empty() ? std::vector<int32_t>{r} : g;
      }
      default: return l_.ExpertDpGroup(r);
    }
  }
  bool Used(CommKind k) const {
    switch (k) {
      case kTp: return l_.tp > 1;
      case kPp: return l_.pp > 1;
      case kDp: return l_.dp > 1;
      case kEp: return l_.ep > 1;
      case kEmbedding: return t_.gpt_style && l_.pp > 1;  // tied embeddings only
      default: return t_.experts && l_.dp / l_.ep > 1;
    }
  }

  // Builds every rank's program and the rendezvous of its collectives and transfers.
  void Build() {
    programs_.resize(size_t(l_.world()));
    for (int r = 0; r < l_.world(); ++r) BuildRank(r);
  }

  // Times every entry: a lane runs its entries in order; a collective or
  // transfer ends once all its parties started, plus its alpha-beta time.
  bool Time(std::string* error) {
    const int n = l_.world();
    std::vector<size_t> cursor(size_t(n) * 2, 0);
    std::vector<int64_t> lane_end(size_t(n) * 2, 0);
    std::vector<uint32_t> work;
    // Entries waiting on each rendezvous: (rank * 2 + lane) of parties that started it.
    std::vector<std::vector<uint32_t>> waiting(meets_.size());
    for (uint32_t x = 0; x < uint32_t(n) * 2; ++x) work.push_back(x);
    // The group or entry the lane is in, and whether it has started.
    std::vector<char> started(size_t(n) * 2, 0);
    while (!work.empty()) {
      const uint32_t x = work.back();
      work.pop_back();
      const int r = int(x / 2);
      const Lane lane = Lane(x % 2);
      auto& entries = programs_[size_t(r)].lanes[lane];
      auto& other = programs_[size_t(r)].lanes[1 - lane];
      size_t& c = cursor[x];
      while (c < entries.size()) {
        // The run [c, e) of one NCCL group starts and ends together.
        size_t e = c + 1;
        if (entries[c].group)
          while (e < entries.size() && entries[e].group == entries[c].group) ++e;
        if (!started[x]) {
          const Entry& first = entries[c];
          int64_t start = lane_end[x];
          if (first.after != kNone) {
            const size_t other_x = size_t(r) * 2 + (1 - lane);
            if (cursor[other_x] <= first.after) break;  // woken when the other lane moves
            start = std::max(start, other[first.after].end_ns);
          }
          start += first.gap_ns;
          for (size_t k = c; k < e; ++k) {
            entries[k].start_ns = start;
            if (entries[k].meet == kNone) continue;
            Rendezvous& m = meets_[entries[k].meet];
            m.latest_start = std::max(m.latest_start, start);
            waiting[entries[k].meet].push_back(x);
            if (++m.arrived == m.needed) {
              m.end_ns = m.latest_start + m.duration_ns;
              for (uint32_t y : waiting[entries[k].meet])
                if (y != x) work.push_back(y);
              std::vector<uint32_t>().swap(waiting[entries[k].meet]);
            }
          }
          started[x] = 1;
        }
        bool done = true;
        int64_t end = entries[c].start_ns;
        for (size_t k = c; k < e && done; ++k) {
          if (entries[k].meet == kNone) continue;
          const Rendezvous& m = meets_[entries[k].meet];
          done = m.arrived == m.needed;
          end = std::max(end, m.end_ns);
        }
        if (!done) break;  // woken by the rendezvous
        for (size_t k = c; k < e; ++k) entries[k].end_ns = end;
        lane_end[x] = end;
        started[x] = 0;
        c = e;
        work.push_back(uint32_t(r) * 2 + (1 - lane));  // the other lane may wait for this
      }
    }
    for (int r = 0; r < n; ++r)
      for (int lane = 0; lane < 2; ++lane)
        if (cursor[size_t(r) * 2 + lane] < programs_[size_t(r)].lanes[lane].size()) {
          *error = "internal error: the synthetic schedule of rank " + std::to_string(r) +
                   " cannot proceed past entry " + std::to_string(cursor[size_t(r) * 2 + lane]);
          return false;
        }
    return true;
  }

  RankProgram& program(int r) { return programs_[size_t(r)]; }
  void Release(int r) { programs_[size_t(r)] = RankProgram(); }

 private:
  // Per-rank parameter tensors of one stage, in forward order, with the
  // position (layer) whose backward produces each one's gradient.
  struct Tensor {
    uint64_t params;
    int unit;       // 0: embedding, 1..L: layer, L+1: final norm and LM head
    bool expert;    // reduced over the expert-data-parallel group
  };

  void Parameters() {
    const LayerParameters lp = LayerParametersOf(t_);
    const uint64_t tp = uint64_t(l_.tp), h = t_.hidden;
    for (int p = 0; p < l_.pp; ++p) {
      std::vector<Tensor> ts;
      if (p == 0) {
        ts.push_back({t_.vocab * h / tp, 0, false});
        if (t_.gpt_style) ts.push_back({uint64_t(t_.seq_len) * h, 0, false});
      }
      for (int k = 1; k <= layers_per_stage_; ++k) {
        ts.push_back({lp.replicated, k, false});
        ts.push_back({lp.qkv / tp, k, false});
        ts.push_back({lp.proj / tp, k, false});
        if (lp.router) ts.push_back({lp.router, k, false});
        ts.push_back({lp.mlp / tp / uint64_t(l_.ep), k, t_.experts > 0});
      }
      if (p == l_.pp - 1) {
        ts.push_back({t_.gpt_style ? 2 * h : h, layers_per_stage_ + 1, false});
        ts.push_back({t_.vocab * h / tp, layers_per_stage_ + 1, false});  // a copy when tied
      }
      stage_tensors_.push_back(std::move(ts));
    }
  }

  uint32_t Meet(uint64_t key, int32_t needed, int64_t duration_ns) {
    auto [it, fresh] = meet_of_.emplace(key, uint32_t(meets_.size()));
    if (fresh) {
      Rendezvous m;
      m.needed = needed;
      m.duration_ns = duration_ns;
      meets_.push_back(m);
    }
    return it->second;
  }

  int HostOf(int32_t r) const { return r / o_.ranks_per_host; }

  int64_t TransferNs(Collective c, const std::vector<int32_t>& members, uint64_t bytes) const {
    bool local = true;
    for (int32_t m : members) local = local && HostOf(m) == HostOf(members[0]);
    const int n = int(members.size());
    const double gbps = local ? o_.local_gbps : o_.link_gbps;
    const double factor = c == Collective::kSend ? 1.0 : formats::BusBandwidthFactor(c, n);
    const int steps = c == Collective::kSend ? 1 : (c == Collective::kAllReduce ? 2 * (n - 1) : n - 1);
    return int64_t(factor * double(bytes) * 8 / gbps) + int64_t(steps) * 5'000;
  }

  // ------------------------------------------------------------ one rank

  struct RankState {
    int r = 0, p = 0;
    RankProgram* prog = nullptr;
    double pending_ns[2] = {0, 0};
    uint64_t ordinal[kCommKinds] = {};  // collectives issued per communicator
    std::unordered_map<int32_t, uint64_t> sent, received;  // per pipeline peer
    uint32_t group = 0;
    std::vector<std::vector<int32_t>> members;
  };

  void Compute(RankState& st, double ns) { st.pending_ns[kComputeLane] += ns; }

  uint32_t Push(RankState& st, Entry e) {
    e.gap_ns = int64_t(st.pending_ns[e.lane]);
    st.pending_ns[e.lane] = 0;
    auto& lane = st.prog->lanes[e.lane];
    lane.push_back(e);
    return uint32_t(lane.size() - 1);
  }

  uint32_t Marker(RankState& st) { return Push(st, Entry{}); }

  void Coll(RankState& st, OpKind kind, CommKind comm, uint64_t bytes, uint8_t dtype = 0,
            Lane lane = kComputeLane, uint32_t after = kNone) {
    const auto& members = st.members[comm];
    if (members.size() < 2) return;
    Entry e;
    e.kind = kind;
    e.lane = lane;
    e.comm = uint8_t(comm);
    e.dtype = dtype;
    e.bytes = bytes;
    e.after = after;
    const uint64_t key = (uint64_t(comm) << 56) | (uint64_t(uint32_t(members[0])) << 36) |
                         st.ordinal[comm]++;
    e.meet = Meet(key, int32_t(members.size()),
                  TransferNs(formats::CollectiveOf(kind), members, bytes));
    Push(st, e);
  }

  // One Megatron p2p call: sends and receives to neighbouring stages in one NCCL group.
  void Pipeline(RankState& st, bool send_next, bool recv_next, bool send_prev, bool recv_prev) {
    const int p = st.p;
    send_next = send_next && p + 1 < l_.pp;
    recv_next = recv_next && p + 1 < l_.pp;
    send_prev = send_prev && p > 0;
    recv_prev = recv_prev && p > 0;
    if (!send_next && !recv_next && !send_prev && !recv_prev) return;
    const uint32_t group = ++st.group;
    auto side = [&](bool send, int peer_stage) {
      const int32_t peer = st.members[kPp][size_t(peer_stage)];
      Entry e;
      e.kind = send ? OpKind::NcclSend : OpKind::NcclRecv;
      e.comm = kPp;
      e.peer = peer_stage;
      e.group = group;
      e.bytes = p2p_;
      const int32_t src = send ? st.r : peer, dst = send ? peer : st.r;
      const uint64_t k = send ? st.sent[peer]++ : st.received[peer]++;
      const uint64_t key = (uint64_t(1) << 63) | (uint64_t(uint32_t(src)) << 42) |
                           (uint64_t(uint32_t(dst)) << 21) | k;
      e.meet = Meet(key, 2, TransferNs(Collective::kSend, {src, dst}, p2p_));
      Push(st, e);
    };
    // Megatron's batched order: send prev, recv prev, send next, recv next.
    if (send_prev) side(true, p - 1);
    if (recv_prev) side(false, p - 1);
    if (send_next) side(true, p + 1);
    if (recv_next) side(false, p + 1);
  }

  // Tensor-parallel collectives of the activations (all TP ranks hold A bytes
  // whole, or A/tp each with sequence parallelism).
  void TpGather(RankState& st, uint64_t bytes) { Coll(st, OpKind::NcclAllGather, kTp, bytes); }
  void TpScatter(RankState& st, uint64_t bytes) { Coll(st, OpKind::NcclReduceScatter, kTp, bytes); }
  void TpReduce(RankState& st, uint64_t bytes, uint8_t dtype = 0) {
    Coll(st, OpKind::NcclAllReduce, kTp, bytes, dtype);
  }

  // A mixture-of-experts block, forward (1) or backward (2: twice the FLOPs,
  // the same traffic): the router on local tokens, all-to-all dispatch to the
  // experts' ranks, the expert-TP shards gathered, the experts, and back
  // (Megatron-core's alltoall token dispatcher).
  void Experts(RankState& st, int flops_factor) {
    Coll(st, OpKind::NcclAllToAll, kEp, dispatch_);
    TpGather(st, dispatch_ * uint64_t(l_.tp));
    Compute(st, flops_factor * ComputeNs(o_, flops_.mlp));
    TpScatter(st, dispatch_ * uint64_t(l_.tp));
    Coll(st, OpKind::NcclAllToAll, kEp, dispatch_);
  }

  // Megatron's conjugate TP operators on the activations. Spread: the input
  // gathered over TP under sequence parallelism (identity otherwise).
  // Combine: partial outputs reduce-scattered (sequence parallel) or
  // all-reduced over TP.
  void TpSpread(RankState& st) {
    if (o_.sequence_parallel) TpGather(st, activation_);
  }
  void TpCombine(RankState& st) {
    if (o_.sequence_parallel) TpScatter(st, activation_);
    else TpReduce(st, activation_);
  }

  // A column-parallel then row-parallel pair of linears (attention's QKV and
  // projection, the MLP's two layers) forward: spread, FLOPS, combine.
  void TpBlockForward(RankState& st, double flops) {
    TpSpread(st);
    Compute(st, ComputeNs(o_, flops));
    TpCombine(st);
  }

  // The same pair backward: the row-parallel linear's output gradient
  // gathered (sequence parallel), then the column-parallel one's input
  // gathered again and its input gradient combined.
  void TpBlockBackward(RankState& st, double flops) {
    TpSpread(st);
    Compute(st, ComputeNs(o_, flops));
    TpSpread(st);
    Compute(st, ComputeNs(o_, flops));
    TpCombine(st);
  }

  void Forward(RankState& st, std::vector<uint32_t>* starts) {
    if (st.p == 0) TpCombine(st);  // vocab-parallel embedding: partial sums reduced over TP
    for (int k = 1; k <= layers_per_stage_; ++k) {
      if (starts) (*starts)[size_t(k)] = Marker(st);
      TpBlockForward(st, flops_.attention);
      if (t_.experts) Experts(st, 1);
      else TpBlockForward(st, flops_.mlp);
    }
    if (st.p == l_.pp - 1) {  // LM head and vocab-parallel cross-entropy
      TpSpread(st);
      Compute(st, ComputeNs(o_, head_flops_));
      const uint64_t losses = uint64_t(s_) * uint64_t(o_.micro_batch_size) * 4;
      for (int i = 0; i < 3; ++i) TpReduce(st, losses, 2);  // max, predicted logit, sum of exp
    }
  }

  // Backward of one micro-batch; ENDS gets a marker after each unit's
  // gradients are complete (index = Tensor::unit), STARTS before each layer's.
  void Backward(RankState& st, std::vector<uint32_t>* ends, std::vector<uint32_t>* starts) {
    const int last = layers_per_stage_ + 1;
    if (st.p == l_.pp - 1) {
      if (starts) (*starts)[size_t(last)] = Marker(st);
      TpSpread(st);  // input again, for the head's weight gradient
      Compute(st, 2 * ComputeNs(o_, head_flops_));
      TpCombine(st);
    }
    if (ends) (*ends)[size_t(last)] = Marker(st);
    for (int k = layers_per_stage_; k >= 1; --k) {
      if (starts) (*starts)[size_t(k)] = Marker(st);
      if (t_.experts) Experts(st, 2);
      else TpBlockBackward(st, flops_.mlp);
      TpBlockBackward(st, flops_.attention);
      if (ends) (*ends)[size_t(k)] = Marker(st);
    }
    if (st.p == 0) TpSpread(st);  // the embedding's reduce-scatter, backwards
    if (ends) (*ends)[0] = Marker(st);
  }

  // ZeRO-3: each unit's parameters gathered before its forward and backward,
  // its gradients reduce-scattered after, on the gradient stream.
  void ShardedUnit(RankState& st, int unit, bool gather, uint32_t anchor) {
    uint64_t dense = 0, expert = 0;
    for (const Tensor& tn : stage_tensors_[size_t(st.p)])
      if (tn.unit == unit) (tn.expert ? expert : dense) += tn.params;
    const uint8_t gt = grad_bytes_ == 4 ? 1 : 0;
    if (gather) {
      if (dense) Coll(st, OpKind::NcclAllGather, kDp, dense * 2, 0, kGradLane, anchor);
      if (expert) Coll(st, OpKind::NcclAllGather, kExpertDp, expert * 2, 0, kGradLane, anchor);
    } else {
      if (dense) Coll(st, OpKind::NcclReduceScatter, kDp, dense * grad_bytes_, gt, kGradLane, anchor);
      if (expert)
        Coll(st, OpKind::NcclReduceScatter, kExpertDp, expert * grad_bytes_, gt, kGradLane, anchor);
    }
  }

  void Gradients(RankState& st, const std::vector<uint32_t>& ends) {
    const uint8_t gt = grad_bytes_ == 4 ? 1 : 0;
    const auto& ts = stage_tensors_[size_t(st.p)];
    std::vector<uint64_t> params[2];
    std::vector<int> unit[2];
    for (const Tensor& tn : ts) {
      params[tn.expert].push_back(tn.params);
      unit[tn.expert].push_back(tn.unit);
    }
    // Dense and expert buckets, each as DDP cuts them; issued in the order
    // their gradients become ready.
    struct Bucket {
      uint64_t bytes;
      int unit;
      bool expert;
    };
    std::vector<Bucket> all;
    for (int x = 0; x < 2; ++x) {
      std::vector<size_t> closed;
      auto sizes = GradientBuckets(params[x], grad_bytes_, o_.bucket_bytes, &closed);
      for (size_t b = 0; b < sizes.size(); ++b) all.push_back({sizes[b], unit[x][closed[b]], x == 1});
    }
    std::stable_sort(all.begin(), all.end(), [](const Bucket& a, const Bucket& b) { return a.unit > b.unit; });
    for (const Bucket& b : all) {
      const CommKind c = b.expert ? kExpertDp : kDp;
      const OpKind kind = o_.zero == 0 ? OpKind::NcclAllReduce : OpKind::NcclReduceScatter;
      Coll(st, kind, c, b.bytes, gt, kGradLane, ends[size_t(b.unit)]);
    }
    if (o_.zero == 1 || o_.zero == 2) {  // updated parameters gathered after the optimizer step
      const uint32_t end = ends[0];
      for (const Bucket& b : all)
        Coll(st, OpKind::NcclAllGather, b.expert ? kExpertDp : kDp, b.bytes / grad_bytes_ * 2, 0,
             kGradLane, end);
    }
  }

  void BuildRank(int r) {
    RankState st;
    st.r = r;
    st.p = l_.PpIndex(r);
    st.prog = &programs_[size_t(r)];
    for (uint32_t k = 0; k < kCommKinds; ++k)
      st.members.push_back(Used(CommKind(k)) ? Members(CommKind(k), r) : std::vector<int32_t>{r});
    const int P = l_.pp, M = microbatches_, p = st.p;
    const int units = layers_per_stage_ + 2;
    for (int it = 0; it < o_.iterations; ++it) {
      const size_t before = ItemCount(*st.prog);
      // Megatron's optimizer step waits for every gradient reduction.
      if (it > 0 && !st.prog->lanes[kGradLane].empty()) {
        Entry start;
        start.after = uint32_t(st.prog->lanes[kGradLane].size() - 1);
        Push(st, start);
      }
      const int warmup = std::min(P - p - 1, M), remaining = M - warmup;
      int bwd = 0;
      auto forward = [&]() {
        std::vector<uint32_t> starts(size_t(units), kNone);
        Forward(st, o_.zero == 3 ? &starts : nullptr);
        if (o_.zero == 3)
          for (int k = 1; k <= layers_per_stage_; ++k) ShardedUnit(st, k, true, starts[size_t(k)]);
      };
      auto backward = [&]() {
        const bool last = ++bwd == M;
        std::vector<uint32_t> ends(size_t(units), kNone), starts(size_t(units), kNone);
        const bool mark = last || o_.zero == 3;
        Backward(st, mark ? &ends : nullptr, o_.zero == 3 ? &starts : nullptr);
        if (o_.zero == 3) {
          for (int k = units - 1; k >= 0; --k) {
            if (k >= 1 && k <= layers_per_stage_) ShardedUnit(st, k, true, starts[size_t(k)]);
            ShardedUnit(st, k, false, ends[size_t(k)]);
          }
        } else if (last) {
          Gradients(st, ends);
        }
      };
      // 1F1B (Megatron's forward_backward_pipelining_without_interleaving).
      for (int i = 0; i < warmup; ++i) {
        Pipeline(st, false, false, false, true);  // recv_forward
        forward();
        Pipeline(st, true, false, false, false);  // send_forward
      }
      if (remaining > 0) Pipeline(st, false, false, false, true);
      for (int i = 0; i < remaining; ++i) {
        forward();
        Pipeline(st, true, true, false, false);  // send_forward_recv_backward
        backward();
        if (i == remaining - 1) Pipeline(st, false, false, true, false);  // send_backward
        else Pipeline(st, false, false, true, true);  // send_backward_recv_forward
      }
      for (int i = 0; i < warmup; ++i) {
        Pipeline(st, false, true, false, false);  // recv_backward
        backward();
        Pipeline(st, false, false, true, false);  // send_backward
      }
      // Compute left at the end of the iteration (no op follows to carry it):
      // a marker keeps it on the timeline.
      if (st.pending_ns[kComputeLane] > 0) Marker(st);
      // Megatron's finalize_model_grads: after the data-parallel reduction,
      // the tied embedding's gradient is all-reduced between the first and last stage.
      if (st.members[kEmbedding].size() > 1) {
        const uint32_t after = st.prog->lanes[kGradLane].empty()
                                   ? kNone
                                   : uint32_t(st.prog->lanes[kGradLane].size() - 1);
        Coll(st, OpKind::NcclAllReduce, kEmbedding, t_.vocab * t_.hidden / uint64_t(l_.tp) * grad_bytes_,
             grad_bytes_ == 4 ? 1 : 0, kComputeLane, after);
      }
      if (it == 0) st.prog->iteration_items = ItemCount(*st.prog) - before;
    }
  }

  // Collectives and pipeline groups so far (what the lowering counts as items).
  static size_t ItemCount(const RankProgram& prog) {
    size_t n = 0;
    for (const auto& lane : prog.lanes)
      for (size_t i = 0; i < lane.size(); ++i)
        if (lane[i].kind != OpKind::Unknown &&
            (!lane[i].group || i == 0 || lane[i - 1].group != lane[i].group))
          ++n;
    return n;
  }

  const SynthOptions& o_;
  const TransformerSpec& t_;
  MegatronLayout l_;
  int s_ = 0, microbatches_ = 0, layers_per_stage_ = 0;
  uint64_t grad_bytes_ = 4, activation_ = 0, p2p_ = 0, dispatch_ = 0;
  LayerFlops flops_;
  double head_flops_ = 0;
  std::vector<std::vector<Tensor>> stage_tensors_;
  std::vector<RankProgram> programs_;
  std::vector<Rendezvous> meets_;
  std::unordered_map<uint64_t, uint32_t> meet_of_;
};

formats::DataType DataTypeOf(uint8_t code) {
  return code == 0 ? formats::DataType::BFloat16 : formats::DataType::Float32;
}

}  // namespace

// ---------------------------------------------------------------- writing

bool WriteHybridTraceSet(const SynthOptions& o, const std::string& dir, std::string* error) {
  if (std::string e = CheckSynthOptions(o); !e.empty()) {
    *error = e;
    return false;
  }
  HybridBuilder b(o);
  const MegatronLayout& l = b.layout();
  b.Build();
  if (!b.Time(error)) return false;
  if (!MakeSynthDir(dir, error)) return false;
  const int64_t t0 = 1'000'000'000'000;
  const formats::KeyValues settings = {
      {"synth.kind", "hybrid"},
      {"synth.model", o.model},
      {"synth.tp", std::to_string(l.tp)},
      {"synth.pp", std::to_string(l.pp)},
      {"synth.dp", std::to_string(l.dp)},
      {"synth.ep", std::to_string(l.ep)},
      {"synth.microbatches", std::to_string(b.microbatches())},
      {"synth.micro_batch_size", std::to_string(o.micro_batch_size)},
      {"synth.seq_len", std::to_string(o.seq_len ? o.seq_len : FindTransformer(o.model)->seq_len)},
      {"synth.sequence_parallel", o.sequence_parallel ? "1" : "0"},
      {"synth.zero", std::to_string(o.zero)},
      {"synth.dtype", o.dtype},
      {"synth.bucket_bytes", std::to_string(o.bucket_bytes)},
      {"synth.iterations", std::to_string(o.iterations)},
      {"synth.ranks_per_host", std::to_string(o.ranks_per_host)},
      {"synth.gpu_tflops", std::to_string(o.gpu_tflops)},
      {"synth.mfu", std::to_string(o.mfu)},
      {"synth.link_gbps", std::to_string(o.link_gbps)},
      {"synth.local_gbps", std::to_string(o.local_gbps)},
  };
  const uint64_t job_hash = std::hash<std::string>()(o.model + "/hybrid");
  for (int r = 0; r < l.world(); ++r) {
    RankProgram& prog = b.program(r);
    formats::Header h = SynthRankHeader(o, r, l.world(), t0);
    h.attributes = {{kIterationOpsAttribute, std::to_string(prog.iteration_items)}};
    h.attributes.insert(h.attributes.end(), settings.begin(), settings.end());
    const std::string path = dir + "/rank" + std::to_string(r) + formats::kTraceFileSuffix;
    auto w = formats::TraceWriter::Create(path, h, error);
    if (!w) return false;
    for (uint32_t k = 0; k < kCommKinds; ++k) {
      if (!b.Used(CommKind(k))) continue;
      formats::Communicator c;
      c.id = k;
      c.api = formats::Api::Nccl;
      c.name = kCommNames[k];
      c.members = b.Members(CommKind(k), r);
      if (c.members.size() < 2) continue;  // a middle stage is in no embedding group
      c.size = int32_t(c.members.size());
      c.rank = int32_t(std::find(c.members.begin(), c.members.end(), r) - c.members.begin());
      // One ncclUniqueId per group: the kind and the group's first member name it.
      c.nccl_unique_id_hash = (job_hash ^ (uint64_t(k + 1) << 56)) + uint64_t(c.members[0]) * 0x9E3779B97F4A7C15ull;
      c.cuda_device = h.local_rank;
      c.created_ns = uint64_t(t0);
      w->AddCommunicator(c);
    }
    // Both lanes' entries by start time (the compute stream first on ties, so
    // a pipeline group stays together), as a recorder would see them.
    std::vector<const Entry*> order;
    for (const auto& lane : prog.lanes)
      for (const Entry& e : lane)
        if (e.kind != OpKind::Unknown) order.push_back(&e);
    std::stable_sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) {
      return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->lane < b->lane;
    });
    uint64_t seq[kCommKinds][2] = {};
    int64_t end = t0;
    for (const Entry* e : order) {
      formats::OpEvent op;
      op.kind = e->kind;
      op.comm = e->comm;
      op.datatype = DataTypeOf(e->dtype);
      const uint64_t elem = e->dtype == 0 ? 2 : 4;
      const Collective c = formats::CollectiveOf(e->kind);
      const uint64_t n = b.Members(CommKind(e->comm), r).size();
      // count as passed to NCCL: per-rank for all-gather, reduce-scatter
      // output and all-to-all per peer; the whole buffer otherwise.
      op.count = e->bytes / elem /
                 (c == Collective::kAllGather || c == Collective::kReduceScatter ||
                          c == Collective::kAllToAll
                      ? n
                      : 1);
      op.bytes = e->bytes;
      if (c == Collective::kAllReduce || c == Collective::kReduceScatter) op.red_op = formats::RedOp::Sum;
      op.peer = e->peer;
      op.stream = kLaneStream[e->lane];
      op.seq = seq[e->comm][formats::IsPointToPoint(e->kind) ? 1 : 0]++;
      op.group = e->group;
      op.enter_ns = t0 + e->start_ns;
      op.exit_ns = op.enter_ns + 5'000;
      op.gpu_start_ns = t0 + e->start_ns;
      op.gpu_end_ns = t0 + e->end_ns;
      end = std::max(end, *op.gpu_end_ns);
      w->AddOp(std::move(op));
    }
    if (!w->Flush(error)) return false;
    if (!CloseSynthRank(w.get(), end, error)) return false;
    b.Release(r);
  }
  return true;
}

bool SynthOptionsFromAttributes(const formats::KeyValues& attributes, SynthOptions* o) {
  std::unordered_map<std::string, std::string> a(attributes.begin(), attributes.end());
  if (a["synth.kind"] != "hybrid") return false;
  auto num = [&](const char* k) { return std::strtod(a[k].c_str(), nullptr); };
  o->model = a["synth.model"];
  o->tp = int(num("synth.tp"));
  o->pp = int(num("synth.pp"));
  o->dp = int(num("synth.dp"));
  o->ep = int(num("synth.ep"));
  o->ranks = o->tp * o->pp * o->dp;
  o->microbatches = int(num("synth.microbatches"));
  o->micro_batch_size = int(num("synth.micro_batch_size"));
  o->seq_len = int(num("synth.seq_len"));
  o->sequence_parallel = a["synth.sequence_parallel"] == "1";
  o->zero = int(num("synth.zero"));
  o->dtype = a["synth.dtype"];
  o->bucket_bytes = uint64_t(num("synth.bucket_bytes"));
  o->iterations = int(num("synth.iterations"));
  o->ranks_per_host = int(num("synth.ranks_per_host"));
  o->gpu_tflops = num("synth.gpu_tflops");
  o->mfu = num("synth.mfu");
  o->link_gbps = num("synth.link_gbps");
  o->local_gbps = num("synth.local_gbps");
  return CheckSynthOptions(*o).empty();
}

}  // namespace dltrace::models
