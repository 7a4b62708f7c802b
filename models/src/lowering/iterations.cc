// SPDX-License-Identifier: GPL-2.0-only
// Finding iterations: the period of a rank's op signatures, or the period a
// writer stored in the header, split into per-op iteration numbers.
#include <algorithm>
#include <cstdlib>

#include "dltrace/models/lower.h"
#include "recorded_ops.h"

namespace dltrace::models {

IterationPattern DetectIterations(const std::vector<uint64_t>& sig) {
  const size_t m = sig.size();
  for (size_t period = 1; 2 * period <= m; ++period) {
    for (size_t prefix = 0; prefix <= 16 && prefix + 2 * period <= m; ++prefix) {
      size_t run = 0;
      while (prefix + run + period < m && sig[prefix + run] == sig[prefix + run + period]) ++run;
      // At least two whole periods, covering nearly all that follows the prefix
      // (a few trailing ops, like a final barrier, need not repeat).
      if (run >= period && double(run + period) >= 0.9 * double(m - prefix))
        return {period, prefix};
    }
  }
  return {};
}

namespace lowering {

std::vector<int32_t> AssignIterations(const MergedTrace& m, const LowerOptions& options,
                                      const RecordedOps& rec, Schedule* s) {
  std::vector<int32_t> iteration_of(s->ops.size(), -1);
  int32_t ref = -1;
  for (int32_t r = 0; r < m.world_size && ref < 0; ++r)
    if (!rec.items[size_t(r)].empty()) ref = r;
  s->iterations = 1;
  if (ref < 0) return iteration_of;
  const auto& items = rec.items[size_t(ref)];
  IterationPattern pattern;
  if (options.iteration_ops > 0) pattern.period = size_t(options.iteration_ops);
  // A writer's attribute gives each rank's own period (pipeline stages of a
  // hybrid job make different numbers of calls per iteration).
  auto attribute_period = [&](int32_t r) -> size_t {
    if (options.iteration_ops > 0 || !m.rank(r)) return 0;
    for (const auto& [k, v] : m.rank(r)->header.attributes)
      if (k == kIterationOpsAttribute) return size_t(std::strtoull(v.c_str(), nullptr, 10));
    return 0;
  };
  if (size_t p = attribute_period(ref)) pattern.period = p;
  if (!pattern.period) {
    std::vector<uint64_t> sig;
    for (const Item& it : items) {
      const ScheduleOp& op = s->ops[it.ops.front()];
      sig.push_back((uint64_t(op.kind) << 56) ^ (uint64_t(uint32_t(op.comm)) << 40) ^ op.bytes);
    }
    pattern = DetectIterations(sig);
  }
  if (!pattern.period) return iteration_of;
  const size_t n = items.size() > pattern.prefix ? items.size() - pattern.prefix : 0;
  s->iterations = int32_t(std::max<size_t>(1, n / pattern.period));
  for (size_t i = 0; i < items.size(); ++i) {
    size_t it = i < pattern.prefix ? 0 : (i - pattern.prefix) / pattern.period;
    for (uint32_t x : items[i].ops)
      iteration_of[x] = int32_t(std::min<size_t>(it, size_t(s->iterations - 1)));
  }
  for (int32_t r = ref + 1; r < m.world_size; ++r) {
    const size_t period = attribute_period(r);
    if (!period) continue;
    const auto& own = rec.items[size_t(r)];
    for (size_t i = 0; i < own.size(); ++i)
      for (uint32_t x : own[i].ops)
        if (iteration_of[x] < 0)
          iteration_of[x] = int32_t(std::min<size_t>(i / period, size_t(s->iterations - 1)));
  }
  return iteration_of;
}

}  // namespace lowering
}  // namespace dltrace::models
