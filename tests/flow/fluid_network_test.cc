// SPDX-License-Identifier: GPL-2.0-only
// FluidNetwork (dltrace's own incremental max-min flow network): its finish
// times against shares worked in closed form, and on random networks against
// a reference written here that re-solves max-min from scratch at every event.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "dltrace/flow/fluid_network.h"

namespace dltrace::flow {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Closed forms: the network and the hand formula differ only by rounding.
constexpr double kClose = 1e-9;
double Tol(double want) { return kClose * std::fabs(want) + 1e-15; }

FluidParams Params(double bandwidth_factor, double weight_s, double latency_factor = 1.0) {
  FluidParams p;
  p.bandwidth_factor = bandwidth_factor;
  p.weight_s = weight_s;
  p.latency_factor = latency_factor;
  return p;
}

// Starts each of FLOWS (route, bytes) now and runs NET to the end; returns
// the time each flow's DONE ran (-1: never).
std::vector<double> RunToEnd(FluidNetwork& net, const std::vector<std::pair<uint32_t, double>>& flows,
                             bool coalesce = true) {
  std::vector<double> end(flows.size(), -1);
  for (size_t i = 0; i < flows.size(); ++i)
    net.StartFlow(flows[i].first, flows[i].second, [&net, &end, i] { end[i] = net.now(); }, coalesce);
  while (net.Step()) {
  }
  return end;
}

// Two flows that share from T0 moving RATE_A and RATE_B bytes/s;
// the one that ends first leaves the other ALONE_A or ALONE_B bytes/s. Their
// end times.
std::pair<double, double> SharedThenAlone(double t0, double bytes_a, double rate_a, double alone_a, double bytes_b,
                                          double rate_b, double alone_b) {
  const double a = t0 + bytes_a / rate_a, b = t0 + bytes_b / rate_b;
  if (a <= b) return {a, a + (bytes_b - rate_b * (a - t0)) / alone_b};
  return {b + (bytes_a - rate_a * (b - t0)) / alone_a, b};
}

TEST(FluidNetwork, OneFlowWaitsItsLatencyThenMovesAtTheFactoredBandwidth) {
  const double c = 1e9, bytes = 1e6;
  struct Case {
    double latency, weight_s, bandwidth_factor, latency_factor;
  };
  for (const Case& k : {Case{0, 0, 1, 1}, Case{0, 20537, 0.945, 1}, Case{1e-6, 0, 1, 1},
                        Case{1e-6, 0, 0.945, 1}, Case{1e-6, 0, 0.945, 2}, Case{2e-5, 20537, 0.945, 1.5}}) {
    SCOPED_TRACE(testing::Message() << "latency " << k.latency << " weight-S " << k.weight_s << " bandwidth factor "
                                    << k.bandwidth_factor << " latency factor " << k.latency_factor);
    FluidNetwork net({c}, {k.latency}, Params(k.bandwidth_factor, k.weight_s, k.latency_factor));
    const uint32_t route = net.AddRoute({0});
    const std::vector<double> end = RunToEnd(net, {{route, bytes}});
    const double want = k.latency * k.latency_factor + bytes / (c * k.bandwidth_factor);
    EXPECT_NEAR(end[0], want, Tol(want));
    EXPECT_EQ(net.flows_started(), 1u);
    EXPECT_EQ(net.flows_active(), 0u);
    EXPECT_EQ(net.NextTime(), kInf);
  }
}

// A flow that waited OVERLAP behind an earlier one of its connection pays
// only the rest of its latency (none when it waited longer than it).
TEST(FluidNetwork, AFlowThatWaitedPaysOnlyTheRestOfItsLatency) {
  const double c = 1e9, lat = 2e-6, f = 0.945, bytes = 1e6;
  for (const double overlap : {0.0, 0.5e-6, 2e-6, 5e-6}) {
    SCOPED_TRACE(testing::Message() << "overlap " << overlap);
    FluidNetwork net({c}, {lat}, Params(f, 20537));
    const uint32_t route = net.AddRoute({0});
    double end = -1;
    net.StartFlow(route, bytes, [&]() { end = net.now(); }, true, overlap);
    while (net.Step()) {
    }
    const double want = std::max(0.0, lat - overlap) + bytes / (c * f);
    EXPECT_NEAR(end, want, Tol(want));
  }
}

// Two equal flows started together on one route join only when the same
// latency is left to both.
TEST(FluidNetwork, FlowsWithDifferentLatencyLeftDoNotJoin) {
  const double c = 1e9, lat = 2e-6, f = 0.945, bytes = 1e6;
  FluidNetwork net({c}, {lat}, Params(f, 0));
  const uint32_t route = net.AddRoute({0});
  std::vector<double> end(2, -1);
  net.StartFlow(route, bytes, [&]() { end[0] = net.now(); }, true, 0);
  net.StartFlow(route, bytes, [&]() { end[1] = net.now(); }, true, lat);
  while (net.Step()) {
  }
  EXPECT_EQ(net.flows_joined(), 0u);
  // The second moves alone for the first's latency, then they share; it ends first.
  const double alone = lat * c * f;  // bytes it moved alone
  const double shared_end = lat + 2 * (bytes - alone) / (c * f);  // both at half until it is done
  EXPECT_NEAR(end[1], shared_end, Tol(shared_end));
  const double want0 = shared_end + alone / (c * f);
  EXPECT_NEAR(end[0], want0, Tol(want0));
}

TEST(FluidNetwork, TwoEqualFlowsOnOneLinkEachGetHalf) {
  const double c = 1e9, lat = 1e-6, f = 0.945, bytes = 1e6;
  FluidNetwork net({c}, {lat}, Params(f, 0));
  const uint32_t route = net.AddRoute({0});
  const std::vector<double> end = RunToEnd(net, {{route, bytes}, {route, bytes}}, /*coalesce=*/false);
  const double want = lat + 2 * bytes / (c * f);
  EXPECT_NEAR(end[0], want, Tol(want));
  EXPECT_NEAR(end[1], want, Tol(want));
}

TEST(FluidNetwork, TheSmallerFlowEndsFirstAndLeavesTheLinkToTheOther) {
  const double c = 1e9, lat = 1e-6, f = 0.945, small = 1e6, large = 3e6;
  FluidNetwork net({c}, {lat}, Params(f, 0));
  const uint32_t route = net.AddRoute({0});
  const std::vector<double> end = RunToEnd(net, {{route, large}, {route, small}});
  // Half each until the small one ends (each moved SMALL), then all of it.
  const double want_small = lat + 2 * small / (c * f);
  const double want_large = lat + (small + large) / (c * f);
  EXPECT_NEAR(end[1], want_small, Tol(want_small));
  EXPECT_NEAR(end[0], want_large, Tol(want_large));
}

TEST(FluidNetwork, SharesOfABottleneckFollowTheInverseOfTheRouteLatency) {
  // Link 0 (1 GB/s) is shared; A reaches it over link 1 (1 us), B over link
  // 2 (3 us). Weight-S 0: penalties are the route latencies, 2 us and 4 us.
  // A starts 2 us after B so both start sharing at 4 us.
  const double c = 1e9, f = 0.945, bytes = 1e6;
  FluidNetwork net({c, 1e10, 1e10}, {1e-6, 1e-6, 3e-6}, Params(f, 0));
  const uint32_t a = net.AddRoute({0, 1}), b = net.AddRoute({0, 2});
  std::vector<double> end(2, -1);
  net.At(2e-6, [&] { net.StartFlow(a, bytes, [&] { end[0] = net.now(); }); });
  net.StartFlow(b, bytes, [&] { end[1] = net.now(); });
  while (net.Step()) {
  }
  const double pa = 2e-6, pb = 4e-6, t0 = 4e-6;
  const double xa = c * (1 / pa) / (1 / pa + 1 / pb), xb = c - xa;  // 2C/3 and C/3
  const auto [want_a, want_b] = SharedThenAlone(t0, bytes, xa * f, c * f, bytes, xb * f, c * f);
  EXPECT_LT(want_a, want_b);
  EXPECT_NEAR(end[0], want_a, Tol(want_a));
  EXPECT_NEAR(end[1], want_b, Tol(want_b));
}

TEST(FluidNetwork, SharesOfABottleneckFollowTheInverseOfTheWeightSPenalty) {
  // Every route is 2 us; weight-S / bandwidth summed over the route is added
  // to it: A crosses links 0 (1 GB/s) and 1 (2 GB/s), B links 0 and 2 (4 GB/s).
  const double ws = 20537, c = 1e9, f = 0.945, lat = 2e-6, bytes_a = 2e6, bytes_b = 1e6;
  FluidNetwork net({c, 2e9, 4e9}, {1e-6, 1e-6, 1e-6}, Params(f, ws));
  const uint32_t a = net.AddRoute({0, 1}), b = net.AddRoute({0, 2});
  const std::vector<double> end = RunToEnd(net, {{a, bytes_a}, {b, bytes_b}});
  const double pa = lat + ws / c + ws / 2e9, pb = lat + ws / c + ws / 4e9;
  const double xa = c * (1 / pa) / (1 / pa + 1 / pb), xb = c - xa;
  const auto [want_a, want_b] = SharedThenAlone(lat, bytes_a, xa * f, c * f, bytes_b, xb * f, c * f);
  EXPECT_NEAR(end[0], want_a, Tol(want_a));
  EXPECT_NEAR(end[1], want_b, Tol(want_b));
}

TEST(FluidNetwork, FlowsWithoutLatencyShareWithPenaltyOne) {
  // As in SimGrid, a flow with no latency to pay shares from its start with
  // sharing penalty 1, whatever weight-S would add: the two routes of the
  // test above, without latency, split link 0 evenly.
  const double ws = 20537, c = 1e9, f = 0.945, bytes_a = 2e6, bytes_b = 1e6;
  FluidNetwork net({c, 2e9, 4e9}, {0, 0, 0}, Params(f, ws));
  const uint32_t a = net.AddRoute({0, 1}), b = net.AddRoute({0, 2});
  const std::vector<double> end = RunToEnd(net, {{a, bytes_a}, {b, bytes_b}});
  const double want_b = 2 * bytes_b / (c * f), want_a = (bytes_a + bytes_b) / (c * f);
  EXPECT_NEAR(end[0], want_a, Tol(want_a));
  EXPECT_NEAR(end[1], want_b, Tol(want_b));
}

TEST(FluidNetwork, MaxMinLeavesTheRestOfAnUnsaturatedLinkToItsOtherFlow) {
  // Links a (1 GB/s), b (3 GB/s), c (100 GB/s), 1 us each. Flow A crosses
  // a and b, B a and c, C b and c: every route is 2 us, so the penalties are
  // equal and this is plain max-min. Link a limits A and B to 0.5 GB/s; C
  // takes the 2.5 GB/s left on b, then all 3 GB/s once A is done.
  const double ca = 1e9, cb = 3e9, f = 0.945, lat = 2e-6;
  const double bytes_a = 1e6, bytes_b = 1e6, bytes_c = 1e7;
  FluidNetwork net({ca, cb, 1e11}, {1e-6, 1e-6, 1e-6}, Params(f, 0));
  const uint32_t a = net.AddRoute({0, 1}), b = net.AddRoute({0, 2}), c = net.AddRoute({1, 2});
  const std::vector<double> end = RunToEnd(net, {{a, bytes_a}, {b, bytes_b}, {c, bytes_c}});
  const double xa = ca / 2, xc = cb - xa;
  const double t1 = lat + bytes_a / (xa * f);
  const double t2 = t1 + (bytes_c - xc * f * (t1 - lat)) / (cb * f);
  EXPECT_NEAR(end[0], t1, Tol(t1));
  EXPECT_NEAR(end[1], t1, Tol(t1));
  EXPECT_NEAR(end[2], t2, Tol(t2));
}

TEST(FluidNetwork, TcpGammaBoundsAFlowOnALongRoute) {
  // Two 10 GB/s links of 0.4 and 0.6 ms: TCP-gamma / (2 * 1 ms) is about
  // 2.1 GB/s, below either link.
  const double f = 0.945, bytes = 1e7, gamma = 4194304, lat = 1e-3;
  FluidParams params = Params(f, 0);
  params.tcp_gamma = gamma;
  FluidNetwork net({1e10, 1e10}, {4e-4, 6e-4}, params);
  const uint32_t route = net.AddRoute({0, 1});
  const std::vector<double> end = RunToEnd(net, {{route, bytes}});
  const double want = lat + bytes / (gamma / (2 * lat) * f);
  EXPECT_NEAR(end[0], want, Tol(want));
}

TEST(FluidNetwork, EqualFlowsStartedTogetherJoinAndEndWhenSeparateFlowsWould) {
  // On link 0: route R carries B, B and 2B, route Q (link 0 and a link with no
  // latency, so the same latency and penalty) B. Four flows share C: the
  // three of B end at lat + 4B / C, the one of 2B B / C later. With
  // coalescing the two equal flows on R go as one of multiplicity 2.
  const double c = 1e9, lat = 1e-6, f = 0.945, bytes = 1e6;
  const double want_b = lat + 4 * bytes / (c * f), want_2b = want_b + bytes / (c * f);
  for (const bool coalesce : {true, false}) {
    SCOPED_TRACE(testing::Message() << "coalesce " << coalesce);
    FluidNetwork net({c, 1e11}, {lat, 0}, Params(f, 0));
    const uint32_t r = net.AddRoute({0}), q = net.AddRoute({0, 1});
    std::vector<double> end(4, -1);
    const std::vector<std::pair<uint32_t, double>> flows = {{r, bytes}, {r, bytes}, {r, 2 * bytes}, {q, bytes}};
    for (size_t i = 0; i < flows.size(); ++i)
      net.StartFlow(flows[i].first, flows[i].second, [&net, &end, i] { end[i] = net.now(); }, coalesce);
    EXPECT_EQ(net.flows_started(), 4u);
    EXPECT_EQ(net.flows_joined(), coalesce ? 1u : 0u);
    ASSERT_TRUE(net.Step());  // the latency paid
    EXPECT_NEAR(net.now(), lat, Tol(lat));
    EXPECT_EQ(net.flows_active(), coalesce ? 3u : 4u);
    while (net.Step()) {
    }
    EXPECT_NEAR(end[0], want_b, Tol(want_b));
    EXPECT_NEAR(end[1], want_b, Tol(want_b));
    EXPECT_NEAR(end[2], want_2b, Tol(want_2b));
    EXPECT_NEAR(end[3], want_b, Tol(want_b));
    EXPECT_EQ(net.flows_active(), 0u);
  }
}

TEST(FluidNetwork, EqualFlowsStartedByTwoCallbacksAtOneInstantJoin) {
  const double c = 1e9, lat = 1e-6, f = 0.945, bytes = 1e6, t = 1e-3;
  FluidNetwork net({c}, {lat}, Params(f, 0));
  const uint32_t route = net.AddRoute({0});
  std::vector<double> end(2, -1);
  net.At(t, [&] { net.StartFlow(route, bytes, [&] { end[0] = net.now(); }); });
  net.At(t, [&] { net.StartFlow(route, bytes, [&] { end[1] = net.now(); }); });
  while (net.Step()) {
  }
  EXPECT_EQ(net.flows_joined(), 1u);
  const double want = t + lat + 2 * bytes / (c * f);
  EXPECT_NEAR(end[0], want, Tol(want));
  EXPECT_NEAR(end[1], want, Tol(want));
}

TEST(FluidNetwork, CallbacksRunInTimeOrderAndInTheOrderScheduledAtOneTime) {
  FluidNetwork net({1e9}, {1e-6});
  std::vector<std::pair<std::string, double>> ran;
  auto note = [&](const std::string& name) { return [&ran, &net, name] { ran.emplace_back(name, net.now()); }; };
  net.At(3, note("late"));
  net.At(1, note("a"));
  net.At(2, note("mid"));
  net.At(1, note("b"));
  net.At(0, note("zero"));
  EXPECT_EQ(net.NextTime(), 0.0);
  while (net.Step()) {
  }
  const std::vector<std::pair<std::string, double>> want = {{"zero", 0}, {"a", 1}, {"b", 1}, {"mid", 2}, {"late", 3}};
  EXPECT_EQ(ran, want);
  EXPECT_EQ(net.now(), 3.0);
  EXPECT_EQ(net.NextTime(), kInf);
  EXPECT_FALSE(net.Step());
}

TEST(FluidNetwork, ThousandsOfCallbacksRunInTimeOrderThenInTheOrderScheduled) {
  // Enough pending events for the event queue's deeper levels, on a grid of
  // 50 instants so that most share their time with others.
  FluidNetwork net({1e9}, {1e-6});
  std::mt19937 rng(43);
  const size_t n = 5000;
  std::vector<std::pair<double, size_t>> scheduled;
  std::vector<size_t> ran;
  for (size_t i = 0; i < n; ++i) {
    const double t = 1e-3 * double(std::uniform_int_distribution<int>(0, 49)(rng));
    scheduled.emplace_back(t, i);
    net.At(t, [&ran, i] { ran.push_back(i); });
  }
  while (net.Step()) {
  }
  std::stable_sort(scheduled.begin(), scheduled.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<size_t> want;
  for (const auto& [t, i] : scheduled) want.push_back(i);
  EXPECT_EQ(ran, want);
}

TEST(FluidNetwork, ACallbackScheduledForNowRunsInTheSameInstantAfterThoseDue) {
  FluidNetwork net({1e9}, {1e-6});
  std::vector<std::pair<std::string, double>> ran;
  auto note = [&](const std::string& name) { return [&ran, &net, name] { ran.emplace_back(name, net.now()); }; };
  net.At(1, [&] {
    ran.emplace_back("a", net.now());
    net.At(net.now(), note("from a, now"));
    net.At(1.5, note("from a, later"));
  });
  net.At(1, note("b"));
  net.At(2, note("c"));
  while (net.Step()) {
  }
  const std::vector<std::pair<std::string, double>> want = {
      {"a", 1}, {"b", 1}, {"from a, now", 1}, {"from a, later", 1.5}, {"c", 2}};
  EXPECT_EQ(ran, want);
}

TEST(FluidNetwork, LinkBytesCountWhatCrossedEachLink) {
  // Links 0 and 1, 1 GB/s and 1 us each. Flow 0 crosses both (2 us), flow 1
  // link 1 only (1 us): flow 1 has link 1 alone from 1 us to 2 us, then the
  // penalties 2 us and 1 us split it C/3 and 2C/3. At 1 ms neither has ended.
  const double c = 1e9, f = 0.945, bytes = 1e6, t = 1e-3;
  FluidNetwork net({c, c}, {1e-6, 1e-6}, Params(f, 0));
  const uint32_t both = net.AddRoute({0, 1}), second = net.AddRoute({1});
  std::vector<double> end(2, -1);
  net.StartFlow(both, bytes, [&] { end[0] = net.now(); });
  net.StartFlow(second, bytes, [&] { end[1] = net.now(); });
  while (net.NextTime() <= t) net.Step();
  net.AdvanceTo(t);
  EXPECT_EQ(net.now(), t);
  EXPECT_EQ(end, std::vector<double>(2, -1));
  const double link0 = f * (c / 3) * (t - 2e-6);
  const double link1 = f * c * (2e-6 - 1e-6) + f * c * (t - 2e-6);
  std::vector<double> got = net.LinkBytes();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_NEAR(got[0], link0, Tol(link0));
  EXPECT_NEAR(got[1], link1, Tol(link1));

  while (net.Step()) {
  }
  got = net.LinkBytes();
  EXPECT_NEAR(got[0], bytes, Tol(bytes));
  EXPECT_NEAR(got[1], 2 * bytes, Tol(2 * bytes));
}

// ---------------------------------------------------------------------------
// Random networks against a reference: the header's model solved from
// scratch at every event, one flow per StartFlow (no joining).

struct Topology {
  std::vector<double> bandwidth, latency;
  std::vector<std::vector<uint32_t>> routes;
};

struct FlowSpec {
  uint32_t route = 0;
  double bytes = 0;
  int parent = -1;  // >= 0: started by that flow's DONE; else by a group's callback
};

// Flows start in groups: one At callback at TIME starts FLOWS in order.
struct Group {
  double time = 0;
  std::vector<size_t> flows;
};

struct Workload {
  Topology topology;
  std::vector<FlowSpec> flows;
  std::vector<Group> groups;  // in the order At is called (not time order)
  uint64_t copies = 0;        // flows started right after an equal one in the same callback
};

struct RouteModel {
  double latency = 0, penalty = 0, bound = 0;
};

RouteModel Model(const Topology& topo, const std::vector<uint32_t>& links, const FluidParams& p) {
  RouteModel m;
  double min_bandwidth = kInf, inverse = 0;
  for (const uint32_t l : links) {
    m.latency += topo.latency[l];
    inverse += 1 / topo.bandwidth[l];
    min_bandwidth = std::min(min_bandwidth, topo.bandwidth[l]);
  }
  // SimGrid gives a flow its penalty when its latency is paid; one with no
  // latency shares from its start with penalty 1.
  m.penalty = m.latency > 0 ? m.latency + p.weight_s * inverse : 1.0;
  m.bound = min_bandwidth;
  if (m.latency > 0) m.bound = std::min(m.bound, p.tcp_gamma / (2 * m.latency));
  return m;
}

// Weighted max-min by progressive filling: the level rises; an unfrozen flow
// has value level / penalty until its bound or a link of its route fills.
// Each round freezes whatever comes first, recomputed from the frozen values.
std::vector<double> MaxMin(const Topology& topo, const std::vector<const std::vector<uint32_t>*>& routes,
                           const std::vector<RouteModel>& models) {
  const size_t n = routes.size(), nl = topo.bandwidth.size();
  std::vector<double> x(n, 0);
  std::vector<bool> frozen(n, false);
  std::vector<double> weight(nl), used(nl);
  for (size_t left = n; left > 0;) {
    std::fill(weight.begin(), weight.end(), 0);
    std::fill(used.begin(), used.end(), 0);
    for (size_t i = 0; i < n; ++i)
      for (const uint32_t l : *routes[i]) {
        if (frozen[i])
          used[l] += x[i];
        else
          weight[l] += 1 / models[i].penalty;
      }
    double level = kInf;
    size_t link = nl, flow = n;
    for (size_t l = 0; l < nl; ++l)
      if (weight[l] > 0 && (topo.bandwidth[l] - used[l]) / weight[l] < level) {
        level = (topo.bandwidth[l] - used[l]) / weight[l];
        link = l;
      }
    for (size_t i = 0; i < n; ++i)
      if (!frozen[i] && models[i].bound * models[i].penalty < level) {
        level = models[i].bound * models[i].penalty;
        flow = i;
        link = nl;
      }
    if (flow < n) {
      x[flow] = models[flow].bound;
      frozen[flow] = true;
      --left;
      continue;
    }
    for (size_t i = 0; i < n; ++i)
      if (!frozen[i] && std::find(routes[i]->begin(), routes[i]->end(), link) != routes[i]->end()) {
        x[i] = level / models[i].penalty;
        frozen[i] = true;
        --left;
      }
  }
  return x;
}

std::vector<double> ReferenceFinishTimes(const Workload& w, const FluidParams& p) {
  const size_t n = w.flows.size();
  std::vector<RouteModel> route_models;
  for (const auto& r : w.topology.routes) route_models.push_back(Model(w.topology, r, p));
  std::vector<double> sharing_from(n, kInf), remaining(n), finish(n, -1);
  std::vector<bool> sharing(n, false), done(n, false);
  std::vector<std::vector<size_t>> children(n);
  auto start = [&](size_t i, double t) {
    sharing_from[i] = t + route_models[w.flows[i].route].latency * p.latency_factor;
  };
  for (size_t i = 0; i < n; ++i) {
    remaining[i] = w.flows[i].bytes;
    if (w.flows[i].parent >= 0) children[size_t(w.flows[i].parent)].push_back(i);
  }
  for (const Group& g : w.groups)
    for (const size_t i : g.flows) start(i, g.time);

  double t = 0;
  for (;;) {
    std::vector<size_t> live;
    std::vector<const std::vector<uint32_t>*> routes;
    std::vector<RouteModel> models;
    for (size_t i = 0; i < n; ++i)
      if (sharing[i]) {
        live.push_back(i);
        routes.push_back(&w.topology.routes[w.flows[i].route]);
        models.push_back(route_models[w.flows[i].route]);
      }
    const std::vector<double> x = MaxMin(w.topology, routes, models);
    double next = kInf;
    for (size_t i = 0; i < n; ++i)
      if (!sharing[i] && !done[i]) next = std::min(next, sharing_from[i]);
    std::vector<double> ends(live.size());
    for (size_t k = 0; k < live.size(); ++k) {
      ends[k] = t + remaining[live[k]] / (x[k] * p.bandwidth_factor);
      next = std::min(next, ends[k]);
    }
    if (next == kInf) break;
    for (size_t k = 0; k < live.size(); ++k) remaining[live[k]] -= x[k] * p.bandwidth_factor * (next - t);
    t = next;
    for (size_t k = 0; k < live.size(); ++k) {
      if (ends[k] > next) continue;
      const size_t i = live[k];
      sharing[i] = false;
      done[i] = true;
      finish[i] = t;
      for (const size_t c : children[i]) start(c, t);
    }
    for (size_t i = 0; i < n; ++i)
      if (!sharing[i] && !done[i] && sharing_from[i] <= t) sharing[i] = true;
  }
  return finish;
}

struct NetworkRun {
  std::vector<double> finish;
  std::vector<double> link_bytes;
  uint64_t started = 0, joined = 0;
  size_t active_at_end = 0;
};

NetworkRun RunOnFluidNetwork(const Workload& w, const FluidParams& p, bool coalesce) {
  FluidNetwork net(w.topology.bandwidth, w.topology.latency, p);
  std::vector<uint32_t> route_ids;
  for (const auto& r : w.topology.routes) route_ids.push_back(net.AddRoute(r));
  const size_t n = w.flows.size();
  std::vector<std::vector<size_t>> children(n);
  for (size_t i = 0; i < n; ++i)
    if (w.flows[i].parent >= 0) children[size_t(w.flows[i].parent)].push_back(i);
  NetworkRun run;
  run.finish.assign(n, -1);
  std::function<void(size_t)> start = [&](size_t i) {
    net.StartFlow(route_ids[w.flows[i].route], w.flows[i].bytes, [&, i] {
      run.finish[i] = net.now();
      for (const size_t c : children[i]) start(c);
    }, coalesce);
  };
  for (const Group& g : w.groups)
    net.At(g.time, [&start, &g] {
      for (const size_t i : g.flows) start(i);
    });
  while (net.Step()) {
  }
  run.link_bytes = net.LinkBytes();
  run.started = net.flows_started();
  run.joined = net.flows_joined();
  run.active_at_end = net.flows_active();
  return run;
}

// 30 links (a fifth without latency), 40 routes of 1-5 distinct links, 100
// groups of 1-3 flows at times drawn mostly from a 0.2 ms grid (so that
// groups coincide), 60 flows started when another ends; a third of the flows
// after the first in a callback copy the one before (equal flows that join).
Workload RandomWorkload(uint32_t seed) {
  std::mt19937 rng(seed);
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto below = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  auto log_uniform = [&](double lo, double hi) { return std::exp(uniform(std::log(lo), std::log(hi))); };
  Workload w;
  const uint32_t links = 30, routes = 40;
  for (uint32_t l = 0; l < links; ++l) {
    w.topology.bandwidth.push_back(uniform(1e9, 1.25e10));
    w.topology.latency.push_back(below(5) == 0 ? 0 : uniform(1e-7, 5e-6));
  }
  std::vector<uint32_t> all(links);
  for (uint32_t l = 0; l < links; ++l) all[l] = l;
  for (uint32_t r = 0; r < routes; ++r) {
    std::shuffle(all.begin(), all.end(), rng);
    w.topology.routes.emplace_back(all.begin(), all.begin() + 1 + below(5));
  }
  auto new_flow = [&](int parent, const std::vector<size_t>& siblings) {
    FlowSpec f;
    if (!siblings.empty() && below(3) == 0) {
      f = w.flows[siblings.back()];
      ++w.copies;
    } else {
      f.route = uint32_t(below(routes));
      f.bytes = log_uniform(1e4, 1e7);
    }
    f.parent = parent;
    w.flows.push_back(f);
    return w.flows.size() - 1;
  };
  for (int g = 0; g < 100; ++g) {
    Group group;
    group.time = below(5) < 3 ? 2e-4 * double(below(21)) : uniform(0, 4e-3);
    for (size_t k = 1 + below(3); k > 0; --k) group.flows.push_back(new_flow(-1, group.flows));
    w.groups.push_back(group);
  }
  std::vector<std::vector<size_t>> children(w.flows.size() + 60);
  for (int c = 0; c < 60; ++c) {
    const size_t parent = below(w.flows.size());
    children[parent].push_back(new_flow(int(parent), children[parent]));
  }
  return w;
}

struct RandomCase {
  uint32_t seed;
  double weight_s, tcp_gamma, latency_factor;
  bool coalesce;
};

void PrintTo(const RandomCase& c, std::ostream* os) {
  *os << "seed " << c.seed << ", weight-S " << c.weight_s << ", TCP-gamma " << c.tcp_gamma << ", latency factor "
      << c.latency_factor << ", coalesce " << c.coalesce;
}

class FluidNetworkOnRandomNetworks : public testing::TestWithParam<RandomCase> {};

TEST_P(FluidNetworkOnRandomNetworks, FinishTimesAgreeWithAFromScratchMaxMin) {
  const RandomCase& k = GetParam();
  const Workload w = RandomWorkload(k.seed);
  FluidParams p;
  p.bandwidth_factor = 0.945;
  p.weight_s = k.weight_s;
  p.tcp_gamma = k.tcp_gamma;
  p.latency_factor = k.latency_factor;

  const std::vector<double> want = ReferenceFinishTimes(w, p);
  const NetworkRun got = RunOnFluidNetwork(w, p, k.coalesce);
  const size_t n = w.flows.size();
  ASSERT_EQ(got.finish.size(), n);
  int reported = 0;
  for (size_t i = 0; i < n; ++i) {
    ASSERT_GE(want[i], 0) << "the reference left flow " << i << " unfinished";
    const double tol = 1e-6 * want[i] + 1e-9;
    if (std::fabs(got.finish[i] - want[i]) > tol && reported++ < 5)
      ADD_FAILURE() << "flow " << i << " (route " << w.flows[i].route << ", " << w.flows[i].bytes
                    << " bytes, parent " << w.flows[i].parent << "): ended at " << got.finish[i]
                    << " s, reference " << want[i] << " s";
  }
  EXPECT_EQ(reported, 0) << "flows off the reference";

  EXPECT_EQ(got.started, n);
  EXPECT_EQ(got.joined, k.coalesce ? w.copies : 0u);
  EXPECT_GT(w.copies, 0u);
  EXPECT_EQ(got.active_at_end, 0u);
  std::vector<double> link_bytes(w.topology.bandwidth.size(), 0);
  for (const FlowSpec& f : w.flows)
    for (const uint32_t l : w.topology.routes[f.route]) link_bytes[l] += f.bytes;
  ASSERT_EQ(got.link_bytes.size(), link_bytes.size());
  for (size_t l = 0; l < link_bytes.size(); ++l)
    EXPECT_NEAR(got.link_bytes[l], link_bytes[l], 1e-6 * link_bytes[l]) << "link " << l;
}

// CM02's and LV08's weight-S; TCP-gamma 4 MiB (never binding here: routes
// are at most 25 us) and 64 KiB (binding on the longer routes); a latency
// factor other than 1 (the wait, not the gamma bound, takes it).
INSTANTIATE_TEST_SUITE_P(Seeds, FluidNetworkOnRandomNetworks,
                         testing::Values(RandomCase{1, 0, 4194304, 1, true}, RandomCase{2, 20537, 4194304, 1, true},
                                         RandomCase{3, 20537, 65536, 1, false}, RandomCase{4, 20537, 65536, 1, true},
                                         RandomCase{5, 0, 65536, 1.5, true}, RandomCase{6, 20537, 4194304, 2, false}));

// Spraying (AddSprayRoute): two flows from one leaf to another over two
// spines. On one spine each (ECMP's lucky draw) or sprayed, each moves at
// its host link's rate; both on one spine (a collision), half of it. Closed
// forms: bytes / c and bytes / (c / 2); the sprayed uplinks carry half of
// each flow's bytes apiece.
TEST(FluidNetwork, SprayedFlowsShareTheEqualCostLinksAsOne) {
  const double c = 1e9, bytes = 1e6;
  // 0, 1: host up; 2, 3: leaf0 -> spine0, spine1; 4, 5: spine0, spine1 -> leaf1; 6, 7: host down.
  const std::vector<double> bw(8, c), lat(8, 0.0);
  {
    FluidNetwork net(bw, lat, Params(1.0, 0.0));
    const uint32_t a = net.AddRoute({0, 2, 4, 6}), b = net.AddRoute({1, 2, 4, 7});
    const auto end = RunToEnd(net, {{a, bytes}, {b, bytes}});
    EXPECT_NEAR(end[0], bytes / (c / 2), Tol(bytes / (c / 2)));
    EXPECT_NEAR(end[1], bytes / (c / 2), Tol(bytes / (c / 2)));
  }
  FluidNetwork net(bw, lat, Params(1.0, 0.0));
  const uint32_t a = net.AddSprayRoute({{0}, {2, 3}, {4, 5}, {6}});
  const uint32_t b = net.AddSprayRoute({{1}, {3, 2}, {5, 4}, {7}});  // the same stages in another order
  ASSERT_NE(a, FluidNetwork::kNone);
  ASSERT_NE(b, FluidNetwork::kNone);
  const auto end = RunToEnd(net, {{a, bytes}, {b, bytes}});
  EXPECT_NEAR(end[0], bytes / c, Tol(bytes / c));
  EXPECT_NEAR(end[1], bytes / c, Tol(bytes / c));
  const auto carried = net.LinkBytes();
  ASSERT_EQ(carried.size(), 8u);
  for (uint32_t l : {2u, 3u, 4u, 5u}) EXPECT_NEAR(carried[l], bytes, 1e-6 * bytes) << l;  // 2 flows x 1/2
  for (uint32_t l : {0u, 1u, 6u, 7u}) EXPECT_NEAR(carried[l], bytes, 1e-6 * bytes) << l;
  // A link in two different groups cannot share evenly: refused.
  EXPECT_EQ(net.AddSprayRoute({{0}, {2, 4}}), FluidNetwork::kNone);
  EXPECT_EQ(net.AddSprayRoute({{2}}), FluidNetwork::kNone);
}

}  // namespace
}  // namespace dltrace::flow
