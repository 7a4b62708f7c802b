// SPDX-License-Identifier: GPL-2.0-only
// Summarize: communicators as models::Merge matches them, per-kind counts, bytes and
// bandwidth, per-rank totals, and the time span on a common (realtime) clock.
#include "trace_summary.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <optional>

#include "dltrace/formats/op_kind.h"
#include "dltrace/models/merge.h"
#include "dltrace/runs/json.h"

namespace dltrace::cli {

using namespace dltrace::formats;

std::string RankList(const std::vector<int32_t>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(ranks[i]);
    if (j > i) out += (j == i + 1 ? "," : "-") + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out.empty() ? "-" : out;
}

std::string HumanBytes(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int u = 0;
  while (bytes >= 1000 && u < 5) {
    bytes /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
  return buf;
}

namespace {

int64_t ToRealtime(const Header& h, int64_t mono_ns) {
  return int64_t(h.start_realtime_ns) + (mono_ns - int64_t(h.start_monotonic_ns));
}

// The summary of the communicator that RANK's file calls ID, as the merge
// matched it (`summary_of` maps merged communicators to summaries); null when
// the file does not describe it.
CommunicatorSummary* MergedComm(const models::MergedTrace& merged, const std::vector<size_t>& summary_of,
                                int32_t rank, uint32_t id, TraceSummary* s) {
  if (rank < 0 || size_t(rank) >= merged.comm_index.size()) return nullptr;
  const auto& index = merged.comm_index[size_t(rank)];
  auto it = index.find(id);
  return it == index.end() ? nullptr : &s->communicators[summary_of[it->second]];
}

// Every rank has its own MPI_COMM_SELF: the merge keeps one per rank.
bool IsCommSelf(const models::WorldCommunicator& w) {
  return w.api == formats::Api::Mpi && w.name == "MPI_COMM_SELF" && w.members.size() == 1;
}

}  // namespace

TraceSummary Summarize(const TraceSet& set) {
  TraceSummary s;
  s.path = set.path;
  s.world_size = set.world_size;
  s.ranks_found = set.ranks.size();
  s.warnings = set.warnings;
  s.complete = set.warnings.empty();

  std::map<std::string, OpKindSummary> kinds;
  std::map<std::string, double> kind_bus_bytes;  // bytes * busbw factor
  std::map<std::string, double> kind_timed_bytes;
  int64_t first_ns = INT64_MAX, last_ns = INT64_MIN;

  // Communicators as the merge (and so the lowering) matches them across rank files.
  const models::MergedTrace merged = models::Merge(set);
  std::vector<size_t> summary_of(merged.comms.size());
  std::optional<size_t> comm_self;  // the one summary of every rank's MPI_COMM_SELF
  for (size_t i = 0; i < merged.comms.size(); ++i) {
    const models::WorldCommunicator& w = merged.comms[i];
    if (IsCommSelf(w) && comm_self) {
      CommunicatorSummary& self = s.communicators[*comm_self];
      self.members.push_back(w.members[0]);
      std::sort(self.members.begin(), self.members.end());
      summary_of[i] = *comm_self;
      continue;
    }
    summary_of[i] = s.communicators.size();
    CommunicatorSummary cs;
    cs.id = int(i);
    cs.api = ApiName(w.api);
    cs.name = w.name;
    cs.size = int32_t(w.members.size());
    // Members only when every one is known (a rank file missing leaves holes).
    if (std::find(w.members.begin(), w.members.end(), -1) == w.members.end()) cs.members = w.members;
    cs.nccl_unique_id_hash = w.nccl_unique_id_hash;
    if (IsCommSelf(w)) {
      cs.per_rank = true;
      comm_self = s.communicators.size();
    }
    s.communicators.push_back(cs);
  }

  for (const auto& r : set.ranks) {
    const Header& h = r.header;
    if (s.recorder_version.empty()) s.recorder_version = h.recorder_version;
    if (s.mpi_version.empty()) s.mpi_version = h.mpi_version;
    if (s.nccl_version.empty()) s.nccl_version = h.nccl_version;
    if (s.job_id.empty()) s.job_id = h.job_id;
    s.hosts[h.host].push_back(h.global_rank);

    RankSummary rs;
    rs.rank = h.global_rank;
    rs.host = h.host;
    rs.local_rank = h.local_rank;
    rs.pid = h.pid;
    rs.ops = r.ops.size();
    rs.samples = r.samples.size();
    rs.dropped = r.footer ? r.footer->events_dropped : 0;
    rs.status = ReadStatusName(r.status);
    rs.file = r.path;
    rs.skipped = r.skipped;
    if (r.footer) rs.write_error = r.footer->write_error;
    if (r.footer)
      for (const auto& [name, calls] : r.footer->unrecorded) s.unrecorded[name] += calls;
    for (const auto& op : r.ops) {
      CommunicatorSummary* comm = MergedComm(merged, summary_of, h.global_rank, op.comm, &s);
      if (comm) ++comm->ops;
      Collective coll = CollectiveOf(op.kind);
      uint64_t bytes = coll == Collective::kNone ? 0 : op.bytes;
      rs.bytes += bytes;
      auto& k = kinds[OpKindName(op.kind)];
      k.kind = OpKindName(op.kind);
      ++k.calls;
      k.bytes += bytes;
      // Nonblocking calls take time from issue to completion, not the call itself.
      int64_t d = op.completion_ns ? *op.completion_ns - op.enter_ns : op.duration_ns();
      if (d > 0) k.time_s += double(d) * 1e-9;
      if (d > 0 && bytes > 0) {
        k.timed = true;
        kind_timed_bytes[k.kind] += double(bytes);
        int n = comm ? comm->size : set.world_size;
        kind_bus_bytes[k.kind] += double(bytes) * BusBandwidthFactor(coll, n);
      }
      first_ns = std::min(first_ns, ToRealtime(h, op.enter_ns));
      last_ns = std::max(last_ns, ToRealtime(h, std::max(op.exit_ns, op.gpu_end_ns.value_or(0))));
    }
    s.events += rs.ops;
    s.dropped += rs.dropped;
    s.samples += rs.samples;
    s.bytes += rs.bytes;
    s.ranks.push_back(rs);
  }
  for (auto& [name, k] : kinds) {
    // Bytes of the calls that moved some over all the kind's time (a
    // zero-byte call of a kind that moves bytes is rare; info accepts it).
    if (k.timed) {
      k.algbw_gbps = kind_timed_bytes[name] / k.time_s * 1e-9;
      k.busbw_gbps = kind_bus_bytes[name] / k.time_s * 1e-9;
    }
    s.op_kinds.push_back(k);
  }
  std::sort(s.op_kinds.begin(), s.op_kinds.end(), [](const auto& a, const auto& b) {
    return a.calls != b.calls ? a.calls > b.calls : a.kind < b.kind;
  });
  if (first_ns <= last_ns) s.time_span_s = double(last_ns - first_ns) * 1e-9;
  return s;
}

std::string UnrecordedText(const TraceSummary& s) {
  std::string out;
  for (const auto& [name, calls] : s.unrecorded)
    out += (out.empty() ? "" : ", ") + name + " " + std::to_string(calls);
  return out;
}

std::string SummaryText(const TraceSummary& s) {
  std::string out;
  char buf[512];
  auto line = [&](const char* fmt, auto... args) {
    std::snprintf(buf, sizeof(buf), fmt, args...);
    out += buf;
  };
  line("trace set   %s\n", s.path.c_str());
  line("ranks       %zu of %d%s\n", s.ranks_found, s.world_size,
       s.complete ? "" : " (incomplete, see warnings)");
  line("recorder    dltrace %s   MPI: %s   NCCL: %s%s%s\n",
       s.recorder_version.empty() ? "?" : s.recorder_version.c_str(),
       s.mpi_version.empty() ? "-" : s.mpi_version.c_str(),
       s.nccl_version.empty() ? "-" : s.nccl_version.c_str(), s.job_id.empty() ? "" : "   job: ",
       s.job_id.c_str());
  std::string hosts;
  for (const auto& [h, ranks] : s.hosts)
    hosts += (hosts.empty() ? "" : ", ") + h + " (ranks " + RankList(ranks) + ")";
  line("hosts       %zu: %s\n", s.hosts.size(), hosts.c_str());
  line("time span   %.6f s\n", s.time_span_s);
  line("events      %llu (dropped %llu)   samples %llu\n", (unsigned long long)s.events,
       (unsigned long long)s.dropped, (unsigned long long)s.samples);
  line("bytes       %llu (%s)\n", (unsigned long long)s.bytes, HumanBytes(double(s.bytes)).c_str());
  if (!s.unrecorded.empty())
    out += "unrecorded  calls that move data, seen but not recorded: " + UnrecordedText(s) + "\n";

  line("\ncommunicators\n  %-4s %-5s %-18s %6s  %-20s %10s\n", "id", "api", "name", "size",
       "members", "ops");
  for (const auto& c : s.communicators) {
    std::string members = c.per_rank ? "each of " + RankList(c.members) + " alone" : RankList(c.members);
    line("  %-4d %-5s %-18s %6d  %-20s %10llu\n", c.id, c.api.c_str(),
         c.name.empty() ? "-" : c.name.c_str(), c.size, members.c_str(), (unsigned long long)c.ops);
  }

  line("\noperations\n  %-26s %10s %16s %12s %12s %12s\n", "kind", "calls", "bytes", "time(s)",
       "algbw(GB/s)", "busbw(GB/s)");
  for (const auto& k : s.op_kinds) {
    if (k.timed) {
      line("  %-26s %10llu %16llu %12.6f %12.3f %12.3f\n", k.kind.c_str(),
           (unsigned long long)k.calls, (unsigned long long)k.bytes, k.time_s, k.algbw_gbps,
           k.busbw_gbps);
    } else {
      line("  %-26s %10llu %16llu %12.6f %12s %12s\n", k.kind.c_str(),
           (unsigned long long)k.calls, (unsigned long long)k.bytes, k.time_s, "-", "-");
    }
  }

  line("\nranks\n  %-5s %-20s %5s %8s %10s %16s %8s %8s  %s\n", "rank", "host", "local", "pid",
       "ops", "bytes", "dropped", "samples", "status");
  for (const auto& r : s.ranks) {
    line("  %-5d %-20s %5d %8d %10llu %16llu %8llu %8llu  %s\n", r.rank, r.host.c_str(),
         r.local_rank, r.pid, (unsigned long long)r.ops, (unsigned long long)r.bytes,
         (unsigned long long)r.dropped, (unsigned long long)r.samples, r.status.c_str());
  }
  return out;
}

std::string SummaryJson(const TraceSummary& s) {
  using runs::Json;
  Json hosts = Json::array(), communicators = Json::array(), op_kinds = Json::array(), ranks = Json::array();
  for (const auto& [h, on] : s.hosts) hosts.push_back({{"name", h}, {"ranks", on}});
  for (const auto& c : s.communicators) {
    char hash[24];
    std::snprintf(hash, sizeof(hash), "0x%016llx", (unsigned long long)c.nccl_unique_id_hash);
    communicators.push_back({{"id", c.id}, {"api", c.api}, {"name", c.name}, {"size", c.size},
                             {"members", c.members},
                             {"nccl_unique_id_hash", c.nccl_unique_id_hash ? std::string(hash) : std::string()},
                             {"per_rank", c.per_rank}, {"ops", c.ops}});
  }
  for (const auto& k : s.op_kinds) {
    op_kinds.push_back({{"kind", k.kind}, {"calls", k.calls}, {"bytes", k.bytes}, {"time_s", k.time_s},
                        {"algbw_gbps", k.timed ? Json(k.algbw_gbps) : Json(nullptr)},
                        {"busbw_gbps", k.timed ? Json(k.busbw_gbps) : Json(nullptr)}});
  }
  for (const auto& r : s.ranks) {
    Json rank = {{"rank", r.rank}, {"host", r.host}, {"local_rank", r.local_rank}, {"pid", r.pid},
                 {"ops", r.ops}, {"bytes", r.bytes}, {"events_dropped", r.dropped}, {"samples", r.samples},
                 {"status", r.status}, {"file", r.file}};
    // Unknown counts are null, not -1.
    auto known = [](int64_t v) { return v >= 0 ? Json(v) : Json(nullptr); };
    if (!r.skipped.empty()) {
      Json skipped = Json::array();
      for (const auto& k : r.skipped) {
        Json one = {{"begin", k.begin}, {"end", k.end}, {"first_chunk", k.first_chunk},
                    {"chunks_lost", known(k.chunks_lost)}, {"events_lost", known(k.events_lost)},
                    {"why", k.why}};
        // Later events dropped because their shapes went with these bytes.
        if (k.events_unresolved > 0) one["events_unresolved"] = k.events_unresolved;
        skipped.push_back(std::move(one));
      }
      rank["skipped"] = std::move(skipped);
    }
    if (!r.write_error.empty()) rank["write_error"] = r.write_error;
    ranks.push_back(std::move(rank));
  }
  const Json doc = {{"path", s.path}, {"world_size", s.world_size}, {"ranks_found", s.ranks_found},
                    {"complete", s.complete}, {"warnings", s.warnings},
                    {"recorder_version", s.recorder_version}, {"mpi_version", s.mpi_version},
                    {"nccl_version", s.nccl_version}, {"job_id", s.job_id}, {"hosts", std::move(hosts)},
                    {"time_span_s", s.time_span_s}, {"events", s.events}, {"events_dropped", s.dropped},
                    {"samples", s.samples}, {"bytes", s.bytes}, {"communicators", std::move(communicators)},
                    {"op_kinds", std::move(op_kinds)}, {"ranks", std::move(ranks)},
                    {"unrecorded", s.unrecorded}};
  return runs::JsonText(doc) + "\n";
}

}  // namespace dltrace::cli
