// SPDX-License-Identifier: GPL-2.0-only
// The HTML report of a recorded job: one self-contained file (inline CSS,
// JavaScript, the charting library and data; charts drawn in the page with
// uPlot), no network needed.
#pragma once

#include <string>
#include <vector>

#include "dltrace/models/job.h"
#include "dltrace/runs/run.h"

namespace dltrace::views {

struct ReportOptions {
  std::vector<runs::RunTimes> runs;  // replayed / simulated runs of the same job, drawn next to the recorded one
  size_t timeline_ops = 20000;  // at most this many ops in the timeline (the earliest)
};

// The charts a report holds, by element id ("matrix", "timeline", ...): what
// --png renders one by one and the browser test checks.
std::vector<std::string> ReportChartIds(const ReportOptions& options);

// Writes the report to PATH (through a temporary name). NOTES gets what the
// report leaves out and why (e.g. no flow completion times).
bool WriteReport(const models::Job& job, const ReportOptions& options, const std::string& path,
                 std::vector<std::string>* notes, std::string* error);

// The page's parts, compiled in from views/report/ (null-terminated lists of
// pieces): its own HTML, CSS and script, and the vendored uPlot (vendor/).
extern const char* const kReportHtml[];
extern const char* const kReportCss[];
extern const char* const kReportJs[];
extern const char* const kUplotCss[];
extern const char* const kUplotJs[];

}  // namespace dltrace::views
