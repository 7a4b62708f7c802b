// SPDX-License-Identifier: GPL-2.0-only
// What every replay of a schedule must show, whatever carried it (the
// in-memory loopback network, real sockets): every endpoint complete, the
// scheduled bytes moved (totals from the lowering, models::ComputeTotals), no
// step started before its dependencies ended.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dltrace/models/algorithms.h"
#include "dltrace/models/schedule.h"
#include "dltrace/executor/schedule_executor.h"

namespace dltrace::executor {

// One collective C of BYTES on N ranks, lowered with ALGO (and OPTIONS' other settings).
inline models::Schedule Single(const std::string& algo, formats::Collective c, int n, uint64_t bytes,
                               models::LowerOptions options = {}) {
  options.algorithm = algo;
  models::CollectiveSpec spec;
  spec.collective = c;
  spec.bytes = bytes;
  for (int i = 0; i < n; ++i) spec.members.push_back(i);
  return models::LowerSingleCollective(spec, n, options);
}

inline void ExpectSoundRun(const models::Schedule& s, const std::vector<RankResult>& results,
                    const std::string& what) {
  ASSERT_EQ(results.size(), s.ranks.size()) << what;
  auto totals = models::ComputeTotals(s);
  for (size_t e = 0; e < results.size(); ++e) {
    const RankResult& r = results[e];
    EXPECT_TRUE(r.complete) << what << " endpoint " << e << ": " << r.error;
    EXPECT_EQ(r.steps_done, s.ranks[e].steps.size()) << what << " endpoint " << e;
    EXPECT_EQ(r.bytes_received, totals[e].recv_bytes) << what << " endpoint " << e;
    EXPECT_EQ(r.bytes_sent, totals[e].sent_bytes) << what << " endpoint " << e;
    EXPECT_EQ(r.bytes_scheduled_recv, totals[e].recv_bytes) << what;
    const auto& rank = s.ranks[e];
    for (size_t i = 0; i < rank.steps.size(); ++i) {
      ASSERT_TRUE(r.steps[i].valid) << what << " endpoint " << e << " step " << i;
      EXPECT_LE(r.steps[i].start_ns, r.steps[i].end_ns);
      for (const uint32_t* d = rank.deps_begin(rank.steps[i]); d != rank.deps_end(rank.steps[i]); ++d)
        EXPECT_GE(r.steps[i].start_ns, r.steps[*d].end_ns)
            << what << " endpoint " << e << " step " << i << " started before dependency " << *d;
    }
  }
}

}  // namespace dltrace::executor
