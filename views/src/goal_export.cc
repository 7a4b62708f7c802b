// SPDX-License-Identifier: GPL-2.0-only
// GOAL text schedules (LogGOPSim's txt2bin and ATLAHS read them) from a
// lowered schedule. GOAL tags are 32-bit, so the schedule's 64-bit
// (op << 32 | k) tags are renumbered densely, the same way on every rank.
#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "dltrace/formats/op_kind.h"
#include "dltrace/runs/atomic_file.h"
#include "dltrace/views/export.h"

namespace dltrace::views {

bool WriteGoal(const models::Schedule& schedule, const std::string& path, ExportStats* stats,
               std::string* error) {
  const models::DenseTags tags(schedule);
  if (tags.size() > 0xFFFFFFFEull) {
    *error = path + ": the schedule has more distinct message tags than GOAL's 32-bit tags hold";
    return false;
  }

  runs::AtomicFile out(path);
  if (!out.Open(error)) return false;
  FILE* f = out.get();
  std::fprintf(f, "// dltrace GOAL schedule: %zu endpoints, %d iterations, calc in nanoseconds\n",
               schedule.ranks.size(), schedule.iterations);
  std::fprintf(f, "num_ranks %zu\n", schedule.ranks.size());
  for (size_t e = 0; e < schedule.ranks.size(); ++e) {
    std::fprintf(f, "\n%s", models::FormatGoal(schedule, int32_t(e), tags).c_str());
    stats->records += schedule.ranks[e].steps.size();
  }
  stats->bytes = uint64_t(std::ftell(f));
  if (!out.Commit(error)) return false;
  stats->files.push_back(path);
  return true;
}

}  // namespace dltrace::views
