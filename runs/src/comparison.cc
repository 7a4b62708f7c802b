// SPDX-License-Identifier: GPL-2.0-only
// The rows of runs against a baseline: per op kind (time, difference, bus
// bandwidth) and per iteration, over what every run saw.
#include "dltrace/runs/comparison.h"

#include <cinttypes>
#include <climits>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "dltrace/formats/op_kind.h"

namespace dltrace::runs {

double Percent(double value, double base) { return base > 0 ? (value - base) / base * 100 : NAN; }

namespace {

formats::Collective CollectiveByName(const std::string& name) {
  for (int c = int(formats::Collective::kNone); c <= int(formats::Collective::kScan); ++c)
    if (name == formats::CollectiveName(formats::Collective(c))) return formats::Collective(c);
  return formats::Collective::kNone;
}

struct KindSum {
  uint64_t ops = 0, bytes = 0;
  double ns = 0;
  double bus_bytes = 0;  // bytes * bus-bandwidth factor, summed
};

}  // namespace

Comparison CompareRuns(const std::vector<RunTimes>& runs, const models::Job* job) {
  Comparison c;
  if (runs.empty()) return c;
  std::map<std::string, int> used;
  for (const auto& r : runs) {
    std::string l = r.source == "recorded" ? "recorded" : r.source + ":" + r.algorithm;
    if (++used[l] > 1) l += "#" + std::to_string(used[l]);
    c.labels.push_back(l);
  }
  // Per op kind, over the ops every run saw (iterations a run left out are left out of all).
  c.iterations = SIZE_MAX;
  for (const auto& r : runs) c.iterations = std::min(c.iterations, r.iteration_ns.size());
  std::vector<std::map<std::string, KindSum>> sums(runs.size());
  std::set<std::string> kind_names;
  for (size_t k = 0; k < runs.size(); ++k) {
    const RunTimes& r = runs[k];
    for (size_t i = 0; i < r.ops.size(); ++i) {
      const OpTime& o = r.ops[i];
      if (!o.seen || o.iteration < 0 || size_t(o.iteration) >= c.iterations) continue;
      int n = r.endpoints;
      if (job && i < job->schedule.ops.size() && job->schedule.ops[i].comm >= 0)
        n = int(job->merged.comms[size_t(job->schedule.ops[i].comm)].members.size());
      KindSum& s = sums[k][o.kind];
      ++s.ops;
      s.bytes += o.bytes;
      s.ns += o.ns;
      s.bus_bytes += double(o.bytes) * formats::BusBandwidthFactor(CollectiveByName(o.collective), n);
      kind_names.insert(o.kind);
    }
  }
  for (const auto& kind : kind_names) {
    const KindSum base = sums[0].count(kind) ? sums[0].at(kind) : KindSum();
    for (size_t k = 0; k < runs.size(); ++k) {
      auto it = sums[k].find(kind);
      if (it == sums[k].end()) continue;
      KindRow row;
      row.kind = kind;
      row.run = k;
      row.ops = it->second.ops;
      row.bytes = it->second.bytes;
      row.ns = it->second.ns;
      row.diff_percent = Percent(it->second.ns, base.ns);
      row.busbw_gbps = it->second.ns > 0 ? it->second.bus_bytes / it->second.ns : NAN;  // bytes/ns = GB/s
      c.kinds.push_back(row);
    }
  }
  c.mean_from = c.iterations > 1 ? 1 : 0;
  for (const auto& r : runs) {
    c.iteration_ns.emplace_back(r.iteration_ns.begin(), r.iteration_ns.begin() + long(c.iterations));
    double sum = 0;
    for (size_t i = c.mean_from; i < c.iterations; ++i) sum += r.iteration_ns[i];
    c.mean_ns.push_back(c.iterations > c.mean_from ? sum / double(c.iterations - c.mean_from) : NAN);
    c.setup_ns.push_back(r.setup_ns);
  }
  return c;
}

std::string FormatAgainstRecorded(const Comparison& c, const std::string& column) {
  std::string out;
  char line[256];
  auto add = [&](int n) { out.append(line, size_t(std::max(0, std::min(n, int(sizeof line) - 1)))); };
  add(std::snprintf(line, sizeof line, "%-18s %6s %14s %13s %13s %8s\n", "op_kind", "ops", "bytes",
                    "recorded_ms", column.c_str(), "diff_%"));
  // The recorded run's rows (run 0), each with the run's (run 1) time of that kind.
  for (size_t i = 0; i < c.kinds.size(); ++i) {
    const KindRow& base = c.kinds[i];
    if (base.run != 0) continue;
    double ns = 0;
    for (size_t j = i + 1; j < c.kinds.size() && c.kinds[j].kind == base.kind; ++j)
      if (c.kinds[j].run == 1) ns = c.kinds[j].ns;
    add(std::snprintf(line, sizeof line, "%-18s %6" PRIu64 " %14" PRIu64 " %13.3f %13.3f %+8.1f\n",
                      base.kind.c_str(), base.ops, base.bytes, base.ns / 1e6, ns / 1e6, Percent(ns, base.ns)));
  }
  add(std::snprintf(line, sizeof line, "\n%-18s %13s %13s %8s\n", "iteration", "recorded_ms", column.c_str(),
                    "diff_%"));
  if (c.iteration_ns.size() > 1)
    add(std::snprintf(line, sizeof line, "%-18s %13.3f %13.3f\n", "set-up", c.setup_ns[0] / 1e6, c.setup_ns[1] / 1e6));
  for (size_t i = 0; i < c.iterations && c.iteration_ns.size() > 1; ++i) {
    const double recorded = c.iteration_ns[0][i], run = c.iteration_ns[1][i];
    add(std::snprintf(line, sizeof line, "%-18zu %13.3f %13.3f %+8.1f\n", i, recorded / 1e6, run / 1e6,
                      Percent(run, recorded)));
  }
  return out;
}

std::string FormatAgainstRecorded(const models::Schedule& schedule, const models::Job* recorded, const RunTimes& run,
                                  const std::string& column) {
  return FormatAgainstRecorded(
      CompareRuns({RecordedRun(schedule, recorded ? &recorded->merged : nullptr), run}, recorded), column);
}

std::string FormatBytes(const RunTimes& run) {
  char line[256];
  std::snprintf(line, sizeof line, "bytes: sent %" PRIu64 ", received %" PRIu64 ", scheduled %" PRIu64 " (%s)",
                run.bytes_sent, run.bytes_received, run.bytes_scheduled_recv,
                run.bytes_received == run.bytes_scheduled_recv ? "all received" : "MISSING BYTES");
  return line;
}

}  // namespace dltrace::runs
