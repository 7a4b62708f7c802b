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
//  - bytes move at x times the bandwidth factor;
//  - with FluidParams::equal_shares every flow's penalty is 1 (plain max-min).
// Equal flows that start at one instant on one route go as one flow of
// multiplicity k (each member keeps its value x; the links carry k x).
//
// No dependencies beyond the standard library (tests/flow/fluid_network_test.cc).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <utility>
#include <vector>

namespace dltrace::flow {

struct FluidParams {
  double bandwidth_factor = 0.945;  // network/bandwidth-factor (dltrace's calibrated default)
  double latency_factor = 1.0;      // network/latency-factor
  double weight_s = 20537;          // network/weight-S (LV08's; CM02's is 0)
  double tcp_gamma = 4194304;       // network/TCP-gamma (bytes)
  // Every flow shares with penalty 1 (plain max-min) instead of its route's
  // latency plus weight-S / bandwidth: FlowConfig::equal_shares.
  bool equal_shares = false;
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
  // Registers a route whose flows spread evenly over the links of each
  // stage (packets sprayed over equal-cost paths, lb=spray or ar): a stage
  // of several links is one aggregate link of their bandwidth summed, its
  // bytes shared equally among them in LinkBytes (max-min over the
  // aggregate is max-min over its members when every flow on them spreads
  // the same way). Every route through those links must name the same
  // stage: kNone when a link would join two different aggregates.
  uint32_t AddSprayRoute(const std::vector<std::vector<uint32_t>>& stages);

  double now() const { return now_; }
  // Runs CB at simulated time T (not before now), after every callback
  // already due at T.
  void At(double t, Callback cb);
  // Starts a flow of BYTES on ROUTE now; DONE runs when its last byte
  // arrived. A flow equal to one that started at this instant on the same
  // route (same bytes, same latency left) and is still paying its latency
  // joins it (coalesce). OVERLAP: seconds it waited behind an earlier flow of
  // its connection, whose bytes it follows on the wire (a pipelined sender):
  // that much of its latency is paid already.
  void StartFlow(uint32_t route, double bytes, Callback done, bool coalesce = true, double overlap = 0);

  // Runs every callback due at the next instant, then re-solves the rates of
  // what changed; false when nothing is left to run.
  bool Step();
  // Time of the next instant with work (infinity: none).
  double NextTime() const;
  // Moves the clock to T (no work is due before it) without running anything.
  void AdvanceTo(double t);

  // Bytes each directed link (the constructor's) carried from the start
  // until now; an aggregate's bytes count in equal parts on its members.
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
  // A link's active flows: a few in place (a GPU's NVLink or NIC port
  // carries one or two at a time), more on the heap; push_back and pop_back
  // as a vector, so the order, and the sums taken in it, are a vector's.
  class FlowList {
   public:
    FlowList() = default;
    FlowList(const FlowList&) = delete;
    FlowList& operator=(const FlowList&) = delete;
    FlowList(FlowList&& o) noexcept : size_(o.size_), capacity_(o.capacity_) {
      if (o.capacity_ == kInline) std::copy(o.inline_, o.inline_ + kInline, inline_);
      else heap_ = o.heap_;
      o.size_ = 0;
      o.capacity_ = kInline;
    }
    ~FlowList() {
      if (capacity_ != kInline) delete[] heap_;
    }
    uint32_t* begin() { return capacity_ == kInline ? inline_ : heap_; }
    uint32_t* end() { return begin() + size_; }
    const uint32_t* begin() const { return capacity_ == kInline ? inline_ : heap_; }
    const uint32_t* end() const { return begin() + size_; }
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    uint32_t operator[](size_t i) const { return begin()[i]; }
    uint32_t& back() { return begin()[size_ - 1]; }
    void pop_back() { --size_; }
    void push_back(uint32_t f) {
      if (size_ == capacity_) Grow();
      begin()[size_++] = f;
    }

   private:
    static constexpr uint32_t kInline = 4;
    void Grow() {
      uint32_t* more = new uint32_t[2 * size_t(capacity_)];
      std::copy(begin(), end(), more);
      if (capacity_ != kInline) delete[] heap_;
      heap_ = more;
      capacity_ *= 2;
    }
    uint32_t size_ = 0, capacity_ = kInline;
    union {
      uint32_t inline_[kInline];
      uint32_t* heap_;
    };
  };
  struct Link {
    double capacity = 0;   // bytes/s (SimGrid's constraint bound: the bandwidth)
    double used = 0;       // sum over its flows of k x
    double bytes = 0;      // carried until `at`
    double at = 0;
    FlowList flows;        // active flows on it
    double latency = 0;    // s
    uint32_t mark = 0;            // solve stamp (in T)
    // Per solve: capacity left for S, sum over unfrozen S flows of k / p, and
    // the lowest level of an S flow frozen here.
    double residual = 0, weight = 0, min_frozen_level = 0;
    uint32_t unfrozen = 0;  // S flows on it not yet frozen
    uint32_t stamp = 0;     // generation of its entry in the fill's heap
  };
  // A route's links are route_links_[first, first + size): one array for
  // every route, so reading a flow's links is one cache miss, not two.
  struct Route {
    uint32_t first = 0, size = 0;
    double latency = 0, penalty = 0, bound = 0;
  };
  struct LinkRange {
    const uint32_t *b, *e;
    const uint32_t* begin() const { return b; }
    const uint32_t* end() const { return e; }
  };
  LinkRange LinksOf(uint32_t route) const {
    const uint32_t* first = route_links_.data() + routes_[route].first;
    return {first, first + routes_[route].size};
  }
  // What every step of a flow's life reads sits in its first 64 bytes (its
  // route's penalty copied there); what only its start and end read, after.
  struct alignas(64) Flow {
    uint32_t route = 0;
    uint32_t count = 1;        // members (coalesced equal flows)
    uint32_t bottleneck = kNone;
    uint32_t version = 0;      // completion events of older versions are stale
    uint32_t in_s = 0;         // solve stamp (in S)
    bool active = false;       // sharing (latency paid)
    bool frozen = false;       // in the solve in progress
    double remaining = 0;      // all members', at `at`
    double at = 0;
    double x = 0;              // one member's value (rate = x * bandwidth_factor)
    double level = 0;          // x * penalty
    double penalty = 0;        // its route's
    double bytes = 0;          // one member's
    double start = 0;
    double ready = 0;          // when its latency is paid
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
  // The events, earliest (time, then seq) first: a 4-ary heap, half a
  // binary heap's depth, so fewer cache misses per pop at tens of thousands
  // of pending events. (time, seq) is a total order, so events come out in
  // the order any priority queue gives.
  class EventQueue {
   public:
    bool empty() const { return heap_.empty(); }
    const Event& top() const { return heap_.front(); }
    void push(const Event& e) {
      size_t i = heap_.size();
      heap_.push_back(e);
      while (i > 0) {
        const size_t parent = (i - 1) / 4;
        if (!(heap_[parent] > e)) break;
        heap_[i] = heap_[parent];
        i = parent;
      }
      heap_[i] = e;
    }
    void pop() {
      const Event last = heap_.back();
      heap_.pop_back();
      const size_t n = heap_.size();
      if (n == 0) return;
      size_t i = 0;
      for (;;) {
        const size_t first = 4 * i + 1;
        if (first >= n) break;
        size_t least = first;
        for (size_t c = first + 1; c < std::min(first + 4, n); ++c)
          if (heap_[least] > heap_[c]) least = c;
        if (!(last > heap_[least])) break;
        heap_[i] = heap_[least];
        i = least;
      }
      heap_[i] = last;
    }

   private:
    std::vector<Event> heap_;
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
  std::vector<Link> links_;  // the constructor's, then the aggregates (AddSprayRoute)
  size_t given_links_ = 0;   // the constructor's
  std::map<std::vector<uint32_t>, uint32_t> aggregate_of_set_;  // sorted members -> aggregate link
  std::vector<uint32_t> aggregate_of_link_;                     // per given link its aggregate (kNone: none)
  std::vector<bool> used_alone_;                                // per given link: a spray route's stage of one
  std::vector<double> member_capacity_;                         // per link the bandwidth of one member
  std::vector<Route> routes_;
  std::vector<uint32_t> route_links_;
  // Joinable flows started on each route at now_ (coalesce), oldest first:
  // (bytes, flow). Emptied as the clock moves (open_routes_ lists the routes
  // that have some), so a lookup is a short scan of one route's, and a flow
  // costs no map node of its own.
  std::vector<std::vector<std::pair<double, uint32_t>>> route_open_;
  std::vector<Flow> flows_;
  std::vector<uint32_t> free_flows_;
  std::vector<Callback> callbacks_;
  std::vector<uint32_t> free_callbacks_;
  EventQueue events_;
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
