// SPDX-License-Identifier: GPL-2.0-only
// dltrace info PATH [--json]: what a trace file or trace set holds.
#include <cstdio>

#include "commands.h"
#include "dltrace/formats/trace_set.h"
#include "trace_summary.h"

namespace dltrace::cli {

namespace {

struct InfoOptions {
  std::string path;
  bool json = false;
};

int RunInfo(const InfoOptions& options) {
  const std::string& path = options.path;
  const bool json = options.json;
  formats::TraceSet set;
  std::string error;
  if (!formats::LoadTraceSet(path, &set, &error)) return Fail(error);
  TraceSummary summary = Summarize(set);
  std::fputs(json ? SummaryJson(summary).c_str() : SummaryText(summary).c_str(), stdout);
  std::fflush(stdout);
  return WarnAll(set.warnings);
}

}  // namespace

Command AddInfoCommand(CLI::App& dltrace) {
  auto o = std::make_shared<InfoOptions>();
  CLI::App* cmd = dltrace.add_subcommand("info", "summarise a trace file or trace set");
  AddTraceArgument(cmd, &o->path, "PATH", "a .dltrace file or a trace-set directory");
  cmd->add_flag("--json", o->json, "print the same facts as JSON");
  cmd->footer("Exit status: 0 complete, 1 error, 3 printed but the trace is incomplete.");
  return {cmd, [o](const Args&) { return RunInfo(*o); }};
}

}  // namespace dltrace::cli
