// GOAL text schedules (LogGOPSim's txt2bin and ATLAHS read them) from a
// lowered schedule. GOAL tags are 32-bit, so the schedule's 64-bit
// (op << 32 | k) tags are renumbered densely, the same way on every rank.
#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "dltrace/formats/op_kind.h"
#include "dltrace/views/export.h"

namespace dltrace::views {

bool WriteGoal(const models::Schedule& schedule, const std::string& path, ExportStats* stats,
               std::string* error) {
  std::vector<uint64_t> tags;
  for (const auto& r : schedule.ranks)
    for (const auto& s : r.steps)
      if (s.type == models::StepType::kSend) tags.push_back(s.tag);
  std::sort(tags.begin(), tags.end());
  tags.erase(std::unique(tags.begin(), tags.end()), tags.end());
  if (tags.size() > 0xFFFFFFFEull) {
    *error = path + ": the schedule has more distinct message tags than GOAL's 32-bit tags hold";
    return false;
  }
  auto goal_tag = [&](uint64_t tag) {
    return uint32_t(std::lower_bound(tags.begin(), tags.end(), tag) - tags.begin());
  };

  AtomicFile out(path);
  if (!out.Open(error)) return false;
  FILE* f = out.get();
  std::fprintf(f, "// dltrace GOAL schedule: %zu endpoints, %d iterations, calc in nanoseconds\n",
               schedule.ranks.size(), schedule.iterations);
  std::fprintf(f, "num_ranks %zu\n", schedule.ranks.size());
  for (size_t e = 0; e < schedule.ranks.size(); ++e) {
    const models::RankSchedule& r = schedule.ranks[e];
    const models::Endpoint& ep = schedule.endpoints[e];
    std::fprintf(f, "\n// endpoint %zu: %s%s%s\nrank %zu {\n", e,
                 ep.role == models::EndpointRole::kServer ? "parameter server" : "worker",
                 ep.host >= 0 ? " on " : "", ep.host >= 0 ? schedule.hosts[size_t(ep.host)].c_str() : "", e);
    uint32_t last_op = models::kNoOp;
    for (uint32_t i = 0; i < r.steps.size(); ++i) {
      const models::Step& s = r.steps[i];
      if (s.op != last_op && s.op < schedule.ops.size()) {
        const models::ScheduleOp& op = schedule.ops[s.op];
        std::fprintf(f, "// op %u iteration %d %s %" PRIu64 "b %s\n", s.op, op.iteration,
                     formats::OpKindName(op.kind), op.bytes, op.algorithm.c_str());
        last_op = s.op;
      }
      switch (s.type) {
        case models::StepType::kCompute:
          std::fprintf(f, "l%u: calc %" PRIu64 "\n", i, s.duration_ns);
          break;
        case models::StepType::kSend:
          std::fprintf(f, "l%u: send %" PRIu64 "b to %d tag %u\n", i, s.bytes, s.peer, goal_tag(s.tag));
          break;
        case models::StepType::kRecv:
          std::fprintf(f, "l%u: recv %" PRIu64 "b from %d tag %u\n", i, s.bytes, s.peer, goal_tag(s.tag));
          break;
      }
      for (const uint32_t* d = r.deps_begin(s); d != r.deps_end(s); ++d)
        std::fprintf(f, "l%u requires l%u\n", i, *d);
      ++stats->records;
    }
    std::fputs("}\n", f);
  }
  stats->bytes = uint64_t(std::ftell(f));
  if (!out.Commit(error)) return false;
  stats->files.push_back(path);
  return true;
}

}  // namespace dltrace::views
