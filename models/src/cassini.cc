// SPDX-License-Identifier: GPL-2.0-only
// CASSINI's time shifts: job demand profiles from the alpha-beta estimate,
// per-link rotations on the LCM circle, and offsets through the affinity graph.
#include "dltrace/models/cassini.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "dltrace/models/algorithms.h"
#include "dltrace/models/estimate.h"

namespace dltrace::models {

namespace {

double PositiveMod(double x, double m) {
  if (m <= 0) return 0;
  double r = std::fmod(x, m);
  return r < 0 ? r + m : r;
}

// Adds BPS over [A, B) (clipped to the circle) to the bins of width W.
void AddInterval(std::vector<double>* bins, double w, double a, double b, double bps) {
  const double circle = w * double(bins->size());
  a = std::max(a, 0.0);
  b = std::min(b, circle);
  if (b <= a) return;
  size_t first = size_t(a / w), last = std::min(bins->size() - 1, size_t(b / w));
  for (size_t i = first; i <= last; ++i) {
    const double lo = std::max(a, double(i) * w), hi = std::min(b, double(i + 1) * w);
    if (hi > lo) (*bins)[i] += bps * (hi - lo) / w;
  }
}

// JOB's mean demand in each of BINS bins of CIRCLE_NS on LINK, the job started at START_NS.
std::vector<double> Raster(const JobDemand& job, uint32_t link, double circle_ns, uint32_t bins, double start_ns) {
  std::vector<double> out(bins, 0.0);
  auto it = job.links.find(link);
  if (it == job.links.end() || job.period_ns <= 0) return out;
  const double w = circle_ns / bins;
  const double p = job.period_ns;
  const double s = PositiveMod(start_ns, p);
  const int64_t reps = int64_t(std::ceil(circle_ns / p)) + 1;
  for (const DemandSegment& seg : it->second)
    for (int64_t m = -1; m <= reps; ++m) {
      // Each occurrence that starts on the circle, once; the circle wraps:
      // what runs past its end continues at its start.
      const double a = s + seg.start_ns + double(m) * p, b = s + seg.end_ns + double(m) * p;
      if (a < 0 || a >= circle_ns) continue;
      AddInterval(&out, w, a, b, seg.bps);
      if (b > circle_ns) AddInterval(&out, w, 0, b - circle_ns, seg.bps);
    }
  return out;
}

// Bytes above CAPACITY in TOTAL (bps per bin of W ns).
double Excess(const std::vector<double>& total, double capacity_bps, double w) {
  double e = 0;
  for (double d : total) e += std::max(0.0, d - capacity_bps);
  return e * w * 1e-9 / 8;
}

uint64_t Gcd(uint64_t a, uint64_t b) { return b == 0 ? a : Gcd(b, a % b); }

}  // namespace

JobDemand ProfileJob(const Schedule& s, const std::vector<uint32_t>& hosts, uint32_t job, const TopologyGraph& graph,
                     const Link& network) {
  JobDemand d;
  const Estimate est = EstimateSchedule(s, network);
  const size_t n = est.iterations.size();
  if (n >= 2) {
    d.period_ns = (est.iterations[n - 1].start_ns - est.iterations[0].start_ns) / double(n - 1);
  } else if (n == 1) {
    d.period_ns = est.iterations[0].end_ns;  // from the job's start: its only iteration, gaps included
  }
  if (d.period_ns <= 0) d.period_ns = est.total_ns;
  if (d.period_ns <= 0) return d;
  // Bytes per op and link direction, each send routed as the simulators route it.
  std::vector<std::map<uint32_t, double>> op_bytes(s.ops.size());
  std::map<uint32_t, std::vector<uint32_t>> hops;  // destination host -> HopsTo
  for (size_t e = 0; e < s.ranks.size() && e < hosts.size(); ++e)
    for (const Step& st : s.ranks[e].steps) {
      if (st.type != StepType::kSend || st.local || st.op() >= s.ops.size() || st.peer < 0 ||
          size_t(st.peer) >= hosts.size())
        continue;
      const uint32_t src = hosts[e], dst = hosts[size_t(st.peer)];
      if (src == dst) continue;
      auto h = hops.find(dst);
      if (h == hops.end()) h = hops.emplace(dst, graph.HopsTo(dst)).first;
      uint32_t at = src;
      for (uint32_t l : graph.Route(src, dst, h->second, FlowHash(src, dst, job, st.channel))) {
        const bool from_b = graph.links[l].a != at;
        at = from_b ? graph.links[l].a : graph.links[l].b;
        op_bytes[st.op()][LinkDirection(l, from_b)] += double(st.bytes);
      }
    }
  for (size_t o = 0; o < s.ops.size(); ++o) {
    const TimeSpan& span = est.ops[o];
    if (op_bytes[o].empty() || span.duration_ns() <= 0) continue;
    for (const auto& [link, bytes] : op_bytes[o]) {
      const double bps = bytes * 8 / (span.duration_ns() * 1e-9);
      // The op's span folded onto one period (it may wrap past the period's end).
      const double a = PositiveMod(span.start_ns, d.period_ns);
      double len = std::min(span.duration_ns(), d.period_ns);
      auto& segs = d.links[link];
      const double first = std::min(len, d.period_ns - a);
      segs.push_back({a, a + first, bps});
      if (len > first) segs.push_back({0, len - first, bps});
    }
  }
  // Ops of several iterations fold onto the same period: keep the mean, so a
  // job of N iterations counts its demand once.
  if (n >= 2)
    for (auto& [link, segs] : d.links)
      for (DemandSegment& g : segs) g.bps /= double(n);
  return d;
}

double LinkExcess(const std::vector<JobDemand>& jobs, const std::vector<uint32_t>& on_link, uint32_t link,
                  double capacity_bps, double circle_ns, const std::vector<double>& starts_ns, uint32_t bins) {
  std::vector<double> total(bins, 0.0);
  for (uint32_t j : on_link) {
    const std::vector<double> r = Raster(jobs[j], link, circle_ns, bins, starts_ns[j]);
    for (uint32_t b = 0; b < bins; ++b) total[b] += r[b];
  }
  return Excess(total, capacity_bps, circle_ns / bins);
}

CassiniPlan PlaceCassini(const std::vector<JobDemand>& jobs, const std::vector<double>& capacity_bps,
                         const CassiniOptions& options) {
  CassiniPlan plan;
  const size_t nj = jobs.size();
  plan.start_ns.assign(nj, 0.0);
  const uint32_t bins = std::max<uint32_t>(options.bins, 1);
  // Shared link directions: the affinity graph's link vertices with two jobs or more.
  std::map<uint32_t, std::vector<uint32_t>> users;
  for (uint32_t j = 0; j < nj; ++j)
    for (const auto& [link, segs] : jobs[j].links)
      if (!segs.empty() && jobs[j].period_ns > 0) users[link].push_back(j);
  const std::vector<double> zeros(nj, 0.0);
  for (const auto& [link, on] : users) {
    if (on.size() < 2 || link / 2 >= capacity_bps.size()) continue;
    LinkShift ls;
    ls.link = link;
    ls.jobs = on;
    // The circle: the LCM of the periods, rounded to the quantum.
    const double q = std::max(options.quantum_ns, 1.0);
    uint64_t lcm = 1;
    double longest = 0;
    for (uint32_t j : on) {
      const uint64_t p = std::max<uint64_t>(1, uint64_t(std::llround(jobs[j].period_ns / q)));
      lcm = lcm / Gcd(lcm, p) * p;
      longest = std::max(longest, jobs[j].period_ns);
      if (double(lcm) * q > double(options.max_lcm_periods) * longest * 2) break;
    }
    ls.circle_ns = double(lcm) * q;
    if (ls.circle_ns > double(options.max_lcm_periods) * longest) {
      plan.notes.push_back("link direction " + std::to_string(link) +
                           ": the periods' LCM is too long; its circle is the longest period");
      ls.circle_ns = longest;
    }
    const double w = ls.circle_ns / bins;
    const double cap = capacity_bps[link / 2];
    ls.excess_before = LinkExcess(jobs, on, link, cap, ls.circle_ns, zeros, bins);
    // Place the jobs one by one, biggest demand first, each at the rotation
    // (a multiple of the bin width, below its period) that adds the least
    // overload to those placed; ties go to the smallest rotation.
    std::vector<uint32_t> order(on.begin(), on.end());
    auto bytes = [&](uint32_t j) {
      double b = 0;
      for (const DemandSegment& g : jobs[j].links.at(link)) b += g.bps * (g.end_ns - g.start_ns);
      return b * ls.circle_ns / jobs[j].period_ns;
    };
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return bytes(a) > bytes(b); });
    std::vector<double> total(bins, 0.0);
    std::map<uint32_t, double> shift;
    for (uint32_t j : order) {
      const std::vector<double> r = Raster(jobs[j], link, ls.circle_ns, bins, 0);
      const uint32_t steps = std::max<uint32_t>(1, uint32_t(std::ceil(jobs[j].period_ns / w - 1e-9)));
      uint32_t best_k = 0;
      double best = 0;
      for (uint32_t k = 0; k < std::min(steps, bins); ++k) {
        double e = 0;
        for (uint32_t b = 0; b < bins; ++b) e += std::max(0.0, total[b] + r[(b + bins - k) % bins] - cap);
        if (k == 0 || e < best - 1e-9 * std::max(1.0, best)) {
          best = e;
          best_k = k;
        }
      }
      for (uint32_t b = 0; b < bins; ++b) total[b] += r[(b + bins - best_k) % bins];
      shift[j] = double(best_k) * w;
    }
    for (uint32_t j : on) ls.shift_ns.push_back(shift[j]);
    plan.links.push_back(ls);
  }
  // Most contended links first: they fix the offsets; later links only join
  // jobs not yet related (the affinity graph traversed from its heaviest edges).
  std::stable_sort(plan.links.begin(), plan.links.end(),
                   [](const LinkShift& a, const LinkShift& b) { return a.excess_before > b.excess_before; });
  std::vector<int32_t> comp(nj);
  std::iota(comp.begin(), comp.end(), 0);
  for (const LinkShift& ls : plan.links) {
    const uint32_t a = ls.jobs[0];
    const double origin = plan.start_ns[a] - ls.shift_ns[0];  // where this link's circle starts
    for (size_t i = 1; i < ls.jobs.size(); ++i) {
      const uint32_t k = ls.jobs[i];
      const double want = origin + ls.shift_ns[i];
      if (comp[k] != comp[a]) {
        const double delta = want - plan.start_ns[k];
        const int32_t old = comp[k];
        for (uint32_t j = 0; j < nj; ++j)
          if (comp[j] == old) {
            comp[j] = comp[a];
            plan.start_ns[j] += delta;
          }
      } else {
        const double p = jobs[k].period_ns;
        const double off = PositiveMod(want - plan.start_ns[k], p);
        if (std::min(off, p - off) > ls.circle_ns / bins)
          plan.notes.push_back("a loop in the affinity graph: on link direction " + std::to_string(ls.link) +
                               " job " + std::to_string(k) + " would start " + std::to_string(off * 1e-6) +
                               " ms later; kept the shift of a more contended link");
      }
    }
  }
  // Each group of related jobs starts from its lowest-numbered job; offsets within a period.
  std::set<int32_t> seen;
  std::vector<double> base(nj, 0.0);
  for (uint32_t j = 0; j < nj; ++j)
    if (seen.insert(comp[j]).second) base[size_t(comp[j])] = plan.start_ns[j];
  for (uint32_t j = 0; j < nj; ++j)
    plan.start_ns[j] = PositiveMod(plan.start_ns[j] - base[size_t(comp[j])], jobs[j].period_ns);
  for (LinkShift& ls : plan.links)
    ls.excess_after = LinkExcess(jobs, ls.jobs, ls.link, capacity_bps[ls.link / 2], ls.circle_ns, plan.start_ns, bins);
  return plan;
}

}  // namespace dltrace::models

namespace dltrace::models {

Schedule PeriodicExchange(int32_t endpoints, int32_t iterations, uint64_t compute_ns, uint64_t bytes) {
  Schedule s;
  s.world_size = endpoints;
  s.iterations = iterations;
  s.ranks.resize(size_t(endpoints));
  for (int32_t e = 0; e < endpoints; ++e) {
    s.endpoints.push_back({EndpointRole::kWorker, e, e});
    s.hosts.push_back("h" + std::to_string(e));
  }
  StepBuilder b(&s);
  std::vector<std::vector<uint32_t>> last(static_cast<size_t>(endpoints));
  for (int32_t it = 0; it < iterations; ++it) {
    ScheduleOp compute;
    compute.source = ScheduleOp::Source::kCompute;
    compute.iteration = it;
    s.ops.push_back(compute);
    b.BeginOp(uint32_t(s.ops.size() - 1));
    for (int32_t e = 0; e < endpoints; ++e) last[size_t(e)] = {b.Compute(e, compute_ns, DepList(last[size_t(e)]))};
    b.EndOp();
    ScheduleOp exchange;
    exchange.source = ScheduleOp::Source::kSynthetic;
    exchange.iteration = it;
    exchange.bytes = bytes;
    s.ops.push_back(exchange);
    b.BeginOp(uint32_t(s.ops.size() - 1));
    std::vector<std::vector<uint32_t>> next(static_cast<size_t>(endpoints));
    for (int32_t e = 0; e < endpoints; ++e) {
      const int32_t to = (e + 1) % endpoints;
      const StepBuilder::Pair p = b.Transfer(e, to, bytes, 0, DepList(last[size_t(e)]), DepList(last[size_t(to)]));
      next[size_t(e)].push_back(p.send);
      next[size_t(to)].push_back(p.recv);
    }
    b.EndOp();
    last = std::move(next);
  }
  return s;
}

}  // namespace dltrace::models
