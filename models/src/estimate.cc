// SPDX-License-Identifier: GPL-2.0-only
// The alpha-beta estimate: a sweep over all endpoints that runs each step once
// its dependencies (and, for a receive, its matching send) have finished.
#include "dltrace/models/estimate.h"

#include <algorithm>
#include <unordered_map>

#include "dltrace/models/iteration_time.h"

namespace dltrace::models {

namespace {

struct Key {
  int32_t from, to;
  uint64_t tag;
  bool operator==(const Key& o) const { return from == o.from && to == o.to && tag == o.tag; }
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    return std::hash<uint64_t>()(k.tag * 0x9E3779B97F4A7C15ull ^ (uint64_t(uint32_t(k.from)) << 32) ^
                                 uint32_t(k.to));
  }
};

}  // namespace

Estimate EstimateSchedule(const Schedule& s, const Link& network) {
  Estimate est;
  const size_t n = s.ranks.size();
  est.ops.assign(s.ops.size(), {1e300, -1e300});
  est.iterations.assign(size_t(std::max(s.iterations, 1)), {1e300, -1e300});
  std::vector<std::vector<double>> finish(n);
  for (size_t e = 0; e < n; ++e) finish[e].resize(s.ranks[e].steps.size());
  std::vector<size_t> cursor(n, 0);
  // Arrival time of each sent message not yet received.
  std::unordered_map<Key, double, KeyHash> arrivals;
  // An op split over channels (NCCL's, or --channels) sends its channels'
  // messages over one host link, not one link each: those sends take the
  // sender host's link in turn (network sends only; the local link is a
  // fixed-time model, as the executors run it).
  std::vector<char> channelled(s.ops.size(), 0);
  for (const RankSchedule& r : s.ranks)
    for (const Step& st : r.steps)
      if (st.channel > 0 && st.op() < s.ops.size()) channelled[st.op()] = 1;
  std::vector<double> host_free(s.hosts.size() + 1, 0.0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t e = 0; e < n; ++e) {
      const RankSchedule& r = s.ranks[e];
      size_t& c = cursor[e];
      for (; c < r.steps.size(); ++c) {
        const Step& st = r.steps[c];
        double start = 0;
        for (const uint32_t* d = r.deps_begin(st); d != r.deps_end(st); ++d)
          start = std::max(start, finish[e][*d]);
        double end = start;
        if (st.type == StepType::kCompute) {
          end = start + double(st.duration_ns());
        } else if (st.type == StepType::kSend) {
          if (!st.local && st.op() < s.ops.size() && channelled[st.op()] && network.gbps > 0) {
            const int32_t h = s.endpoints[e].host;
            double& free = host_free[h >= 0 ? size_t(h) : s.hosts.size()];
            free = std::max(start, free) + double(st.bytes) * 8.0 / network.gbps;
            end = free + network.latency_ns;
          } else {
            end = start + TransferNs(st.local ? s.local_link : network, st.bytes);
          }
          arrivals[{int32_t(e), st.peer, st.tag}] = end;
        } else {
          auto it = arrivals.find({st.peer, int32_t(e), st.tag});
          if (it == arrivals.end()) break;  // its send has not run yet
          end = std::max(start, it->second);
          start = std::max(start, it->second - TransferNs(st.local ? s.local_link : network, st.bytes));
          arrivals.erase(it);
        }
        finish[e][c] = end;
        progress = true;
        est.total_ns = std::max(est.total_ns, end);
        if (st.op() < s.ops.size()) {
          if (st.type != StepType::kCompute) {
            TimeSpan& o = est.ops[st.op()];
            o.start_ns = std::min(o.start_ns, start);
            o.end_ns = std::max(o.end_ns, end);
          }
          size_t it = size_t(std::clamp(s.ops[st.op()].iteration, 0, std::max(s.iterations, 1) - 1));
          TimeSpan& i = est.iterations[it];
          i.start_ns = std::min(i.start_ns, start);
          i.end_ns = std::max(i.end_ns, end);
        }
      }
    }
  }
  for (size_t e = 0; e < n; ++e)
    if (cursor[e] < s.ranks[e].steps.size()) est.complete = false;
  for (auto* spans : {&est.ops, &est.iterations})
    for (TimeSpan& t : *spans)
      if (t.end_ns < t.start_ns) t = {0, 0};
  IterationClock clock(est.iterations.size());
  for (size_t i = 0; i < est.iterations.size(); ++i)
    if (est.iterations[i].end_ns > 0) clock.NoteEnd(long(i), est.iterations[i].end_ns);
  est.iteration_ns = clock.TimesNs(0);
  return est;
}

}  // namespace dltrace::models
