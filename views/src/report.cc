// SPDX-License-Identifier: GPL-2.0-only
// Gathers what the report shows (traffic matrix, timeline, per-kind totals,
// message sizes, resource samples, runs side by side) as one JSON object and
// places it, with the page's CSS and JavaScript and the vendored uPlot, into
// one HTML file.
#include "dltrace/runs/atomic_file.h"
#include "dltrace/views/report.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>

#include "dltrace/formats/op_kind.h"
#include "dltrace/views/export.h"
#include "dltrace/runs/comparison.h"
#include "dltrace/runs/json.h"

namespace dltrace::views {

using runs::Json;
using runs::JsonText;

namespace {

std::string Join(const char* const* pieces) {
  std::string out;
  for (; *pieces; ++pieces) out += *pieces;
  return out;
}

std::string RankLabel(const formats::RankTrace& rt) {
  return "rank " + std::to_string(rt.header.global_rank) + " (" + rt.header.host + ")";
}

// Sorted values thinned to at most N points (keeping the first and last), for CDFs.
std::vector<double> Thin(std::vector<double> v, size_t n) {
  std::sort(v.begin(), v.end());
  if (v.size() <= n) return v;
  std::vector<double> out;
  for (size_t i = 0; i < n; ++i) out.push_back(v[i * (v.size() - 1) / (n - 1)]);
  return out;
}

std::string RunLabel(const runs::RunTimes& r) {
  std::string base = r.path;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  if (size_t slash = base.rfind('/'); slash != std::string::npos) base = base.substr(slash + 1);
  return r.source + " " + r.algorithm + " (" + base + ")";
}

bool HasQueues(const ReportOptions& options) {
  for (const auto& r : options.runs)
    if (!r.queues.empty()) return true;
  return false;
}

bool HasPauses(const ReportOptions& options) {
  for (const auto& r : options.runs)
    if (!r.paused_s.empty()) return true;
  return false;
}

bool HasFct(const ReportOptions& options) {
  for (const auto& r : options.runs)
    if (!r.fct_ns.empty()) return true;
  return false;
}

// The data as JSON text that can sit inside the page's <script> element: a
// '<' (only ever inside a string) is written \u003c, so no "</script>" or
// "<!--" in a name ends or changes the element early.
std::string ScriptSafe(const Json& data) {
  std::string out;
  for (char c : JsonText(data)) out += c == '<' ? std::string("\\u003c") : std::string(1, c);
  return out;
}

std::string BuildData(const models::Job& job, const ReportOptions& options, std::vector<std::string>* notes) {
  Json j;
  char stamp[64];
  std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  j["trace"] = job.set.path;
  j["generated"] = stamp;
  j["ranks"] = job.merged.world_size;
  j["hosts"] = job.merged.hosts.size();
  j["iterations"] = job.schedule.iterations;

  // Traffic matrix: bytes each endpoint sends each other one, as lowered (the trace's default algorithm).
  const size_t n = job.schedule.ranks.size();
  std::vector<std::vector<double>> matrix(n, std::vector<double>(n, 0));
  for (size_t e = 0; e < n; ++e)
    for (const auto& s : job.schedule.ranks[e].steps)
      if (s.type == models::StepType::kSend && s.peer >= 0 && size_t(s.peer) < n) matrix[e][size_t(s.peer)] += double(s.bytes);
  std::vector<std::string> labels;
  for (size_t e = 0; e < n; ++e) {
    const auto& ep = job.schedule.endpoints[e];
    labels.push_back(ep.role == models::EndpointRole::kServer ? "ps" + std::to_string(e) : std::to_string(ep.world_rank));
  }
  j["matrix"] = {{"labels", labels}, {"bytes", matrix}};

  // Timeline: the earliest ops of every rank, up to the limit overall.
  std::map<std::string, int> kind_index;
  std::vector<std::string> kind_names;
  size_t total = 0;
  for (const auto& rt : job.set.ranks)
    for (const auto& e : rt.ops) total += formats::CollectiveOf(e.kind) != formats::Collective::kNone;
  const size_t per_rank = job.set.ranks.empty() ? 0 : std::max<size_t>(options.timeline_ops / job.set.ranks.size(), 1);
  size_t shown = 0;
  Json timeline_ranks = Json::array();
  for (const auto& rt : job.set.ranks) {
    const int32_t rank = rt.header.global_rank;
    if (rank < 0 || size_t(rank) >= job.clock_offset.size()) continue;
    std::vector<std::pair<models::Span, formats::OpKind>> spans;
    for (const auto& e : rt.ops)
      if (formats::CollectiveOf(e.kind) != formats::Collective::kNone) spans.emplace_back(models::OpSpan(e), e.kind);
    std::sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) { return a.first.start_ns < b.first.start_ns; });
    if (spans.size() > per_rank) spans.resize(per_rank);
    Json ops = Json::array();
    for (const auto& [span, kind] : spans) {
      const std::string name = formats::OpKindName(kind);
      auto it = kind_index.find(name);
      if (it == kind_index.end()) {
        it = kind_index.emplace(name, int(kind_names.size())).first;
        kind_names.push_back(name);
      }
      // [start us, duration us, index into kinds]
      ops.push_back({double(job.JobTime(rank, span.start_ns)) / 1e3, double(span.end_ns - span.start_ns) / 1e3, it->second});
    }
    shown += spans.size();
    timeline_ranks.push_back({{"label", RankLabel(rt)}, {"ops", std::move(ops)}});
  }
  j["timeline"] = {{"ranks", std::move(timeline_ranks)}, {"kinds", kind_names}, {"shown", shown}, {"total", total}};
  if (shown < total)
    notes->push_back("the timeline shows " + std::to_string(shown) + " of " + std::to_string(total) +
                     " communication calls (the earliest of each rank)");

  // Bytes and time per op kind: the recorded run's per-op totals (runs::CompareRuns,
  // as compare, replay and simulate count them: an op's bytes once, its time the
  // slowest member's), and message sizes of every rank's calls (log2 bins).
  const runs::RunTimes recorded = runs::RecordedRun(job);
  Json kind_rows = Json::array();
  for (const auto& k : runs::CompareRuns({recorded}, &job).kinds)
    kind_rows.push_back({{"kind", k.kind}, {"ops", k.ops}, {"bytes", k.bytes}, {"time_ns", k.ns}});
  j["kinds"] = std::move(kind_rows);
  std::map<int, uint64_t> size_bins;
  for (const auto& rt : job.set.ranks)
    for (const auto& e : rt.ops)
      if (formats::CollectiveOf(e.kind) != formats::Collective::kNone && e.bytes > 0)
        size_bins[int(std::floor(std::log2(double(e.bytes))))] += 1;
  Json size_rows = Json::array();
  for (const auto& [log2, count] : size_bins) size_rows.push_back({{"lo", std::ldexp(1.0, log2)}, {"count", count}});
  j["sizes"] = std::move(size_rows);

  // Resource samples per rank: CPU %, resident memory, and rates from the cumulative counters.
  Json resources = Json::array();
  for (const auto& rt : job.set.ranks) {
    const int32_t rank = rt.header.global_rank;
    if (rank < 0 || size_t(rank) >= job.clock_offset.size() || rt.samples.empty()) continue;
    std::vector<double> t, cpu, rss, rx, tx, rd, wr;
    for (size_t i = 0; i < rt.samples.size(); ++i) {
      const auto& s = rt.samples[i];
      t.push_back(double(job.JobTime(rank, int64_t(s.time_ns))) / 1e9);
      cpu.push_back(s.cpu_percent);
      rss.push_back(double(s.rss_bytes) / 1e6);
      double secs = i ? double(s.time_ns - rt.samples[i - 1].time_ns) / 1e9 : 0;
      auto rate = [&](uint64_t now, uint64_t before) {
        return secs > 0 && now >= before ? double(now - before) / 1e6 / secs : 0.0;
      };
      const auto* p = i ? &rt.samples[i - 1] : &s;
      rx.push_back(rate(s.net_rx_bytes, p->net_rx_bytes));
      tx.push_back(rate(s.net_tx_bytes, p->net_tx_bytes));
      rd.push_back(rate(s.disk_read_bytes, p->disk_read_bytes));
      wr.push_back(rate(s.disk_write_bytes, p->disk_write_bytes));
    }
    resources.push_back({{"label", RankLabel(rt)}, {"t", t}, {"cpu", cpu}, {"rss_mb", rss}, {"net_rx", rx},
                         {"net_tx", tx}, {"disk_read", rd}, {"disk_write", wr}});
  }
  if (resources.empty()) notes->push_back("no resource samples in the trace (recorded with DLTRACE_SAMPLE_MS=0?)");
  j["resources"] = std::move(resources);

  // Iteration times: the recorded run, then every run given.
  std::vector<runs::RunTimes> runs;
  runs.push_back(recorded);
  for (const auto& r : options.runs) runs.push_back(r);
  Json run_rows = Json::array();
  for (size_t k = 0; k < runs.size(); ++k) {
    std::vector<double> ms;
    for (double v : runs[k].iteration_ns) ms.push_back(v / 1e6);
    run_rows.push_back({{"label", k == 0 ? std::string("recorded") : RunLabel(runs[k])},
                        {"source", runs[k].source},
                        {"iteration_ms", ms}});
  }
  j["runs"] = std::move(run_rows);
  Json fct = Json::array();
  for (const auto& r : options.runs) {
    if (r.fct_ns.empty()) {
      // Socket replays have no flow view; say why only where one was expected or attempted.
      if (r.source != "replay" || r.fct_note.rfind("no flows.csv", 0) != 0) notes->push_back("no flow completion times for " + RunLabel(r) + ": " + r.fct_note);
      continue;
    }
    fct.push_back({{"label", RunLabel(r)}, {"count", r.fct_ns.size()}, {"ns", Thin(r.fct_ns, 1000)}});
  }
  j["fct"] = std::move(fct);
  // RDMA runs: the 8 switch ports with the highest peaks, and PFC pause time.
  Json queues = Json::array();
  Json pauses = Json::array();
  for (const auto& r : options.runs) {
    auto ports = r.queues;
    std::sort(ports.begin(), ports.end(), [](const auto& a, const auto& b) { return a.peak > b.peak; });
    if (ports.size() > 8) ports.resize(8);
    for (const auto& q : ports)
      queues.push_back({{"label", RunLabel(r) + " " + q.port}, {"t", q.t_s}, {"bytes", q.bytes}});
    for (const auto& [port, seconds] : r.paused_s)
      pauses.push_back({{"label", RunLabel(r) + " " + port}, {"us", seconds * 1e6}});
  }
  j["queues"] = std::move(queues);
  j["pauses"] = std::move(pauses);
  if (!HasFct(options))
    notes->push_back("no flow completion times: give a `dltrace simulate` results directory with flows.csv (fct_ns)");
  j["notes"] = *notes;
  return ScriptSafe(j);
}

// Replaces the first WHAT at or after *POS and moves *POS past what went in,
// so text inserted earlier is never searched again.
void ReplaceNext(std::string* text, size_t* pos, const std::string& what, const std::string& with) {
  size_t at = text->find(what, *pos);
  if (at == std::string::npos) return;
  text->replace(at, what.size(), with);
  *pos = at + with.size();
}

}  // namespace

std::vector<std::string> ReportChartIds(const ReportOptions& options) {
  std::vector<std::string> ids = {"matrix", "timeline", "kind-bytes", "kind-time", "sizes",
                                  "res-cpu", "res-mem", "res-net", "res-disk", "iterations"};
  if (HasFct(options)) ids.push_back("fct");
  if (HasQueues(options)) ids.push_back("queues");
  if (HasPauses(options)) ids.push_back("pauses");
  return ids;
}

bool WriteReport(const models::Job& job, const ReportOptions& options, const std::string& path,
                 std::vector<std::string>* notes, std::string* error) {
  std::string html = Join(kReportHtml);
  std::string title = "dltrace report: " + job.set.path;
  std::string escaped;
  for (char c : title) escaped += c == '<' ? "&lt;" : c == '&' ? "&amp;" : std::string(1, c);
  // The placeholders, in the order report.html has them.
  size_t pos = 0;
  ReplaceNext(&html, &pos, "@TITLE@", escaped);
  ReplaceNext(&html, &pos, "/*@UPLOT_CSS@*/", Join(kUplotCss));
  ReplaceNext(&html, &pos, "/*@CSS@*/", Join(kReportCss));
  ReplaceNext(&html, &pos, "@DATA@", BuildData(job, options, notes));
  ReplaceNext(&html, &pos, "/*@UPLOT_JS@*/", Join(kUplotJs));
  ReplaceNext(&html, &pos, "/*@JS@*/", Join(kReportJs));
  return runs::WriteFileAtomically(path, html, error);
}

}  // namespace dltrace::views
