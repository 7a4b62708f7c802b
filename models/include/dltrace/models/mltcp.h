// SPDX-License-Identifier: GPL-2.0-only
// MLTCP (Rajasekaran et al., HotNets'24): each flow's additive increase is
// scaled by F(bytes_ratio), the fraction of the current iteration's bytes sent
// so far. The bookkeeping and F live here, free of any simulator, so the ns-3
// congestion controls and the flow engine share them.
#pragma once

#include <cstdint>
#include <vector>

#include "dltrace/models/schedule.h"

namespace dltrace::models {

// F(r) = slope * r + intercept, r clamped to [0, 1]: a flow that has sent more
// of its iteration grows its window faster, so the job ahead finishes its
// communication first and competing jobs slide apart over iterations.
// The defaults (F from 0.5 to 1.5, mean 1 over an iteration) keep the average
// aggressiveness of the unmodified algorithm; see README "MLTCP" for the source.
struct MltcpFunction {
  double slope = 1.0;
  double intercept = 0.5;

  double operator()(double bytes_ratio) const {
    const double r = bytes_ratio < 0 ? 0 : (bytes_ratio > 1 ? 1 : bytes_ratio);
    return slope * r + intercept;
  }
};

// Whose bytes the ratio counts.
enum class MltcpScope : uint8_t {
  kJob,       // every endpoint of the job: job bytes sent / job bytes of the iteration
  kEndpoint,  // the sending endpoint alone (what one host could count by itself)
};

// Per iteration of one job, the network bytes each endpoint sends (from the
// schedule: its non-local send steps, by their op's iteration), and how many
// of them were sent so far. An endpoint's current iteration is the latest
// one it began sending; Ratio() is measured in that iteration.
class JobProgress {
 public:
  explicit JobProgress(const Schedule& schedule);

  // ENDPOINT starts sending schedule op OP: its current iteration becomes
  // OP's (never an earlier one), so the first bytes of a new iteration are
  // weighted at ratio 0 before any of them is acknowledged.
  void Begin(int32_t endpoint, uint32_t op);
  // BYTES of ENDPOINT's schedule op OP reached the receiver (MLTCP counts
  // acknowledged bytes); also Begin(ENDPOINT, OP).
  void Sent(int32_t endpoint, uint32_t op, uint64_t bytes);
  // bytes_ratio of ENDPOINT's current iteration in [0, 1]; 0 before it sent anything.
  double Ratio(int32_t endpoint, MltcpScope scope) const;

  int32_t CurrentIteration(int32_t endpoint) const;  // -1 before any bytes
  // Network bytes of ITERATION: of one endpoint, or of the whole job (ENDPOINT = -1).
  uint64_t IterationBytes(int32_t iteration, int32_t endpoint = -1) const;
  uint64_t SentBytes(int32_t iteration, int32_t endpoint = -1) const;

 private:
  size_t Index(int32_t iteration) const;  // iteration -> slot; SIZE_MAX when out of range

  const Schedule* schedule_;
  int32_t first_iteration_ = 0;
  size_t iterations_ = 0;
  // [endpoint * iterations_ + slot]
  std::vector<uint64_t> total_, sent_;
  std::vector<uint64_t> job_total_, job_sent_;  // [slot]
  std::vector<int32_t> current_;               // per endpoint, -1 before any bytes
};

}  // namespace dltrace::models
