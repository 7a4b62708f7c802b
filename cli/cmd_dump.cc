// SPDX-License-Identifier: GPL-2.0-only
// dltrace dump PATH [--rank R]: every record of a trace as JSON lines, for
// scripts and tests that need the exact fields (info only summarises).
#include <cstdio>

#include "commands.h"
#include "dltrace/formats/trace_set.h"
#include "dltrace/runs/json.h"

namespace dltrace::cli {

using namespace dltrace::formats;

namespace {

void Print(const runs::Json& j) {
  std::fputs(runs::JsonText(j).c_str(), stdout);
  std::fputc('\n', stdout);
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
    runs::Json rank_env = runs::Json::object();
    for (const auto& [k, v] : h.rank_env) rank_env[k] = v;
    runs::Json nccl_env = runs::Json::object();
    for (const auto& [k, v] : h.nccl_env) nccl_env[k] = v;
    runs::Json attributes = runs::Json::object();
    for (const auto& [k, v] : h.attributes) attributes[k] = v;
    Print({{"type", "header"}, {"rank", h.global_rank}, {"world_size", h.world_size},
           {"local_rank", h.local_rank}, {"host", h.host}, {"pid", h.pid}, {"job_id", h.job_id},
           {"mpi_version", h.mpi_version}, {"nccl_version", h.nccl_version},
           {"recorder_version", h.recorder_version}, {"gpu_device", h.gpu_device},
           {"gpu_bus_id", h.gpu_bus_id}, {"start_monotonic_ns", h.start_monotonic_ns},
           {"start_realtime_ns", h.start_realtime_ns}, {"command_line", h.command_line},
           {"rank_env", std::move(rank_env)}, {"nccl_env", std::move(nccl_env)},
           {"attributes", std::move(attributes)}, {"status", ReadStatusName(r.status)}});
    for (const auto& c : r.communicators) {
      Print({{"type", "comm"}, {"rank", h.global_rank}, {"id", c.id}, {"api", ApiName(c.api)},
             {"name", c.name}, {"size", c.size}, {"comm_rank", c.rank}, {"members", c.members},
             {"parent", c.parent}, {"color", c.color}, {"key", c.key},
             {"nccl_unique_id_hash", c.nccl_unique_id_hash}, {"cuda_device", c.cuda_device},
             {"bus_id", c.bus_id}, {"created_ns", c.created_ns}});
    }
    for (const auto& op : r.ops) {
      runs::Json o = {{"type", "op"}, {"rank", h.global_rank}, {"kind", OpKindName(op.kind)}};
      o["comm"] = op.comm == kNoCommunicator ? runs::Json(nullptr) : runs::Json(op.comm);
      o["count"] = op.count;
      o["datatype"] = DataTypeName(op.datatype);
      o["bytes"] = op.bytes;
      o["red_op"] = RedOpName(op.red_op);
      o["peer"] = op.peer;
      o["tag"] = op.tag;
      o["seq"] = op.seq;
      o["group"] = op.group;
      o["thread"] = op.thread;
      o["stream"] = op.stream;
      o["enter_ns"] = op.enter_ns;
      o["exit_ns"] = op.exit_ns;
      if (op.gpu_start_ns) o["gpu_start_ns"] = *op.gpu_start_ns;
      if (op.gpu_end_ns) o["gpu_end_ns"] = *op.gpu_end_ns;
      if (op.completion_ns) o["completion_ns"] = *op.completion_ns;
      if (op.captured_in_graph) o["captured_in_graph"] = true;
      if (op.nccl_algorithm != formats::NcclAlgorithm::Unknown)
        o["nccl_algorithm"] = formats::NcclAlgorithmName(op.nccl_algorithm);
      if (op.nccl_protocol != formats::NcclProtocol::Unknown)
        o["nccl_protocol"] = formats::NcclProtocolName(op.nccl_protocol);
      if (op.nccl_channels) o["nccl_channels"] = op.nccl_channels;
      if (!op.peer_send_bytes.empty()) o["peer_send_bytes"] = op.peer_send_bytes;
      if (!op.peer_recv_bytes.empty()) o["peer_recv_bytes"] = op.peer_recv_bytes;
      Print(o);
    }
    for (const auto& s : r.samples) {
      Print({{"type", "sample"}, {"rank", h.global_rank}, {"time_ns", s.time_ns},
             {"cpu_percent", double(s.cpu_percent)}, {"rss_bytes", s.rss_bytes},
             {"net_rx_bytes", s.net_rx_bytes}, {"net_tx_bytes", s.net_tx_bytes},
             {"disk_read_bytes", s.disk_read_bytes}, {"disk_write_bytes", s.disk_write_bytes}});
    }
    if (r.footer) {
      const Footer& f = *r.footer;
      runs::Json o = {{"type", "footer"}, {"rank", h.global_rank},
                          {"events_written", f.events_written},
                          {"events_dropped", f.events_dropped},
                          {"samples_written", f.samples_written}, {"reason", f.reason},
                          {"end_monotonic_ns", f.end_monotonic_ns}};
      if (!f.write_error.empty()) o["write_error"] = f.write_error;
      if (!f.unrecorded.empty()) {
        runs::Json u = runs::Json::object();
        for (const auto& [name, calls] : f.unrecorded) u[name] = calls;
        o["unrecorded"] = std::move(u);
      }
      Print(o);
    }
  }
  std::fflush(stdout);
  return WarnAll(set.warnings);
}

}  // namespace

Command AddDumpCommand(CLI::App& dltrace) {
  auto o = std::make_shared<DumpOptions>();
  CLI::App* cmd = dltrace.add_subcommand("dump", "print every record of a trace as JSON lines");
  AddTraceArgument(cmd, &o->path, "PATH", "a .dltrace file or a trace-set directory");
  cmd->add_option("--rank", o->rank, "only this rank's records")->check(NonNegative())->default_str("");
  return {cmd, [o](const Args&) { return RunDump(*o); }};
}

}  // namespace dltrace::cli
