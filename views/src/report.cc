// Gathers what the report shows (traffic matrix, timeline, per-kind totals,
// message sizes, resource samples, runs side by side) as one JSON object and
// places it, with the page's CSS and JavaScript, into one HTML file.
#include "dltrace/runs/atomic_file.h"
#include "dltrace/views/report.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>

#include "dltrace/formats/json.h"
#include "dltrace/formats/op_kind.h"
#include "dltrace/views/export.h"

namespace dltrace::views {

namespace {

std::string Join(const char* const* pieces) {
  std::string out;
  for (; *pieces; ++pieces) out += *pieces;
  return out;
}

// Compact JSON building: numbers printed short, strings escaped.
struct Json {
  std::string s;
  void Raw(const std::string& v) { s += v; }
  void Str(const std::string& v) { s += "\"" + formats::JsonEscape(v) + "\""; }
  void Num(double v) {
    if (!std::isfinite(v)) {
      s += "null";
      return;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    s += buf;
  }
  void Key(const char* k) { s += std::string("\"") + k + "\":"; }
  template <typename T, typename F>
  void Array(const std::vector<T>& v, F each) {
    s += "[";
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) s += ",";
      each(v[i]);
    }
    s += "]";
  }
};

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

bool HasFct(const ReportOptions& options) {
  for (const auto& r : options.runs)
    if (!r.fct_ns.empty()) return true;
  return false;
}

std::string BuildData(const models::Job& job, const ReportOptions& options, std::vector<std::string>* notes) {
  Json j;
  j.Raw("{");
  char stamp[64];
  std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  j.Key("trace"), j.Str(job.set.path), j.Raw(",");
  j.Key("generated"), j.Str(stamp), j.Raw(",");
  j.Key("ranks"), j.Num(job.merged.world_size), j.Raw(",");
  j.Key("hosts"), j.Num(double(job.merged.hosts.size())), j.Raw(",");
  j.Key("iterations"), j.Num(job.schedule.iterations), j.Raw(",");

  // Traffic matrix: bytes each endpoint sends each other one, as lowered (recorded algorithm).
  const size_t n = job.schedule.ranks.size();
  std::vector<std::vector<double>> matrix(n, std::vector<double>(n, 0));
  for (size_t e = 0; e < n; ++e)
    for (const auto& s : job.schedule.ranks[e].steps)
      if (s.type == models::StepType::kSend && s.peer >= 0 && size_t(s.peer) < n) matrix[e][size_t(s.peer)] += double(s.bytes);
  j.Key("matrix"), j.Raw("{");
  j.Key("labels");
  std::vector<std::string> labels;
  for (size_t e = 0; e < n; ++e) {
    const auto& ep = job.schedule.endpoints[e];
    labels.push_back(ep.role == models::EndpointRole::kServer ? "ps" + std::to_string(e) : std::to_string(ep.world_rank));
  }
  j.Array(labels, [&](const std::string& l) { j.Str(l); });
  j.Raw(","), j.Key("bytes");
  j.Array(matrix, [&](const std::vector<double>& row) { j.Array(row, [&](double v) { j.Num(v); }); });
  j.Raw("},");

  // Timeline: the earliest ops of every rank, up to the limit overall.
  std::map<std::string, int> kind_index;
  std::vector<std::string> kind_names;
  size_t total = 0;
  for (const auto& rt : job.set.ranks)
    for (const auto& e : rt.ops) total += formats::CollectiveOf(e.kind) != formats::Collective::kNone;
  const size_t per_rank = job.set.ranks.empty() ? 0 : std::max<size_t>(options.timeline_ops / job.set.ranks.size(), 1);
  size_t shown = 0;
  j.Key("timeline"), j.Raw("{\"ranks\":[");
  for (size_t k = 0; k < job.set.ranks.size(); ++k) {
    const auto& rt = job.set.ranks[k];
    const int32_t rank = rt.header.global_rank;
    if (rank < 0 || size_t(rank) >= job.clock_offset.size()) continue;
    if (k) j.Raw(",");
    j.Raw("{"), j.Key("label"), j.Str(RankLabel(rt)), j.Raw(","), j.Key("ops"), j.Raw("[");
    std::vector<std::pair<models::Span, formats::OpKind>> spans;
    for (const auto& e : rt.ops)
      if (formats::CollectiveOf(e.kind) != formats::Collective::kNone) spans.emplace_back(models::OpSpan(e), e.kind);
    std::sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) { return a.first.start_ns < b.first.start_ns; });
    if (spans.size() > per_rank) spans.resize(per_rank);
    for (size_t i = 0; i < spans.size(); ++i) {
      const std::string name = formats::OpKindName(spans[i].second);
      auto it = kind_index.find(name);
      if (it == kind_index.end()) {
        it = kind_index.emplace(name, int(kind_names.size())).first;
        kind_names.push_back(name);
      }
      if (i) j.Raw(",");
      j.Raw("["), j.Num(double(job.JobTime(rank, spans[i].first.start_ns)) / 1e3), j.Raw(",");
      j.Num(double(spans[i].first.end_ns - spans[i].first.start_ns) / 1e3), j.Raw(",");
      j.Num(it->second), j.Raw("]");
    }
    shown += spans.size();
    j.Raw("]}");
  }
  j.Raw("],"), j.Key("kinds"), j.Array(kind_names, [&](const std::string& s) { j.Str(s); });
  j.Raw(","), j.Key("shown"), j.Num(double(shown)), j.Raw(","), j.Key("total"), j.Num(double(total)), j.Raw("},");
  if (shown < total)
    notes->push_back("the timeline shows " + std::to_string(shown) + " of " + std::to_string(total) +
                     " communication calls (the earliest of each rank)");

  // Bytes and time per op kind (each rank's own calls), and message sizes (log2 bins).
  struct Kind {
    double ops = 0, bytes = 0, ns = 0;
  };
  std::map<std::string, Kind> kinds;
  std::map<int, double> size_bins;
  for (const auto& rt : job.set.ranks)
    for (const auto& e : rt.ops) {
      if (formats::CollectiveOf(e.kind) == formats::Collective::kNone) continue;
      Kind& k = kinds[formats::OpKindName(e.kind)];
      const models::Span s = models::OpSpan(e);
      k.ops += 1;
      k.bytes += double(e.bytes);
      k.ns += double(s.end_ns - s.start_ns);
      if (e.bytes > 0) size_bins[int(std::floor(std::log2(double(e.bytes))))] += 1;
    }
  j.Key("kinds"), j.Raw("[");
  bool first = true;
  for (const auto& kv : kinds) {
    if (!first) j.Raw(",");
    first = false;
    j.Raw("{"), j.Key("kind"), j.Str(kv.first), j.Raw(","), j.Key("ops"), j.Num(kv.second.ops);
    j.Raw(","), j.Key("bytes"), j.Num(kv.second.bytes), j.Raw(","), j.Key("time_ns"), j.Num(kv.second.ns), j.Raw("}");
  }
  j.Raw("],"), j.Key("sizes"), j.Raw("[");
  first = true;
  for (const auto& kv : size_bins) {
    if (!first) j.Raw(",");
    first = false;
    j.Raw("{"), j.Key("lo"), j.Num(std::ldexp(1.0, kv.first)), j.Raw(","), j.Key("count"), j.Num(kv.second), j.Raw("}");
  }
  j.Raw("],");

  // Resource samples per rank: CPU %, resident memory, and rates from the cumulative counters.
  j.Key("resources"), j.Raw("[");
  first = true;
  size_t sampled = 0;
  for (const auto& rt : job.set.ranks) {
    const int32_t rank = rt.header.global_rank;
    if (rank < 0 || size_t(rank) >= job.clock_offset.size() || rt.samples.empty()) continue;
    ++sampled;
    if (!first) j.Raw(",");
    first = false;
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
    auto series = [&](const char* key, const std::vector<double>& v) {
      j.Raw(","), j.Key(key), j.Array(v, [&](double x) { j.Num(x); });
    };
    j.Raw("{"), j.Key("label"), j.Str(RankLabel(rt));
    series("t", t), series("cpu", cpu), series("rss_mb", rss), series("net_rx", rx), series("net_tx", tx);
    series("disk_read", rd), series("disk_write", wr);
    j.Raw("}");
  }
  j.Raw("],");
  if (sampled == 0) notes->push_back("no resource samples in the trace (recorded with DLTRACE_SAMPLE_MS=0?)");

  // Iteration times: the recorded run, then every run given.
  std::vector<runs::RunTimes> runs;
  runs.push_back(runs::RecordedRun(job));
  for (const auto& r : options.runs) runs.push_back(r);
  j.Key("runs"), j.Raw("[");
  for (size_t k = 0; k < runs.size(); ++k) {
    if (k) j.Raw(",");
    j.Raw("{"), j.Key("label"), j.Str(k == 0 ? std::string("recorded") : RunLabel(runs[k]));
    j.Raw(","), j.Key("source"), j.Str(runs[k].source), j.Raw(","), j.Key("iteration_ms");
    j.Array(runs[k].iteration_ns, [&](double v) { j.Num(v / 1e6); });
    j.Raw("}");
  }
  j.Raw("],"), j.Key("fct"), j.Raw("[");
  first = true;
  for (const auto& r : options.runs) {
    if (r.fct_ns.empty()) {
      // Socket replays have no flow view; say why only where one was expected or attempted.
      if (r.source != "replay" || r.fct_note.rfind("no flows.csv", 0) != 0) notes->push_back("no flow completion times for " + RunLabel(r) + ": " + r.fct_note);
      continue;
    }
    if (!first) j.Raw(",");
    first = false;
    j.Raw("{"), j.Key("label"), j.Str(RunLabel(r)), j.Raw(","), j.Key("count"), j.Num(double(r.fct_ns.size()));
    j.Raw(","), j.Key("ns"), j.Array(Thin(r.fct_ns, 1000), [&](double v) { j.Num(v); }), j.Raw("}");
  }
  j.Raw("],");
  if (!HasFct(options))
    notes->push_back("no flow completion times: give a `dltrace simulate` results directory with flows.csv (fct_ns)");
  j.Key("notes"), j.Array(*notes, [&](const std::string& s) { j.Str(s); });
  j.Raw("}");
  return j.s;
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
  ReplaceNext(&html, &pos, "/*@CSS@*/", Join(kReportCss));
  ReplaceNext(&html, &pos, "@DATA@", BuildData(job, options, notes));
  ReplaceNext(&html, &pos, "/*@JS@*/", Join(kReportJs));
  return runs::WriteFileAtomically(path, html, error);
}

}  // namespace dltrace::views
