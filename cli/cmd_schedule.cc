// dltrace schedule PATH --algo A: lowers a trace set to per-rank steps and
// prints them (GOAL-like), per-rank totals and an alpha-beta estimate.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>

#include "commands.h"
#include "dltrace/models/estimate.h"
#include "dltrace/models/job.h"

namespace dltrace::cli {

int RunSchedule(const Args& args) {
  const Command& self = FindCommand("schedule");
  models::LowerOptions o;
  o.algorithm.clear();
  models::Link network{100, 5000};
  std::string path;
  int32_t rank = -1;
  bool steps = true;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    double v = 0;
    auto value = [&]() { return i + 1 < args.size() && ParseNumber(args[++i], &v); };
    const int lowering = ParseLowerOption(args, &i, &o);
    if (lowering < 0) return UsageError(self, "bad option or value: " + a);
    if (lowering > 0) continue;
    if (a == "--rank" && value()) {
      rank = int32_t(v);
    } else if (a == "--no-steps") {
      steps = false;
    } else if (a == "--link-gbps" && value()) {
      network.gbps = v;
    } else if (a == "--latency-us" && value()) {
      network.latency_ns = v * 1000;
    } else if (!a.empty() && a[0] == '-') {
      return UsageError(self, "bad option or value: " + a);
    } else if (path.empty()) {
      path = a;
    } else {
      return UsageError(self, "more than one PATH given");
    }
  }
  if (path.empty()) return UsageError(self, "missing PATH");
  if (o.algorithm.empty()) return UsageError(self, "missing --algo");
  if (!models::FindAlgorithm(o.algorithm)) {
    std::string names;
    for (const auto& a : models::AllAlgorithms()) names += std::string(names.empty() ? "" : ", ") + a.name;
    return UsageError(self, "unknown algorithm '" + o.algorithm + "' (one of " + names + ")");
  }
  if (o.channels < 1 || o.channels > 65535 || o.servers < 1 || o.gossip_peers < 1 ||
      network.gbps <= 0 || o.local_link.gbps <= 0)
    return UsageError(self, "--channels, --servers, --gossip-peers and link rates must be positive");

  std::string error;
  std::unique_ptr<models::Job> job = models::LoadJob(path, o, &error);
  if (!job) return Fail(error);
  const models::Schedule& s = job->schedule;
  if (rank >= int32_t(s.ranks.size()))
    return Fail(path + ": no rank " + std::to_string(rank) + " (the schedule has " +
                std::to_string(s.ranks.size()) + " endpoints)");

  std::printf("# schedule of %s: algorithm %s, %zu endpoints, %zu ops, %d iterations, %" PRIu64
              " steps\n",
              path.c_str(), o.algorithm.c_str(), s.ranks.size(), s.ops.size(), s.iterations,
              s.step_count());
  if (steps) {
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
  std::printf("%-6s %-9s %-16s %-15s %14s %-9s %12s\n", "op", "iteration", "call", "collective",
              "bytes", "algorithm", "time_ms");
  for (size_t i = 0; i < s.ops.size(); ++i) {
    const auto& op = s.ops[i];
    std::printf("%-6zu %-9d %-16s %-15s %14" PRIu64 " %-9s %12.3f\n", i, op.iteration,
                formats::OpKindName(op.kind), formats::CollectiveName(op.collective), op.bytes,
                op.algorithm.c_str(), est.ops[i].duration_ns() / 1e6);
  }
  std::printf("\n%-9s %12s\n", "iteration", "time_ms");
  for (size_t i = 0; i < est.iterations.size(); ++i)
    std::printf("%-9zu %12.3f\n", i, est.iterations[i].duration_ns() / 1e6);
  std::printf("total_ms %.3f\n", est.total_ns / 1e6);
  std::fflush(stdout);

  bool incomplete = !job->Consistent() || !est.complete;
  for (const auto& n : job->notes) Warn(n);
  if (!est.complete) Warn("some steps could never run; the estimate covers the rest");
  return incomplete ? kExitIncomplete : kExitOk;
}

}  // namespace dltrace::cli
