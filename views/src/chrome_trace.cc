// Chrome/Perfetto trace JSON of a recorded job: what chrome://tracing and
// ui.perfetto.dev open. Events on one thread must nest or not overlap, so
// each communicator/stream gets as many lanes as its overlapping calls need.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <numeric>
#include <sys/stat.h>

#include "dltrace/formats/json.h"
#include "dltrace/formats/op_kind.h"
#include "dltrace/runs/atomic_file.h"
#include "dltrace/views/export.h"

namespace dltrace::views {

namespace {

// What thread an op belongs to before overlap splitting.
struct LaneKey {
  int kind;  // 0 communicator, 1 stream, 2 host thread (no communicator)
  uint64_t id;
  bool operator<(const LaneKey& o) const { return kind != o.kind ? kind < o.kind : id < o.id; }
};

std::string LaneName(const models::Job& job, int32_t rank, const LaneKey& key, size_t split) {
  char buf[160];
  if (key.kind == 1) {
    std::snprintf(buf, sizeof buf, "stream 0x%" PRIx64, key.id);
  } else if (key.kind == 2) {
    std::snprintf(buf, sizeof buf, "thread %" PRIu64 " (no communicator)", key.id);
  } else {
    const models::WorldCommunicator* c = job.Comm(rank, uint32_t(key.id));
    std::snprintf(buf, sizeof buf, "comm %" PRIu64 "%s%s (%zu ranks)", key.id,
                  c && !c->name.empty() ? " " : "", c ? c->name.c_str() : "",
                  c ? c->members.size() : size_t(0));
  }
  std::string name = buf;
  if (split > 0) name += " #" + std::to_string(split + 1);
  return name;
}

}  // namespace

bool WriteChromeTrace(const models::Job& job, const std::string& path, ExportStats* stats, std::string* error) {
  runs::AtomicFile out(path);
  if (!out.Open(error)) return false;
  FILE* f = out.get();
  std::fprintf(f, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"source\":\"dltrace\",\"trace\":\"%s\"},\n"
               "\"traceEvents\":[\n", formats::JsonEscape(job.set.path).c_str());
  bool first = true;
  auto sep = [&]() {
    std::fputs(first ? "" : ",\n", f);
    first = false;
  };
  for (const auto& rt : job.set.ranks) {
    const int32_t rank = rt.header.global_rank;
    if (rank < 0 || size_t(rank) >= job.schedule_op.size()) continue;
    sep();
    std::fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":\"rank %d (%s)\"}}",
                 rank, rank, formats::JsonEscape(rt.header.host).c_str());
    sep();
    std::fprintf(f, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"tid\":0,\"args\":{\"sort_index\":%d}}",
                 rank, rank);
    // Ops in start order, each given the first lane of its key that is free by then.
    std::vector<size_t> order(rt.ops.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::vector<models::Span> spans(rt.ops.size());
    for (size_t i = 0; i < rt.ops.size(); ++i) spans[i] = models::OpSpan(rt.ops[i]);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return spans[a].start_ns < spans[b].start_ns; });
    struct Lanes {
      std::vector<int64_t> busy_until;
      std::vector<int> tids;
    };
    std::map<LaneKey, Lanes> lanes;
    int next_tid = 1;
    for (size_t i : order) {
      const formats::OpEvent& e = rt.ops[i];
      LaneKey key{0, e.comm};
      if (e.stream != 0) key = {1, e.stream};
      else if (e.comm == formats::kNoCommunicator) key = {2, e.thread};
      Lanes& l = lanes[key];
      size_t lane = 0;
      while (lane < l.busy_until.size() && l.busy_until[lane] > spans[i].start_ns) ++lane;
      if (lane == l.busy_until.size()) {
        l.busy_until.push_back(0);
        l.tids.push_back(next_tid++);
        sep();
        std::fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
                     rank, l.tids[lane], formats::JsonEscape(LaneName(job, rank, key, lane)).c_str());
        sep();
        std::fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%d,\"tid\":%d,\"args\":{\"sort_index\":%d}}",
                     rank, l.tids[lane], l.tids[lane]);
        ++stats->lanes;
      }
      l.busy_until[lane] = spans[i].end_ns;
      const int64_t start = job.JobTime(rank, spans[i].start_ns);
      const int64_t dur = spans[i].end_ns - spans[i].start_ns;
      const formats::Collective c = formats::CollectiveOf(e.kind);
      sep();
      std::fprintf(f, "{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
                   "\"args\":{\"op\":%zu,\"collective\":\"%s\",\"bytes\":%" PRIu64 ",\"count\":%" PRIu64
                   ",\"datatype\":\"%s\",\"seq\":%" PRIu64,
                   formats::OpKindName(e.kind), formats::IsPointToPoint(e.kind) ? "p2p" : formats::IsCollective(e.kind) ? "collective" : "other",
                   rank, l.tids[lane], double(start) / 1e3, double(dur) / 1e3, i, formats::CollectiveName(c), e.bytes,
                   e.count, formats::DataTypeName(e.datatype), e.seq);
      if (e.comm != formats::kNoCommunicator) std::fprintf(f, ",\"comm\":%u", e.comm);
      if (e.peer >= 0) {
        const char* what = formats::IsPointToPoint(e.kind) ? "peer" : "root";
        std::fprintf(f, ",\"%s\":%d,\"%s_world\":%d", what, e.peer, what, job.WorldRank(rank, e.comm, e.peer));
      }
      if (e.tag >= 0) std::fprintf(f, ",\"tag\":%d", e.tag);
      if (e.stream) std::fprintf(f, ",\"stream\":\"0x%" PRIx64 "\"", e.stream);
      if (spans[i].gpu) std::fprintf(f, ",\"timed_on\":\"gpu\"");
      const uint32_t sop = job.schedule_op[size_t(rank)][i];
      if (sop != models::kNoOp) std::fprintf(f, ",\"iteration\":%d", job.schedule.ops[sop].iteration);
      std::fputs("}}", f);
      ++stats->records;
    }
    // Resource samples as counter tracks of the rank's process.
    const formats::ResourceSample* prev = nullptr;
    for (const auto& s : rt.samples) {
      const double ts = double(job.JobTime(rank, int64_t(s.time_ns))) / 1e3;
      sep();
      std::fprintf(f, "{\"ph\":\"C\",\"name\":\"cpu %%\",\"pid\":%d,\"tid\":0,\"ts\":%.3f,\"args\":{\"cpu\":%.1f}}",
                   rank, ts, double(s.cpu_percent));
      sep();
      std::fprintf(f, "{\"ph\":\"C\",\"name\":\"memory MB\",\"pid\":%d,\"tid\":0,\"ts\":%.3f,\"args\":{\"rss\":%.3f}}",
                   rank, ts, double(s.rss_bytes) / 1e6);
      if (prev && s.time_ns > prev->time_ns) {
        const double secs = double(s.time_ns - prev->time_ns) / 1e9;
        auto rate = [&](uint64_t now, uint64_t before) { return now >= before ? double(now - before) / 1e6 / secs : 0.0; };
        sep();
        std::fprintf(f, "{\"ph\":\"C\",\"name\":\"network MB/s\",\"pid\":%d,\"tid\":0,\"ts\":%.3f,"
                     "\"args\":{\"rx\":%.3f,\"tx\":%.3f}}", rank, ts, rate(s.net_rx_bytes, prev->net_rx_bytes),
                     rate(s.net_tx_bytes, prev->net_tx_bytes));
        sep();
        std::fprintf(f, "{\"ph\":\"C\",\"name\":\"disk MB/s\",\"pid\":%d,\"tid\":0,\"ts\":%.3f,"
                     "\"args\":{\"read\":%.3f,\"write\":%.3f}}", rank, ts,
                     rate(s.disk_read_bytes, prev->disk_read_bytes), rate(s.disk_write_bytes, prev->disk_write_bytes));
      }
      prev = &s;
    }
  }
  std::fputs("\n]}\n", f);
  stats->bytes = uint64_t(std::ftell(f));
  if (!out.Commit(error)) return false;
  stats->files.push_back(path);
  return true;
}

}  // namespace dltrace::views
