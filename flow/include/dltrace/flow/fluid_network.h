// SPDX-License-Identifier: GPL-2.0-only
// dltrace's own flow-level network (`--solver incremental`): an event queue in
// simulated seconds and flows that share directed links by weighted max-min,
// the sharing SimGrid's CM02 and LV08 models compute, solved incrementally.
//
// SimGrid re-solves the whole connected problem each time a flow starts or
// ends. At 16,384 ranks 82 % of the live flows form one connected problem, but
// when one flow ends a median of 0 and at most 7 other flows change rate
// (README "Scale"). This network re-solves only a set S of flows, with every
// other flow's rate held, and grows S until every flow again has a bottleneck
// (a saturated link on which no flow has a higher level, or its bound): the
// condition that makes an allocation max-min fair, so the result is the one a
// full solve gives, at a cost that follows what changed.
//
// The model, as SimGrid 3.32's network_cm02.cpp has it (FluidParams):
//  - a flow first waits its route's latency (times the latency factor), using
//    no bandwidth; then it shares;
//  - a flow's value x is bounded by the smallest bandwidth on its route and by
//    TCP-gamma / (2 * route latency); with sharing penalty p (route latency
//    plus weight-S / bandwidth over its links) max-min raises every flow's
//    level x * p together, each link's sum of x staying within its bandwidth
//    (a route without latency shares from its start with penalty 1: SimGrid
//    sets the penalty as the latency is paid);
//  - bytes move at x times the bandwidth factor.
// Equal flows that start at one instant on one route go as one flow of
// multiplicity k (each member keeps its value x; the links carry k x).
//
// No dependencies beyond the standard library (tests/flow/fluid_network_test.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <utility>
#include <vector>

namespace dltrace::flow {

struct FluidParams {
  double bandwidth_factor = 0.945;  // network/bandwidth-factor (dltrace's calibrated default)
  double latency_factor = 1.0;      // network/latency-factor
  double weight_s = 20537;          // network/weight-S (LV08's; CM02's is 0)
  double tcp_gamma = 4194304;       // network/TCP-gamma (bytes)
};

class FluidNetwork {
 public:
  using Callback = std::function<void()>;
  static constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

  // BANDWIDTH: bytes per second of each directed link (index = link id);
  // LATENCY: its latency in seconds.
  FluidNetwork(std::vector<double> bandwidth, std::vector<double> latency, FluidParams params = {});

  // Registers a route (the links a flow crosses, in order); returns its id.
  uint32_t AddRoute(const std::vector<uint32_t>& links);

  double now() const { return now_; }
  // Runs CB at simulated time T (not before now), after every callback
  // already due at T.
  void At(double t, Callback cb);
  // Starts a flow of BYTES on ROUTE now; DONE runs when its last byte
  // arrived. A flow equal to one that started at this instant on the same
  // route (same bytes) and is still paying its latency joins it (coalesce).
  void StartFlow(uint32_t route, double bytes, Callback done, bool coalesce = true);

  // Runs every callback due at the next instant, then re-solves the rates of
  // what changed; false when nothing is left to run.
  bool Step();
  // Time of the next instant with work (infinity: none).
  double NextTime() const;
  // Moves the clock to T (no work is due before it) without running anything.
  void AdvanceTo(double t);

  // Bytes each directed link carried from the start until now.
  std::vector<double> LinkBytes() const;

  // Counters for progress lines and benchmarks.
  uint64_t flows_started() const { return flows_started_; }     // StartFlow calls
  uint64_t flows_joined() const { return flows_joined_; }       // of them, joined an equal flow
  size_t flows_active() const { return active_count_; }         // sharing now (bundles count once)
  uint64_t solves() const { return solves_; }                   // instants that re-solved
  uint64_t flows_resolved() const { return flows_resolved_; }   // flows re-solved, summed over solves
  uint64_t rate_changes() const { return rate_changes_; }       // flows whose rate changed, summed

 private:
  static constexpr uint32_t kBoundBottleneck = kNone - 1;
  struct Link {
    double capacity = 0;   // bytes/s (SimGrid's constraint bound: the bandwidth)
    double latency = 0;    // s
    double used = 0;       // sum over its flows of k x
    double bytes = 0;      // carried until `at`
    double at = 0;
    std::vector<uint32_t> flows;  // active flows on it
    uint32_t mark = 0;            // solve stamp (in T)
    // Per solve: capacity left for S, sum over unfrozen S flows of k / p, and
    // the lowest level of an S flow frozen here.
    double residual = 0, weight = 0, min_frozen_level = 0;
    uint32_t unfrozen = 0;  // S flows on it not yet frozen
    uint32_t stamp = 0;     // generation of its entry in the fill's heap
  };
  struct Route {
    std::vector<uint32_t> links;
    double latency = 0, penalty = 0, bound = 0;
    // Joinable flows started on it at now_ (coalesce), oldest first: (bytes,
    // flow). Emptied as the clock moves (open_routes_ lists the routes that
    // have some), so a lookup is a short scan of this route's, and a flow
    // costs no map node of its own.
    std::vector<std::pair<double, uint32_t>> open;
  };
  struct Flow {
    uint32_t route = 0;
    uint32_t count = 1;        // members (coalesced equal flows)
    double bytes = 0;          // one member's
    double remaining = 0;      // all members', at `at`
    double at = 0;
    double start = 0;
    double x = 0;              // one member's value (rate = x * bandwidth_factor)
    double level = 0;          // x * penalty
    uint32_t bottleneck = kNone;
    uint32_t version = 0;      // completion events of older versions are stale
    uint32_t in_s = 0;         // solve stamp (in S)
    bool active = false;       // sharing (latency paid)
    bool frozen = false;       // in the solve in progress
    Callback done;             // the first member's (empty: the flow is free)
    std::vector<Callback> more_done;  // the other members', in the order they joined
  };
  enum class EventKind : uint8_t { kCallback, kLatencyPaid, kComplete };
  struct Event {
    double time;
    uint64_t seq;
    uint32_t id, version;
    EventKind kind;
    bool operator>(const Event& o) const { return time > o.time || (time == o.time && seq > o.seq); }
  };

  void Push(double t, EventKind kind, uint32_t id, uint32_t version = 0);
  uint32_t NewFlow();
  void Activate(uint32_t f);
  void Finish(uint32_t f);
  void Solve();
  void Fill();        // progressive filling of S over the capacity the others leave
  bool Verify();      // adds to S the held flows that lost their bottleneck; true if it added any
  void AddToS(uint32_t f);
  double BytesNow(const Link& link) const;  // what it carried until now
  void SettleLink(uint32_t l);  // brings its byte count up to now
  void Reschedule(uint32_t f, double old_x);

  FluidParams params_;
  std::vector<Link> links_;
  std::vector<Route> routes_;
  std::vector<Flow> flows_;
  std::vector<uint32_t> free_flows_;
  std::vector<Callback> callbacks_;
  std::vector<uint32_t> free_callbacks_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t seq_ = 0;
  double now_ = 0;
  std::vector<uint32_t> open_routes_;  // routes with joinable flows (Route::open), cleared as the clock moves
  // What changed at this instant: flows that started or stopped sharing.
  std::vector<uint32_t> changed_links_;
  std::vector<uint32_t> s_;          // the flows being re-solved
  std::vector<uint32_t> t_;          // the links they cross
  std::vector<double> old_x_;        // per entry of s_: its value before the solve
  // Fill's two heaps (std::push_heap / pop_heap, as std::priority_queue
  // uses them), kept between solves so that a solve allocates nothing.
  struct FillEntry {
    double level;
    uint32_t id, stamp;
    bool operator>(const FillEntry& o) const { return level > o.level || (level == o.level && id > o.id); }
  };
  std::vector<FillEntry> saturate_, bounded_;
  uint32_t stamp_ = 0;
  size_t active_count_ = 0;
  uint64_t flows_started_ = 0, flows_joined_ = 0, solves_ = 0, flows_resolved_ = 0, rate_changes_ = 0;
};

}  // namespace dltrace::flow
