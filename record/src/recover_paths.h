// SPDX-License-Identifier: GPL-2.0-only
// The recovery of killed runs' raw files (DLTRACE_RAW), as `dltrace-recover`
// and `dltrace recover` run it: one home for both.
#pragma once

#include <string>
#include <vector>

namespace dltrace::record {

// For each of PATHS (a raw file, a trace file whose process was killed, or a
// trace directory: each rank file with a raw file left), appends the events
// the raw file holds beyond the trace, writes its footer and removes the
// raw file; one line on stdout per raw file recovered (or that a directory
// had none left), one line on stderr per failure, prefixed WHO. 0, or 1 if
// any failed.
int RecoverPaths(const std::vector<std::string>& paths, const char* who);

}  // namespace dltrace::record
