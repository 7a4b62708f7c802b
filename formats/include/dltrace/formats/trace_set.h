// SPDX-License-Identifier: GPL-2.0-only
// A trace set: the per-rank .dltrace files of one run, in one directory
// (or a single file). Loading checks that the ranks fit together.
#pragma once

#include <string>
#include <vector>

#include "dltrace/formats/reader.h"

namespace dltrace::formats {

struct TraceSet {
  std::string path;
  std::vector<RankTrace> ranks;  // usable files, sorted by global rank
  int32_t world_size = 0;
  // One line each: missing ranks, truncated, damaged or footer-less files,
  // files whose recorder could not write everything (disk full, ...), ranks
  // that disagree on the world size. Empty for a complete, consistent set.
  std::vector<std::string> warnings;

  const RankTrace* rank(int32_t global_rank) const;  // null when it has none; ranks must be sorted
};

// Loads PATH, a .dltrace file or a directory of them. Returns false with a
// one-line *error when nothing usable can be read (missing path, no trace
// files, a file that is not a trace, corrupt or from a newer version).
bool LoadTraceSet(const std::string& path, TraceSet* set, std::string* error);

// Lists the .dltrace files of a directory, sorted by name.
std::vector<std::string> ListTraceFiles(const std::string& dir);

}  // namespace dltrace::formats
