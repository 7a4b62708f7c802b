// SPDX-License-Identifier: GPL-2.0-only
// Chrome/Perfetto trace JSON of a recorded job: what chrome://tracing and
// ui.perfetto.dev open. Events on one thread must nest or not overlap, so
// each communicator/stream gets as many lanes as its overlapping calls need.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <numeric>
#include <sys/stat.h>

#include "dltrace/formats/op_kind.h"
#include "dltrace/runs/atomic_file.h"
#include "dltrace/views/export.h"
#include "dltrace/runs/json.h"

namespace dltrace::views {

using runs::Json;
using runs::JsonText;

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
  // Streamed one event per line: a job's events are not held in memory at once.
  const Json other = {{"source", "dltrace"}, {"trace", job.set.path}};
  std::fprintf(f, "{\"displayTimeUnit\":\"ms\",\"otherData\":%s,\n\"traceEvents\":[\n", JsonText(other).c_str());
  bool first = true;
  auto emit = [&](const Json& event) {
    std::fputs(first ? "" : ",\n", f);
    std::fputs(JsonText(event).c_str(), f);
    first = false;
  };
  // A metadata ("M") event: a name or sort index of a process or thread.
  auto meta = [&](const char* name, int32_t pid, int tid, const char* arg, Json value) {
    emit({{"ph", "M"}, {"name", name}, {"pid", pid}, {"tid", tid}, {"args", {{arg, std::move(value)}}}});
  };
  // A counter ("C") event of a rank's process.
  auto counter = [&](const char* name, int32_t pid, double ts, Json args) {
    emit({{"ph", "C"}, {"name", name}, {"pid", pid}, {"tid", 0}, {"ts", ts}, {"args", std::move(args)}});
  };
  for (const auto& rt : job.set.ranks) {
    const int32_t rank = rt.header.global_rank;
    if (rank < 0 || size_t(rank) >= job.schedule_op.size()) continue;
    meta("process_name", rank, 0, "name", "rank " + std::to_string(rank) + " (" + rt.header.host + ")");
    meta("process_sort_index", rank, 0, "sort_index", rank);
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
        meta("thread_name", rank, l.tids[lane], "name", LaneName(job, rank, key, lane));
        meta("thread_sort_index", rank, l.tids[lane], "sort_index", l.tids[lane]);
        ++stats->lanes;
      }
      l.busy_until[lane] = spans[i].end_ns;
      const int64_t start = job.JobTime(rank, spans[i].start_ns);
      const int64_t dur = spans[i].end_ns - spans[i].start_ns;
      Json args = {{"op", i},
                   {"collective", formats::CollectiveName(formats::CollectiveOf(e.kind))},
                   {"bytes", e.bytes},
                   {"count", e.count},
                   {"datatype", formats::DataTypeName(e.datatype)},
                   {"seq", e.seq}};
      if (e.comm != formats::kNoCommunicator) args["comm"] = e.comm;
      if (e.peer >= 0) {
        const std::string what = formats::IsPointToPoint(e.kind) ? "peer" : "root";
        args[what] = e.peer;
        args[what + "_world"] = job.WorldRank(rank, e.comm, e.peer);
      }
      if (e.tag >= 0) args["tag"] = e.tag;
      if (e.stream) {
        char stream[24];
        std::snprintf(stream, sizeof stream, "0x%" PRIx64, e.stream);
        args["stream"] = stream;
      }
      if (spans[i].gpu) args["timed_on"] = "gpu";
      const uint32_t sop = job.schedule_op[size_t(rank)][i];
      if (sop != models::kNoOp) args["iteration"] = job.schedule.ops[sop].iteration;
      const char* category =
          formats::IsPointToPoint(e.kind) ? "p2p" : formats::IsCollective(e.kind) ? "collective" : "other";
      emit({{"ph", "X"}, {"name", formats::OpKindName(e.kind)}, {"cat", category}, {"pid", rank},
            {"tid", l.tids[lane]}, {"ts", double(start) / 1e3}, {"dur", double(dur) / 1e3},
            {"args", std::move(args)}});
      ++stats->records;
    }
    // Resource samples as counter tracks of the rank's process.
    const formats::ResourceSample* prev = nullptr;
    for (const auto& s : rt.samples) {
      const double ts = double(job.JobTime(rank, int64_t(s.time_ns))) / 1e3;
      counter("cpu %", rank, ts, {{"cpu", double(s.cpu_percent)}});
      counter("memory MB", rank, ts, {{"rss", double(s.rss_bytes) / 1e6}});
      if (prev && s.time_ns > prev->time_ns) {
        const double secs = double(s.time_ns - prev->time_ns) / 1e9;
        auto rate = [&](uint64_t now, uint64_t before) { return now >= before ? double(now - before) / 1e6 / secs : 0.0; };
        counter("network MB/s", rank, ts,
                {{"rx", rate(s.net_rx_bytes, prev->net_rx_bytes)}, {"tx", rate(s.net_tx_bytes, prev->net_tx_bytes)}});
        counter("disk MB/s", rank, ts,
                {{"read", rate(s.disk_read_bytes, prev->disk_read_bytes)},
                 {"write", rate(s.disk_write_bytes, prev->disk_write_bytes)}});
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
