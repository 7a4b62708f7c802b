// SPDX-License-Identifier: GPL-2.0-only
// dltrace convert PATH --to chrome|chakra|goal|csv -o OUT: a recorded job in
// the formats other tools read (Perfetto/chrome://tracing, ASTRA-sim,
// LogGOPSim/ATLAHS, spreadsheets).
#include <sys/stat.h>

#include <cinttypes>
#include <cstdio>

#include "commands.h"
#include "dltrace/views/export.h"

namespace dltrace::cli {

namespace {

struct ConvertOptions {
  std::string path, to, out;
  models::LowerOptions lower;
};

int RunConvert(ConvertOptions options) {
  const std::string &path = options.path, &to = options.to;
  std::string& out = options.out;
  models::LowerOptions& lower = options.lower;
  if (to != "goal") {
    if (!lower.algorithm.empty() && lower.algorithm != models::kRecordedAlgorithm)
      return UsageError("convert", "--algo applies to --to goal only (the other formats show the job as recorded)");
    lower.algorithm = models::kRecordedAlgorithm;
  }
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
                job->schedule.ranks.size(), stats.records, job->schedule.algorithm.c_str());
  } else {
    std::printf("wrote %zu Chakra traces %s.<rank>.et (%" PRIu64 " nodes) and %s.comm_groups.json\n",
                stats.files.size() - 1, out.c_str(), stats.records, out.c_str());
  }
  return StatusOf(job->set.warnings);
}

}  // namespace

Command AddConvertCommand(CLI::App& dltrace) {
  auto o = std::make_shared<ConvertOptions>();
  CLI::App* cmd = dltrace.add_subcommand(
      "convert", "export a trace for Perfetto, ASTRA-sim (Chakra), LogGOPSim (GOAL) or as CSV");
  AddTraceArgument(cmd, &o->path);
  cmd->add_option("--to", o->to, "the format (see below)")
      ->check(CLI::IsMember({"chrome", "chakra", "goal", "csv"}))
      ->required();
  cmd->add_option("-o,--output", o->out, "the file written (chakra: OUT.<rank>.et files; OUT may be a directory)")
      ->type_name("OUT")
      ->check(CLI::Validator([](std::string& v) { return v.empty() ? "needs a file name" : ""; }, "OUT"))
      ->required();
  AddLowerOptions(cmd, &o->lower);
  cmd->footer(
      "--to chrome  Chrome/Perfetto trace JSON: a process per rank, a thread per communicator or\n"
      "             stream, times in microseconds (warns above 256 MB: viewers struggle)\n"
      "--to chakra  OUT.<rank>.et per rank (Chakra execution traces for ASTRA-sim) and\n"
      "             OUT.comm_groups.json; OUT may be a directory\n"
      "--to goal    GOAL text schedule (LogGOPSim, ATLAHS) of the job lowered with --algo\n"
      "--to csv     one row per recorded operation\n"
      "The lowering options apply to --to goal only.\n"
      "Exit status: 0 ok, 1 error, 2 usage, 3 written but the trace set is incomplete.");
  return {cmd, [o](const Args&) { return RunConvert(*o); }};
}

}  // namespace dltrace::cli
