// SPDX-License-Identifier: GPL-2.0-only
// dltrace scale: a job's data-parallel dimension grown to more ranks, with
// communicators, sequence numbers and hosts rebuilt so every command accepts it.
#include "dltrace/models/scale.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "dltrace/formats/op_kind.h"
#include "dltrace/formats/trace_set.h"
#include "dltrace/formats/writer.h"
#include "dltrace/models/merge.h"
#include "dltrace/models/synth.h"

namespace dltrace::models {

namespace {

using formats::Collective;

bool ScaleHybrid(const formats::TraceSet& set, SynthOptions o, const ScaleOptions& options,
                 const std::string& dir, ScaleResult* result, std::string* error) {
  const int model = o.tp * o.pp;
  if (options.ranks % model != 0) {
    *error = set.path + " is a hybrid job with tp " + std::to_string(o.tp) + " x pp " +
             std::to_string(o.pp) + ": --ranks must be a multiple of " + std::to_string(model);
    return false;
  }
  const int from = o.ranks;
  o.dp = options.ranks / model;
  o.ranks = options.ranks;
  if (options.ranks_per_host) o.ranks_per_host = options.ranks_per_host;
  if (std::string e = CheckSynthOptions(o); !e.empty()) {
    *error = set.path + " cannot grow to " + std::to_string(options.ranks) + " ranks: " + e;
    return false;
  }
  if (!WriteHybridTraceSet(o, dir, error)) return false;
  result->from_ranks = from;
  result->to_ranks = o.ranks;
  result->how = "hybrid " + o.model + ": data-parallel size " + std::to_string(from / model) +
                " -> " + std::to_string(o.dp) + " (tp " + std::to_string(o.tp) + ", pp " +
                std::to_string(o.pp) + " unchanged)";
  return true;
}

// Why SET is not a data-parallel job that can grow, or "".
std::string NotDataParallel(const formats::TraceSet& set, const MergedTrace& m) {
  if (!set.warnings.empty()) return set.warnings.front();
  if (!m.problems.empty()) return "its ranks do not fit together: " + m.problems.front();
  for (const auto& c : m.comms)
    if (int32_t(c.members.size()) != m.world_size)
      return "communicator " + c.name + " has " + std::to_string(c.members.size()) + " of " +
             std::to_string(m.world_size) +
             " ranks: only jobs whose communicators all span every rank (data parallelism) can grow";
  for (const auto& rt : set.ranks)
    for (size_t i = 0; i < rt.ops.size(); ++i) {
      const formats::OpEvent& op = rt.ops[i];
      if (formats::IsPointToPoint(op.kind))
        return "rank " + std::to_string(rt.header.global_rank) + " op " + std::to_string(i) + " (" +
               formats::OpKindName(op.kind) +
               ") is point-to-point: an irregular send/receive graph has no data-parallel "
               "dimension to grow";
      if (!op.peer_send_bytes.empty() || !op.peer_recv_bytes.empty())
        return "rank " + std::to_string(rt.header.global_rank) + " op " + std::to_string(i) + " (" +
               formats::OpKindName(op.kind) + ") has per-peer sizes, which do not carry over to more ranks";
    }
  return "";
}

bool ScaleDataParallel(const formats::TraceSet& set, const MergedTrace& m,
                       const ScaleOptions& options, const std::string& dir, ScaleResult* result,
                       std::string* error) {
  const int n = m.world_size, N = options.ranks;
  int per_host = options.ranks_per_host;
  if (!per_host)
    for (const auto& h : m.hosts) per_host = std::max(per_host, int(h.ranks.size()));
  per_host = std::max(per_host, 1);
  if (::mkdir(dir.c_str(), 0755) != 0) {
    *error = "cannot create " + dir + ": " + std::strerror(errno);
    return false;
  }
  for (int r = 0; r < N; ++r) {
    const formats::RankTrace& from = *set.rank(r % n);
    formats::Header h = from.header;
    h.global_rank = r;
    h.world_size = N;
    h.local_rank = r % per_host;
    h.gpu_device = h.local_rank;
    h.host = "node" + std::to_string(r / per_host);
    h.rank_env.clear();  // the launcher's values belonged to the recorded rank
    h.attributes.push_back({"dltrace.scaled_from",
                            "rank " + std::to_string(r % n) + " of " + std::to_string(n)});
    const std::string path = dir + "/rank" + std::to_string(r) + formats::kTraceFileSuffix;
    auto w = formats::TraceWriter::Create(path, h, error);
    if (!w) return false;
    for (formats::Communicator c : from.communicators) {
      c.size = N;
      c.rank = r;
      c.members.resize(size_t(N));
      for (int k = 0; k < N; ++k) c.members[size_t(k)] = k;
      // A new ncclUniqueId: a communicator of N ranks is not the recorded one.
      if (c.nccl_unique_id_hash) c.nccl_unique_id_hash = c.nccl_unique_id_hash * 0x9E3779B97F4A7C15ull + uint64_t(N);
      w->AddCommunicator(c);
    }
    std::map<uint32_t, uint64_t> seq;  // per communicator, collectives in order
    for (formats::OpEvent op : from.ops) {
      const Collective c = formats::CollectiveOf(op.kind);
      // Buffers that hold one block per rank (nccl-tests "size" of all-gather,
      // reduce-scatter, all-to-all) grow with the ranks; the per-rank part does not.
      if (c == Collective::kAllGather || c == Collective::kReduceScatter || c == Collective::kAllToAll ||
          c == Collective::kGather || c == Collective::kScatter)
        op.bytes = op.bytes / uint64_t(n) * uint64_t(N);
      if (op.comm != formats::kNoCommunicator && formats::IsCollective(op.kind)) op.seq = seq[op.comm]++;
      w->AddOp(std::move(op));
    }
    for (const auto& s : from.samples) w->AddSample(s);
    if (!w->Flush(error)) return false;
    formats::Footer f = from.footer ? *from.footer : formats::Footer{};
    f.events_written = w->ops_written() + w->pending_ops();
    if (!w->Close(f, error)) return false;
  }
  result->from_ranks = n;
  result->to_ranks = N;
  result->how = "data-parallel: rank r repeats recorded rank r mod " + std::to_string(n) + ", " +
                std::to_string(per_host) + " ranks per host";
  return true;
}

}  // namespace

bool ScaleTraceSet(const std::string& path, const ScaleOptions& options, const std::string& dir,
                   ScaleResult* result, std::string* error) {
  if (options.ranks < 1) {
    *error = "--ranks must be at least 1";
    return false;
  }
  formats::TraceSet set;
  if (!formats::LoadTraceSet(path, &set, error)) return false;
  if (set.ranks.empty()) {
    *error = path + ": no rank files";
    return false;
  }
  SynthOptions hybrid;
  if (SynthOptionsFromAttributes(set.ranks.front().header.attributes, &hybrid))
    return ScaleHybrid(set, hybrid, options, dir, result, error);
  const MergedTrace merged = Merge(set);
  if (std::string why = NotDataParallel(set, merged); !why.empty()) {
    *error = path + " cannot be scaled: " + why;
    return false;
  }
  return ScaleDataParallel(set, merged, options, dir, result, error);
}

}  // namespace dltrace::models
