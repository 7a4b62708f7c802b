// dltrace info PATH [--json]: what a trace file or trace set holds.
#include <cstdio>

#include "commands.h"
#include "dltrace/formats/trace_set.h"
#include "trace_summary.h"

namespace dltrace::cli {

int RunInfo(const Args& args) {
  const Command& self = FindCommand("info");
  std::string path;
  bool json = false;
  for (const auto& a : args) {
    if (a == "--json") {
      json = true;
    } else if (!a.empty() && a[0] == '-') {
      return UsageError(self, "unknown option " + a);
    } else if (path.empty()) {
      path = a;
    } else {
      return UsageError(self, "more than one PATH given");
    }
  }
  if (path.empty()) return UsageError(self, "missing PATH");

  formats::TraceSet set;
  std::string error;
  if (!formats::LoadTraceSet(path, &set, &error)) return Fail(error);
  TraceSummary summary = Summarize(set);
  std::fputs(json ? SummaryJson(summary).c_str() : SummaryText(summary).c_str(), stdout);
  std::fflush(stdout);
  for (const auto& w : set.warnings) Warn(w);
  return set.warnings.empty() ? kExitOk : kExitIncomplete;
}

}  // namespace dltrace::cli
