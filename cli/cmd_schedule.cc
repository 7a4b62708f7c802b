// SPDX-License-Identifier: GPL-2.0-only
// dltrace schedule PATH [--algo A]: lowers a trace set to per-rank steps and
// prints them (GOAL-like), per-rank totals and an alpha-beta estimate.
#include <cinttypes>
#include <cstdio>

#include "commands.h"
#include "dltrace/models/estimate.h"
#include "dltrace/models/job.h"
#include "dltrace/runs/json.h"

namespace dltrace::cli {

namespace {

struct ScheduleOptions {
  std::string path;
  models::LowerOptions lower;
  models::Link network{100, 5000};  // for the estimate
  int32_t rank = -1;                // -1: every endpoint
  bool steps = true;
  bool json = false;
};

// The ops the lowering forced, as --json lists them.
runs::Json ForcedJson(const models::Job& job) {
  using runs::Json;
  Json ops = Json::array();
  for (const models::ForcedOrder& f : job.forced) {
    const models::ScheduleOp& op = job.schedule.ops[f.op];
    Json parties = Json::array();
    for (const auto& p : f.parties) {
      Json one = {{"rank", p.rank}, {"call", p.call}, {"enter_s", double(p.enter_ns) / 1e9},
                  {"reached", p.reached}};
      if (!p.reached && p.at_kind != formats::OpKind::Unknown) {
        one["at_kind"] = formats::OpKindName(p.at_kind);
        one["at_call"] = p.at_call;
        one["at_enter_s"] = double(p.at_enter_ns) / 1e9;
      }
      parties.push_back(std::move(one));
    }
    Json members = Json::array();
    if (op.comm >= 0 && size_t(op.comm) < job.merged.comms.size())
      members = job.merged.comms[size_t(op.comm)].members;
    ops.push_back({{"op", f.op}, {"kind", formats::OpKindName(op.kind)},
                   {"collective", formats::CollectiveName(op.collective)}, {"bytes", op.bytes},
                   {"comm", op.comm}, {"members", members},
                   {"sequence", op.source == models::ScheduleOp::Source::kCollective
                                    ? Json(job.merged.calls[op.recorded].ordinal)
                                    : Json(nullptr)},
                   {"ranks", parties},
                   {"description", models::DescribeForcedOrder(job.merged, job.schedule, f)}});
  }
  return {{"count", job.forced.size()}, {"ops", ops}};
}

int PrintScheduleJson(const ScheduleOptions& options, const models::Job& job) {
  using runs::Json;
  const models::Schedule& s = job.schedule;
  models::Estimate est = models::EstimateSchedule(s, options.network);
  Json endpoints = Json::array();
  auto totals = models::ComputeTotals(s);
  for (size_t e = 0; e < totals.size(); ++e) {
    if (options.rank >= 0 && int32_t(e) != options.rank) continue;
    const auto& t = totals[e];
    const auto& ep = s.endpoints[e];
    endpoints.push_back({{"endpoint", e},
                         {"role", ep.role == models::EndpointRole::kServer ? "server" : "worker"},
                         {"host", ep.host >= 0 ? s.hosts[size_t(ep.host)] : std::string()},
                         {"sends", t.sends}, {"recvs", t.recvs}, {"computes", t.computes},
                         {"sent_bytes", t.sent_bytes}, {"recv_bytes", t.recv_bytes},
                         {"local_sent_bytes", t.local_sent_bytes}, {"compute_ms", t.compute_ns / 1e6}});
  }
  Json iterations = Json::array();
  for (const auto& it : est.iterations) iterations.push_back(it.duration_ns() / 1e6);
  Json j = {{"path", options.path}, {"algorithm", s.algorithm},
            {"endpoints", s.ranks.size()}, {"ops", s.ops.size()}, {"iterations", s.iterations},
            {"steps", s.step_count()}, {"totals", endpoints}, {"estimate_iteration_ms", iterations},
            {"estimate_total_ms", est.total_ns / 1e6}, {"forced", ForcedJson(job)},
            {"notes", job.notes}};
  std::puts(runs::JsonText(j).c_str());
  std::fflush(stdout);
  for (const auto& n : job.notes) Warn(n);
  return !job.Consistent() || !est.complete ? kExitIncomplete : kExitOk;
}

int RunSchedule(const ScheduleOptions& options) {
  const std::string& path = options.path;
  const models::LowerOptions& o = options.lower;
  const models::Link& network = options.network;
  const int32_t rank = options.rank;
  std::string error;
  std::unique_ptr<models::Job> job = models::LoadJob(path, o, &error);
  if (!job) return Fail(error);
  const models::Schedule& s = job->schedule;
  if (rank >= int32_t(s.ranks.size()))
    return Fail(path + ": no rank " + std::to_string(rank) + " (the schedule has " +
                std::to_string(s.ranks.size()) + " endpoints)");
  if (options.json) return PrintScheduleJson(options, *job);

  std::printf("# schedule of %s: algorithm %s, %zu endpoints, %zu ops, %d iterations, %" PRIu64
              " steps\n",
              path.c_str(), s.algorithm.c_str(), s.ranks.size(), s.ops.size(), s.iterations,
              s.step_count());
  if (options.steps) {
    std::printf("num_ranks %zu\n", s.ranks.size());
    const models::DenseTags tags(s);
    for (int32_t e = 0; e < int32_t(s.ranks.size()); ++e)
      if (rank < 0 || e == rank) std::fputs(models::FormatGoal(s, e, tags).c_str(), stdout);
  }
  auto totals = models::ComputeTotals(s);
  std::printf("\n# totals\n%-8s %-7s %-10s %8s %8s %8s %14s %14s %14s %12s\n", "endpoint", "role",
              "host", "sends", "recvs", "computes", "sent_bytes", "recv_bytes", "local_sent",
              "compute_ms");
  for (size_t e = 0; e < totals.size(); ++e) {
    if (rank >= 0 && int32_t(e) != rank) continue;
    const auto& t = totals[e];
    const auto& ep = s.endpoints[e];
    std::printf("%-8zu %-7s %-10s %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %14" PRIu64 " %14" PRIu64
                " %14" PRIu64 " %12.3f\n",
                e, ep.role == models::EndpointRole::kServer ? "server" : "worker",
                ep.host >= 0 ? s.hosts[size_t(ep.host)].c_str() : "?", t.sends, t.recvs,
                t.computes, t.sent_bytes, t.recv_bytes, t.local_sent_bytes, t.compute_ns / 1e6);
  }
  models::Estimate est = models::EstimateSchedule(s, network);
  std::printf("\n# alpha-beta estimate: network %.1f Gbit/s, %.1f us; local %.1f Gbit/s, %.1f us; "
              "no contention\n",
              network.gbps, network.latency_ns / 1000, s.local_link.gbps,
              s.local_link.latency_ns / 1000);
  // With the nccl algorithm a last column says NCCL's algorithm/protocol,
  // channels and why ("recorded", "NCCL_ALGO", "tuning model").
  bool nccl_column = false;
  for (const auto& op : s.ops) nccl_column = nccl_column || !op.nccl_reason.empty();
  std::printf("%-6s %-9s %-16s %-15s %14s %-9s %12s%s\n", "op", "iteration", "call", "collective",
              "bytes", "algorithm", "time_ms", nccl_column ? "  nccl" : "");
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const auto& op = s.ops[i];
    std::string nccl;
    if (!op.nccl_algorithm.empty())
      nccl = "  " + op.nccl_algorithm + "/" + op.nccl_protocol + " x" +
             std::to_string(op.nccl_channels) + " (" + op.nccl_reason + ")";
    else if (nccl_column)
      nccl = op.nccl_reason.empty() ? "  -" : "  (" + op.nccl_reason + ")";
    std::printf("%-6zu %-9d %-16s %-15s %14" PRIu64 " %-9s %12.3f%s\n", i, op.iteration,
                formats::OpKindName(op.kind), formats::CollectiveName(op.collective), op.bytes,
                op.algorithm.c_str(), est.ops[i].duration_ns() / 1e6, nccl.c_str());
  }
  std::printf("\n%-9s %12s\n", "iteration", "time_ms");
  for (size_t i = 0; i < est.iteration_ns.size(); ++i)
    std::printf("%-9zu %12.3f\n", i, est.iteration_ns[i] / 1e6);
  std::printf("total_ms %.3f\n", est.total_ns / 1e6);
  std::fflush(stdout);

  bool incomplete = !job->Consistent() || !est.complete;
  for (const auto& n : job->notes) Warn(n);
  if (!est.complete) Warn("some steps could never run; the estimate covers the rest");
  return incomplete ? kExitIncomplete : kExitOk;
}

}  // namespace

Command AddScheduleCommand(CLI::App& dltrace) {
  auto o = std::make_shared<ScheduleOptions>();
  CLI::App* cmd =
      dltrace.add_subcommand("schedule", "lower a trace set to per-rank steps for an algorithm, with an estimate");
  AddTraceArgument(cmd, &o->path);
  AddLowerOptions(cmd, &o->lower);
  cmd->add_option("--rank", o->rank, "print the steps and totals of endpoint R only")
      ->check(NonNegative())
      ->default_str("");
  cmd->add_flag_callback("--no-steps", [o] { o->steps = false; }, "print totals and the estimate only");
  cmd->add_flag("--json", o->json,
                "print totals, the estimate per iteration, notes and the ops the lowering forced as JSON "
                "(no steps)");
  cmd->add_option("--link-gbps", o->network.gbps, "network link rate for the estimate")->check(Positive());
  cmd->add_option_function<double>(
         "--latency-us", [o](double us) { o->network.latency_ns = us * 1000; },
         "network link latency for the estimate, in microseconds")
      ->default_str(CLI::detail::to_string(o->network.latency_ns / 1000))
      ->check(NonNegative());
  cmd->footer("Exit status: 0 ok, 1 error, 2 usage, 3 printed but the trace set is inconsistent.");
  return {cmd, [o](const Args&) { return RunSchedule(*o); }};
}

}  // namespace dltrace::cli
