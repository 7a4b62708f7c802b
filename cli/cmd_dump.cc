// dltrace dump PATH [--rank R]: every record of a trace as JSON lines, for
// scripts and tests that need the exact fields (info only summarises).
#include <cstdio>

#include "commands.h"
#include "dltrace/formats/trace_set.h"
#include "json.h"

namespace dltrace::cli {

using namespace dltrace::formats;

namespace {

void Print(JsonWriter& j) {
  std::fputs(j.str().c_str(), stdout);
  std::fputc('\n', stdout);
}

void Array(JsonWriter& j, const char* key, const std::vector<uint64_t>& v) {
  j.Key(key).BeginArray();
  for (auto x : v) j.Uint(x);
  j.EndArray();
}

struct DumpOptions {
  std::string path;
  int rank = -1;  // -1: every rank
};

int RunDump(const DumpOptions& options) {
  const std::string& path = options.path;
  const int only_rank = options.rank;
  TraceSet set;
  std::string error;
  if (!LoadTraceSet(path, &set, &error)) return Fail(error);
  for (const auto& r : set.ranks) {
    const Header& h = r.header;
    if (only_rank >= 0 && h.global_rank != only_rank) continue;
    JsonWriter j;
    j.BeginObject().Field("type", "header").Field("rank", h.global_rank);
    j.Field("world_size", h.world_size).Field("local_rank", h.local_rank).Field("host", h.host);
    j.Field("pid", h.pid).Field("job_id", h.job_id).Field("mpi_version", h.mpi_version);
    j.Field("nccl_version", h.nccl_version).Field("recorder_version", h.recorder_version);
    j.Field("gpu_device", h.gpu_device).Field("gpu_bus_id", h.gpu_bus_id);
    j.Field("start_monotonic_ns", h.start_monotonic_ns).Field("start_realtime_ns", h.start_realtime_ns);
    j.Key("command_line").BeginArray();
    for (const auto& a : h.command_line) j.String(a);
    j.EndArray().Key("rank_env").BeginObject();
    for (const auto& [k, v] : h.rank_env) j.Field(k, v);
    j.EndObject().Field("status", ReadStatusName(r.status)).EndObject();
    Print(j);
    for (const auto& c : r.communicators) {
      JsonWriter cj;
      cj.BeginObject().Field("type", "comm").Field("rank", h.global_rank).Field("id", c.id);
      cj.Field("api", ApiName(c.api)).Field("name", c.name).Field("size", c.size);
      cj.Field("comm_rank", c.rank).Key("members").BeginArray();
      for (auto m : c.members) cj.Int(m);
      cj.EndArray().Field("parent", (long long)c.parent).Field("color", c.color).Field("key", c.key);
      cj.Field("nccl_unique_id_hash", c.nccl_unique_id_hash).Field("cuda_device", c.cuda_device);
      cj.Field("bus_id", c.bus_id).Field("created_ns", c.created_ns).EndObject();
      Print(cj);
    }
    for (const auto& op : r.ops) {
      JsonWriter oj;
      oj.BeginObject().Field("type", "op").Field("rank", h.global_rank);
      oj.Field("kind", OpKindName(op.kind));
      oj.Key("comm");
      op.comm == kNoCommunicator ? oj.Null() : oj.Uint(op.comm);
      oj.Field("count", op.count).Field("datatype", DataTypeName(op.datatype));
      oj.Field("bytes", op.bytes).Field("red_op", RedOpName(op.red_op));
      oj.Field("peer", op.peer).Field("tag", op.tag).Field("seq", op.seq);
      oj.Field("group", op.group).Field("thread", op.thread).Field("stream", op.stream);
      oj.Field("enter_ns", (long long)op.enter_ns).Field("exit_ns", (long long)op.exit_ns);
      if (op.gpu_start_ns) oj.Field("gpu_start_ns", (long long)*op.gpu_start_ns);
      if (op.gpu_end_ns) oj.Field("gpu_end_ns", (long long)*op.gpu_end_ns);
      if (op.completion_ns) oj.Field("completion_ns", (long long)*op.completion_ns);
      if (op.captured_in_graph) oj.Field("captured_in_graph", true);
      if (!op.peer_send_bytes.empty()) Array(oj, "peer_send_bytes", op.peer_send_bytes);
      if (!op.peer_recv_bytes.empty()) Array(oj, "peer_recv_bytes", op.peer_recv_bytes);
      oj.EndObject();
      Print(oj);
    }
    for (const auto& s : r.samples) {
      JsonWriter sj;
      sj.BeginObject().Field("type", "sample").Field("rank", h.global_rank);
      sj.Field("time_ns", s.time_ns).Field("cpu_percent", double(s.cpu_percent));
      sj.Field("rss_bytes", s.rss_bytes).Field("net_rx_bytes", s.net_rx_bytes);
      sj.Field("net_tx_bytes", s.net_tx_bytes).Field("disk_read_bytes", s.disk_read_bytes);
      sj.Field("disk_write_bytes", s.disk_write_bytes).EndObject();
      Print(sj);
    }
    if (r.footer) {
      JsonWriter fj;
      fj.BeginObject().Field("type", "footer").Field("rank", h.global_rank);
      fj.Field("events_written", r.footer->events_written);
      fj.Field("events_dropped", r.footer->events_dropped);
      fj.Field("samples_written", r.footer->samples_written).Field("reason", r.footer->reason);
      fj.Field("end_monotonic_ns", r.footer->end_monotonic_ns);
      fj.EndObject();
      Print(fj);
    }
  }
  std::fflush(stdout);
  for (const auto& w : set.warnings) Warn(w);
  return set.warnings.empty() ? kExitOk : kExitIncomplete;
}

}  // namespace

Command AddDumpCommand(CLI::App& dltrace) {
  auto o = std::make_shared<DumpOptions>();
  CLI::App* cmd = dltrace.add_subcommand("dump", "print every record of a trace as JSON lines");
  cmd->add_option("PATH", o->path, "a .dltrace file or a trace-set directory")->required();
  cmd->add_option("--rank", o->rank, "only this rank's records")->check(NonNegative())->default_str("");
  return {cmd, [o](const Args&) { return RunDump(*o); }};
}

}  // namespace dltrace::cli
