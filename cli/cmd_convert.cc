// dltrace convert PATH --to chrome|chakra|goal|csv -o OUT: a recorded job in
// the formats other tools read (Perfetto/chrome://tracing, ASTRA-sim,
// LogGOPSim/ATLAHS, spreadsheets).
#include <sys/stat.h>

#include <cinttypes>
#include <cstdio>

#include "commands.h"
#include "dltrace/views/export.h"

namespace dltrace::cli {

int RunConvert(const Args& args) {
  const Command& self = FindCommand("convert");
  std::string path, to, out;
  models::LowerOptions lower;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto text = [&](std::string* s) {
      if (i + 1 >= args.size()) return false;
      *s = args[++i];
      return true;
    };
    const int lowering = ParseLowerOption(args, &i, &lower);
    if (lowering < 0) return UsageError(self, "bad option or value: " + a);
    if (lowering > 0) continue;
    if (a == "--to" && text(&to)) {
    } else if ((a == "-o" || a == "--output") && text(&out) && !out.empty()) {
    } else if (!a.empty() && a[0] == '-') {
      return UsageError(self, "bad option or value: " + a);
    } else if (path.empty()) {
      path = a;
    } else {
      return UsageError(self, "more than one PATH given");
    }
  }
  if (path.empty()) return UsageError(self, "missing PATH");
  if (to != "chrome" && to != "chakra" && to != "goal" && to != "csv")
    return UsageError(self, to.empty() ? "missing --to chrome|chakra|goal|csv" : "unknown format '" + to + "'");
  if (out.empty()) return UsageError(self, "missing -o OUT");
  if (!models::FindAlgorithm(lower.algorithm)) return UsageError(self, "unknown algorithm '" + lower.algorithm + "'");
  if (lower.algorithm != "recorded" && to != "goal")
    return UsageError(self, "--algo applies to --to goal only (the other formats show the job as recorded)");
  if (std::string why; to == "chakra" && !views::ChakraAvailable(&why)) return Fail(why);
  // Chakra writes OUT.<rank>.et; a directory given as OUT gets files named after the trace.
  struct stat st;
  if (to == "chakra" && stat(out.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) out += "/dltrace";

  std::string error;
  std::unique_ptr<models::Job> job = models::LoadJob(path, lower, &error);
  if (!job) return Fail(error);
  for (const auto& w : job->set.warnings) Warn(w);
  if (to == "goal") {
    auto problems = models::CheckSchedule(job->schedule, 1);
    if (!problems.empty()) return Fail(path + ": the lowered schedule is not sound: " + problems[0]);
  }
  views::ExportStats stats;
  bool ok = false;
  if (to == "chrome") ok = views::WriteChromeTrace(*job, out, &stats, &error);
  if (to == "csv") ok = views::WriteOpsCsv(*job, out, &stats, &error);
  if (to == "goal") ok = views::WriteGoal(job->schedule, out, &stats, &error);
  if (to == "chakra") ok = views::WriteChakra(*job, out, &stats, &error);
  if (!ok) return Fail(error);

  if (to == "chrome") {
    std::printf("wrote %s: %" PRIu64 " events of %zu ranks on %" PRIu64 " threads, %.1f MB "
                "(open in https://ui.perfetto.dev or chrome://tracing)\n",
                out.c_str(), stats.records, job->set.ranks.size(), stats.lanes, double(stats.bytes) / 1e6);
    if (stats.bytes > views::kChromeTraceWarnBytes)
      Warn(out + " is " + std::to_string(stats.bytes >> 20) +
           " MiB: trace viewers struggle above 256 MiB (convert fewer ranks or a shorter run)");
  } else if (to == "csv") {
    std::printf("wrote %s: %" PRIu64 " operations\n", out.c_str(), stats.records);
  } else if (to == "goal") {
    std::printf("wrote %s: %zu ranks, %" PRIu64 " steps (algorithm %s)\n", out.c_str(),
                job->schedule.ranks.size(), stats.records, lower.algorithm.c_str());
  } else {
    std::printf("wrote %zu Chakra traces %s.<rank>.et (%" PRIu64 " nodes) and %s.comm_groups.json\n",
                stats.files.size() - 1, out.c_str(), stats.records, out.c_str());
  }
  return job->set.warnings.empty() ? kExitOk : kExitIncomplete;
}

}  // namespace dltrace::cli
