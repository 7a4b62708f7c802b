// SPDX-License-Identifier: GPL-2.0-only
// The schedule executor over SimGrid: each message is a host-to-host SimGrid
// communication (Comm::sendto) run by a short-lived actor, each compute gap a
// sleeping actor, so every engine callback runs inside the simulation and
// simulated time advances only through SimGrid's flow-level network model.
#include "dltrace/flow/flow_simulation.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <sstream>
#include <thread>
#include <unordered_map>

#include <malloc.h>
#include <unistd.h>

#include <simgrid/kernel/resource/Action.hpp>
#include <simgrid/kernel/resource/Model.hpp>
#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/plugins/load.h>
#include <simgrid/s4u.hpp>
#include <simgrid/version.h>
#include <xbt/config.hpp>
#include <xbt/log.h>

#include "dltrace/executor/schedule_executor.h"
#include "dltrace/executor/schedule_tools.h"
#include "dltrace/models/job.h"
#include "dltrace/models/lanes.h"
#include "dltrace/models/schedule.h"
#include "dltrace/models/topology.h"

namespace dltrace::flow {

namespace s4u = simgrid::s4u;

const std::vector<std::string>& DefaultSimGridConfig() {
  // Calibrated against the ns-3 module (README "Flow-level simulation"):
  // SimGrid's wide-area defaults (latency x13.01 for slow start, bandwidth
  // x0.97) do not fit long-lived data-centre connections.
  static const std::vector<std::string> config = {
      "network/latency-factor:1",
      "network/bandwidth-factor:0.945",
      "network/crosstraffic:0",
  };
  return config;
}

std::string SimGridVersion() {
  return std::to_string(SIMGRID_VERSION_MAJOR) + "." + std::to_string(SIMGRID_VERSION_MINOR) + "." +
         std::to_string(SIMGRID_VERSION_PATCH);
}

int MltcpStreams(double f) { return std::max(1, int(std::lround(f * kMltcpStreamsPerF))); }

bool FluidParamsFrom(const std::vector<std::string>& cfg, FluidParams* params, std::string* error) {
  std::vector<std::string> all = DefaultSimGridConfig();
  all.insert(all.end(), cfg.begin(), cfg.end());
  *params = FluidParams();
  bool weight_s_set = false;
  std::string model = "LV08";
  for (const std::string& c : all) {
    const size_t colon = c.find(':');
    const std::string key = c.substr(0, colon), value = colon == std::string::npos ? "" : c.substr(colon + 1);
    char* end = nullptr;
    const double number = std::strtod(value.c_str(), &end);
    const bool numeric = !value.empty() && end && *end == '\0' && std::isfinite(number) && number >= 0;
    double* target = key == "network/bandwidth-factor" ? &params->bandwidth_factor
                     : key == "network/latency-factor" ? &params->latency_factor
                     : key == "network/weight-S"       ? &params->weight_s
                     : key == "network/TCP-gamma"      ? &params->tcp_gamma
                                                       : nullptr;
    if (target && numeric && !(target == &params->bandwidth_factor && number == 0)) {
      *target = number;
      weight_s_set |= target == &params->weight_s;
    } else if (target) {
      *error = "--cfg " + c + ": " + key + " takes a number" +
               (key == "network/bandwidth-factor" ? " above 0" : " of 0 or more");
      return false;
    } else if (key == "network/model" && (value == "LV08" || value == "CM02")) {
      model = value;
    } else if (key == "network/crosstraffic" && (value == "0" || value == "no" || value == "false")) {
    } else {
      *error = "--cfg " + c +
               ": the incremental solver models network/bandwidth-factor, latency-factor, weight-S, TCP-gamma, "
               "model (LV08 or CM02) and crosstraffic:0; use --solver simgrid for other SimGrid settings";
      return false;
    }
  }
  if (!weight_s_set) params->weight_s = model == "CM02" ? 0 : 20537;  // the model's default
  return true;
}

namespace {

uint64_t NowNs() { return uint64_t(std::llround(s4u::Engine::get_clock() * 1e9)); }

// Resident memory now, in KiB (/proc/self/statm), for the progress lines.
long CurrentRssKb() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

}  // namespace

class FlowTransport;

struct JobState {
  models::JobPlacement placement;
  models::Schedule schedule;
  runs::RunTimes recorded;  // the recorded run, for the summary (the trace set itself is freed once lowered)
  // executor::ScheduleHash, taken by `hasher`, a thread of its own, as the
  // executors are built and the run starts (about 20 s at 16,384 ranks). Each
  // executor keeps its endpoint's dependencies, turned around (the steps
  // waiting on each step), so the schedule's own lists are read by nothing
  // after: the hasher frees each endpoint's once hashed (6 B a step, 1.9 GiB
  // at 16,384 ranks), and only once its executor was built (`built`).
  uint64_t schedule_hash = 0;
  std::thread hasher;
  std::atomic<size_t> built{0};
  std::atomic<bool> abandon{false};  // a run that ended before every executor was built
  ~JobState() { JoinHasher(); }
  void HashAndFreeDependencies();
  void JoinHasher() {
    abandon = true;
    if (hasher.joinable()) hasher.join();
  }
  std::vector<std::unique_ptr<FlowTransport>> transports;
  std::vector<std::unique_ptr<executor::ScheduleExecutor>> engines;
  std::unique_ptr<models::JobProgress> progress;  // MLTCP's bytes ratio (null without --cc mltcp)
  std::vector<executor::RankResult> results;  // taken from the engines once the run ended
  std::vector<bool> done;
  uint32_t done_count = 0;
};

void JobState::HashAndFreeDependencies() {
  executor::ScheduleHasher hash(schedule);
  for (size_t e = 0; e < schedule.ranks.size(); ++e) {
    while (built.load(std::memory_order_acquire) <= e) {
      if (abandon) return;
      std::this_thread::yield();
    }
    models::RankSchedule& rank = schedule.ranks[e];
    hash.Add(rank);
    decltype(rank.deps)().swap(rank.deps);
    for (models::Step& st : rank.steps) st.deps_end = 0;  // a field no executor reads once built
  }
  schedule_hash = hash.value();
}

// A message from its start until flows.csv has its row: rows go in the order
// the messages started, each written once every earlier one completed.
constexpr uint64_t kNoMessage = std::numeric_limits<uint64_t>::max();
struct Message {
  uint64_t tag, bytes, start_ns, end_ns;
  int32_t src, dst;
  uint16_t job, channel;
  bool notice;  // a same-node step's notice (the executor timed it on the local link)
  bool local;   // flows.csv: both ends on one host
  bool done;
  // Until it is sent: the next message queued on its connection, and what
  // the sender runs once it arrived. A queued message is not done, so its
  // entry stays in State::pending while it waits.
  uint64_t next = kNoMessage;
  std::function<void()> on_sent;
};

// One TCP connection (job, sender, receiver, channel): its messages go in
// order, one after another, as over the socket replayer's and ns-3's
// connections (a message queued behind another follows its last byte on the
// wire: State::Overlap); messages of different connections share links fairly.
// The queue is a list through the messages themselves (Message::next): a
// connection allocates nothing per message, and is small (an endpoint has
// one per peer, channel and lane).
struct Connection {
  uint64_t head = kNoMessage, tail = kNoMessage;  // queued messages, oldest first
  simgrid::s4u::SemaphorePtr queued;  // released once per message put in the queue
  s4u::Host* from = nullptr;          // the two ends' SimGrid hosts
  s4u::Host* to = nullptr;
  uint32_t route = FluidNetwork::kNone;  // or its FluidNetwork route (--solver incremental), once known
  const std::vector<uint32_t>* links = nullptr;  // on SimGrid: its route's directed links
  bool active = false;                // a message of it is on its way
  bool head_sent = false;             // its oldest message's send is done, its last bytes go (BeforeSent)
};

// SimGrid actors that ran one piece of work and wait for the next.
// A new actor costs a zeroed 32 KiB stack and a context (a third of the run's
// CPU at 4,096 ranks: memset, malloc and free); an idle one suspends itself,
// and waking it is one Actor::resume, which SimGrid answers by making it
// runnable at the point of its round where it would have made a new actor
// runnable, so every event keeps its order and outputs stay byte-identical.
// (A semaphore per worker woke them the same way, but each acquire made a
// SimGrid activity: two allocations and their bookkeeping per piece of work.)
// The idle ones are shared by every host: no work here depends on the host
// its actor runs on (sends name both hosts, sleeps only wait), and a pool per
// host kept the sum of every host's busiest moment (19,056 actors, 600 MiB of
// stacks, at 4,096 ranks after 1.2 simulated s, and growing). The run ends
// when no work is left: the worker that finishes the last piece wakes the
// idle ones to end them.
class ActorPool {
 public:
  // A piece of work, given the callback it was handed. Callers keep it small
  // (two pointers at most, no std::function inside) so that std::function
  // holds it in place, and hand their callback as the argument, which only
  // moves: a message or a timer then costs no allocation of its own here
  // (a callback captured in the work was one malloc and free each).
  using Work = std::function<void(std::function<void()>& callback)>;
  // Runs WORK(CALLBACK) in an actor, as Actor::create(NAME, HOST, ...) would;
  // HOST is where a new actor is made, an idle one runs it where it is.
  void Run(const char* name, s4u::Host* host, Work work, std::function<void()> callback);
  // Runs WORK in an actor (work run once, where an allocation does not count).
  void Run(const char* name, s4u::Host* host, std::function<void()> work) {
    Run(name, host, [](std::function<void()>& w) { w(); }, std::move(work));
  }
  size_t actors() const { return workers_.size(); }

 private:
  struct Worker {
    s4u::Actor* actor = nullptr;  // set by the actor itself, before it can be idle
    Work work;  // empty: end
    std::function<void()> callback;
  };
  void Loop(Worker* w);
  std::vector<Worker*> idle_;
  std::vector<std::unique_ptr<Worker>> workers_;
  uint64_t busy_ = 0;
};

void ActorPool::Run(const char* name, s4u::Host* host, Work work, std::function<void()> callback) {
  ++busy_;
  if (!idle_.empty()) {
    Worker* w = idle_.back();
    idle_.pop_back();
    w->work = std::move(work);
    w->callback = std::move(callback);
    w->actor->resume();
    return;
  }
  workers_.push_back(std::make_unique<Worker>());
  Worker* w = workers_.back().get();
  w->work = std::move(work);
  w->callback = std::move(callback);
  s4u::Actor::create(name, host, [this, w]() { Loop(w); });
}

void ActorPool::Loop(Worker* w) {
  w->actor = s4u::Actor::self();
  for (;;) {
    if (!w->work) return;
    Work work = std::move(w->work);
    std::function<void()> callback = std::move(w->callback);
    w->work = nullptr;
    w->callback = nullptr;
    work(callback);
    work = nullptr;
    callback = nullptr;
    if (--busy_ == 0) {  // nothing runs, so nothing can start more: the run is over
      for (Worker* other : idle_) other->actor->resume();  // with no work: it ends
      idle_.clear();
      return;
    }
    // Idle until Run resumes it: it suspended before any other actor runs
    // (SimGrid takes simcalls in the order the actors ran), so no resume is lost.
    idle_.push_back(w);
    s4u::this_actor::suspend();
  }
}

// Messages of one size that started at one simulated instant between the
// same two SimGrid hosts (one route), sent as one SimGrid communication
// (FlowConfig::coalesce). The first message's connection actor (the leader)
// starts it; others join while SimGrid makes its action or the action waits
// out the route's latency (the solver has not given it a rate yet), and each
// join raises its bytes and bound by one message's. SimGrid 3.32's CM02 and
// LV08 models give a flow the sharing penalty of its route (latency plus
// weight-S over each link's bandwidth, network_cm02.cpp) as the latency is
// paid; the first to join waits until then and divides it by the members,
// so the solver gives the bundle what it would have given them. The leader
// delivers every member when it ends; the others wait on `delivered`.
struct Bundle {
  simgrid::kernel::resource::Action* action = nullptr;
  double clock = 0;             // when it started (s)
  double overlap = 0;           // its members' latency already paid (s): State::Overlap
  double bound = 0;             // one message's rate bound
  uint64_t bytes = 0;           // each message's
  // (message, on_sent, whether it arrives or its send is done: BeforeSent); the leader first
  std::vector<std::tuple<size_t, const std::function<void()>*, bool>> members;
  s4u::SemaphorePtr delivered;  // made at the first join
};

// From this many endpoints a run on SimGrid's solver says that the
// incremental one is faster (3.5x at 1,024 ranks, README "Scale").
constexpr uint64_t kIncrementalHintEndpoints = 1024;

// How long (simulated) a connection's actor waits for the next message before
// it ends: a collective's next chunk to the same peer comes microseconds later,
// and reusing the actor saves creating one per message.
constexpr double kLingerSeconds = 1e-3;

struct FlowSimulation::State {
  FlowConfig config;
  models::TopologySpec spec;
  models::TopologyGraph graph;
  std::unique_ptr<s4u::Engine> engine;
  // SimGrid hosts, one per (topology host, job, channel) that sends or
  // receives: SimGrid routes per host pair, and per-flow ECMP routes each
  // job's channel between two hosts on its own path (models::FlowHash).
  std::unordered_map<uint64_t, s4u::Host*> hosts;
  std::vector<s4u::Link*> directed;  // per graph link: [2i] a->b, [2i+1] b->a; then the shadows
  // Scale-up (NVLink) hops of a route that also crosses the network (to and
  // from the GPU whose NIC it leaves by) do not share that link with the
  // domain's own flows: on the solver's weighted max-min the NIC-bound flow,
  // with its longer latency, would get a sliver of the NVLink while GPU-to-GPU
  // copies run (0.3 of its NIC's rate), where a packet network (ns-3) and
  // NVLink's own arbitration let it keep its NIC's rate at a small fraction of
  // the NVLink. Such a route crosses a shadow of the link instead: the same
  // latency, no bandwidth of its own to share (ShadowScaleUp); its bytes count
  // on the link in links.csv and the fabric lines. shadow_of: per directed
  // graph link its shadow's id (kNoShadow: none yet); shadow_real: per shadow
  // (id - 2 x links) the directed link it stands for.
  static constexpr uint32_t kNoShadow = FluidNetwork::kNone;
  std::vector<uint32_t> shadow_of, shadow_real;
  std::vector<std::unique_ptr<JobState>> jobs;
  // Messages not yet in flows.csv: message M is pending[M - pending_base].
  std::deque<Message> pending;
  uint64_t pending_base = 0;
  std::unique_ptr<runs::FlowsCsvWriter> flows_out;  // config.stream_dir's flows.csv, as the run goes
  std::unique_ptr<runs::LinksCsvWriter> links_out;  // and its links.csv
  std::vector<runs::FlowRecord> flows;              // without stream_dir: the rows, held
  std::deque<Connection> connections;  // each endpoint's, indexed by FlowTransport (a deque: they never move)
  // Bundles that may still be joined, by (from, to, bytes); FlowConfig::coalesce.
  std::map<std::tuple<s4u::Host*, s4u::Host*, uint64_t>, Bundle*> bundles;
  // --solver incremental: dltrace's own network instead of SimGrid's engine,
  // and its route per (receiver host, sender host, job, channel).
  std::unique_ptr<FluidNetwork> fluid;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint16_t>, uint32_t> fluid_routes;
  // On SimGrid: each route's directed links, and the bytes delivered over
  // each link direction (nics.csv and the fabric lines count messages, not
  // the link-load plugin, which counts short messages' bytes high).
  std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint16_t>, std::vector<uint32_t>> simgrid_routes;
  std::vector<double> delivered_link_bytes;
  simgrid::kernel::resource::Model* network = nullptr;  // SimGrid's network model
  bool bundling = false;                                // messages go in bundles (FlowConfig::coalesce)
  double weight_s = 0, latency_factor = 1;             // its network/weight-S and network/latency-factor
  // What SimGrid's latency-factor callback answers for the next communications
  // between two hosts, oldest first: network/latency-factor, or for a message
  // that paid some of its latency, the factor that leaves the rest (StartComm).
  // SimGrid makes the actions as it answers a round's simcalls, in the order
  // the actors made them, after the actors ran: hence a queue per host pair.
  // Each entry: (bytes, factor).
  std::map<std::pair<const s4u::Host*, const s4u::Host*>, std::deque<std::pair<double, double>>> latency_factors;
  // network/bandwidth-factor: SimGrid's link-load plugin sums its flows'
  // solver values, and bytes move at that times the factor.
  double bandwidth_factor = 1;
  uint64_t messages_coalesced = 0;  // messages that joined a bundle
  ActorPool actors;  // every actor of the run but the sampler
  uint64_t messages_total = 0, messages_done = 0;
  uint64_t steps_total = 0;
  std::vector<std::pair<double, std::vector<double>>> samples;  // (time s, bytes per directed link since last)
  std::vector<double> last_cum;
  runs::SimulationRecords records;
  uint64_t endpoints_left = 0;
  double finish_s = -1;        // when the last endpoint finished (connections linger after)
  bool final_sampled = false;  // the sampler took its sample after finish_s

  static uint64_t HostKey(uint32_t host, uint32_t job, uint16_t channel) {
    return uint64_t(host) << 32 | uint64_t(job) << 16 | channel;
  }
  uint32_t TopologyHost(uint32_t job, int32_t endpoint) const { return jobs[job]->placement.hosts[size_t(endpoint)]; }
  // Where ENDPOINT's connections on CHANNEL start and end (channel 0 also runs its timers).
  s4u::Host* HostOf(uint32_t job, int32_t endpoint, uint16_t channel = 0) const {
    return hosts.at(HostKey(TopologyHost(job, endpoint), job, channel));
  }
  void Transfer(FlowTransport& from, uint32_t job, int32_t src, int32_t dst, uint16_t channel, uint64_t tag,
                uint64_t bytes, bool notice, std::function<void()> on_sent);
  // Sends BYTES of message M from FROM to TO (one SimGrid communication, a
  // share of one, or MLTCP's weighted pieces), then runs Reached. OVERLAP:
  // seconds M waited behind its connection's earlier messages (Overlap).
  void Send(size_t m, uint64_t bytes, s4u::Host* from, s4u::Host* to, const std::function<void()>& on_sent,
            bool arrives, double overlap);
  // FlowConfig::send_buffer: the bytes of a message of BYTES that must
  // arrive before its send is done, and those that go after (*REST);
  // without a buffer every byte goes before (and the two moments are one).
  uint64_t BeforeSent(uint64_t bytes, uint64_t* rest) const {
    const uint64_t before = config.send_buffer == 0 ? bytes : bytes - std::min(bytes, config.send_buffer);
    *rest = bytes - before;
    return before;
  }
  // A piece of message M reached its receiver: all of M (ARRIVES: Delivered),
  // or what its send waited for (ON_SENT runs).
  void Reached(size_t m, const std::function<void()>& on_sent, bool arrives) {
    if (arrives) Delivered(m, on_sent);
    else on_sent();
  }
  // SimGrid: the sharing penalty a flow from FROM to TO has once its latency
  // is paid: CM02's and LV08's (its route's latency plus weight-S over each
  // link's bandwidth), or 1 with FlowConfig::equal_shares; *LATENCY: the route's.
  double RoutePenalty(s4u::Host* from, s4u::Host* to, double* latency) const;
  // SimGrid: starts a communication of BYTES from FROM to TO, OVERLAP seconds
  // of its latency paid (Overlap), and gives its action in *STARTED_ACTION
  // and the latency it has still to pay in *LATENCY_LEFT (s).
  s4u::CommPtr StartComm(s4u::Host* from, s4u::Host* to, uint64_t bytes, double overlap,
                         simgrid::kernel::resource::Action** started_action = nullptr,
                         double* latency_left = nullptr);
  // FlowConfig::equal_shares on SimGrid: SimGrid gives an action its route's
  // penalty as its latency is paid, from a field only its model sets, so the
  // calling actor waits until then (SimGrid enables actions before actors run
  // at that instant, as Bundle relies on) and gives each of ACTIONS penalty 1.
  // An action without latency shares with penalty 1 from its start.
  void ShareEqually(const std::vector<simgrid::kernel::resource::Action*>& actions, double latency_left);
  // Sends message M in a bundle (FlowConfig::coalesce): joins one that can
  // still be joined, or starts one; returns once M was delivered.
  void SendInBundle(size_t m, uint64_t bytes, s4u::Host* from, s4u::Host* to, const std::function<void()>& on_sent,
                    bool arrives, double overlap);
  // Seconds message M waited in its connection's queue behind earlier
  // messages. A sender puts a message's bytes on the wire right behind the
  // last one's, so that much of its route's latency overlapped the last
  // transfer, as a TCP window or queue pair does: a connection with a
  // backlog pays its path's latency once, not per message.
  double Overlap(size_t m) const { return double(Now() - At(m).start_ns) * 1e-9; }
  // Gives bundle B's action its members' bytes and rate bound (its penalty: SendInBundle's first to join).
  static void Weigh(Bundle& b);
  // Message M arrived: the sender's step completes (ON_SENT, unless its send
  // was done before: empty), then the receiver's engine hears of it.
  void Delivered(size_t m, const std::function<void()>& on_sent);
  void Sample();
  Message& At(size_t m) { return pending[m - pending_base]; }
  const Message& At(size_t m) const { return pending[m - pending_base]; }
  // Connection C's queue: appends message M; takes the oldest (C has one), with its on_sent.
  void Enqueue(Connection& c, size_t m) {
    if (c.tail == kNoMessage) c.head = m;
    else At(c.tail).next = m;
    c.tail = m;
  }
  std::pair<size_t, std::function<void()>> Dequeue(Connection& c) {
    const size_t m = c.head;
    Message& msg = At(m);
    c.head = msg.next;
    if (c.head == kNoMessage) c.tail = kNoMessage;
    msg.next = kNoMessage;
    return {m, std::move(msg.on_sent)};
  }
  // The simulated clock, whichever network runs.
  double NowSeconds() const { return fluid ? fluid->now() : s4u::Engine::get_clock(); }
  uint64_t Now() const { return fluid ? uint64_t(std::llround(fluid->now() * 1e9)) : flow::NowNs(); }
  // --solver incremental: sends connection C's first queued message (in two
  // flows where its send is done before it arrives: BeforeSent); the next
  // goes when it arrived, with what of its latency it paid while it waited
  // (Overlap).
  void FluidSendNext(Connection& c);
  // A connection's route channel: its lane (models/lanes.h) for the op of TAG.
  uint16_t RouteChannelOf(uint32_t job, uint16_t channel, uint64_t tag) const;
  // *LINKS: the directed links (2i or 2i+1 for graph link i) from endpoint
  // node A to B for (JOB, ROUTE_CHANNEL), by models::ConnectionPath; HOPS
  // caches hop counts towards network destinations. False, with *ERROR, when
  // B cannot be reached.
  bool RouteLinks(uint32_t a, uint32_t b, uint32_t job, uint16_t route_channel,
                  std::unordered_map<uint32_t, std::vector<uint32_t>>* hops, std::vector<uint32_t>* links,
                  std::string* error) const;
  // Puts shadows in place of the scale-up links of LINKS (a route) that it
  // crosses on its way to or from the network, where the link is at least
  // kShadowRatio times the route's slowest network link (else it may well be
  // the bottleneck, and shares as any link).
  void ShadowScaleUp(std::vector<uint32_t>* links);
  static constexpr double kShadowRatio = 4;
  // The directed graph link id D stands for (D itself, or the link of shadow D).
  uint32_t RealLink(uint32_t d) const {
    return d < 2 * graph.links.size() ? d : shadow_real[d - 2 * graph.links.size()];
  }
  // Per directed link id (shadows after the graph's): bytes per second, latency in seconds.
  double DirectedRate(uint32_t d) const;
  double DirectedLatency(uint32_t d) const;
  // Per-id values (shadows after the graph's) folded onto the graph's directed links.
  std::vector<double> FoldShadows(std::vector<double> per_id) const;
  // The message count, step count and routes the schedules use (receiver, sender, job, channel).
  using RouteSet = std::set<std::tuple<uint32_t, uint32_t, uint32_t, uint16_t>>;
  RouteSet CollectRoutes(uint64_t* deps_total);
  // Every route of ROUTES as directed links (shadows in place): what both networks are built from.
  bool AllRouteLinks(const RouteSet& routes, std::vector<std::vector<uint32_t>>* out, std::string* error);
  // lb=spray or ar: the stages of every route of ROUTES (models::ConnectionStages),
  // shadows in place, for FluidNetwork::AddSprayRoute.
  bool AllRouteStages(const RouteSet& routes, std::vector<std::vector<std::vector<uint32_t>>>* out,
                      std::string* error);
  // The network: SimGrid's platform (its engine, links, hosts and ROUTES), or FluidNetwork's.
  bool BuildSimGrid(const RouteSet& routes, std::string* error);
  bool BuildFluid(const RouteSet& routes, std::string* error);
  // Runs the jobs to their end: samples links.csv every INTERVAL s of simulated time (0: never) and prints
  // progress every 2 wall s.
  bool RunSimGrid(double interval, std::chrono::steady_clock::time_point wall_start, std::string* error);
  void RunFluid(double interval, std::chrono::steady_clock::time_point wall_start);
  std::vector<std::string> LinkNames() const;  // per directed link, as links.csv names it
  std::vector<double> LinkRates() const;       // and its rate in bit/s
  // Writes (or holds) the rows of the completed messages at the front; ALL:
  // every pending one, complete or not (the run ended).
  void FlushFlows(bool all);
  // One progress line on stderr.
  void PrintProgress(double wall_s, uint64_t* last_done, double* last_wall_s);
  // The records the run hands back.
  void FillRecords(double wall_seconds);
};

class FlowTransport final : public executor::Transport {
 public:
  FlowTransport(FlowSimulation::State* s, uint32_t job, int32_t endpoint) : s_(s), job_(job), endpoint_(endpoint) {}
  void Send(int32_t peer, uint16_t channel, uint64_t tag, uint64_t bytes, std::function<void()> on_sent) override {
    s_->Transfer(*this, job_, endpoint_, peer, channel, tag, bytes, false, std::move(on_sent));
  }
  // Same-host steps: only the count travels, at once; the receiving engine waits the model's time.
  void SendNotice(int32_t peer, uint16_t channel, uint64_t tag, uint64_t bytes,
                  std::function<void()> on_sent) override {
    s_->Transfer(*this, job_, endpoint_, peer, channel, tag, bytes, true, std::move(on_sent));
  }
  void StartTimer(uint64_t duration_ns, std::function<void()> cb) override {
    if (s_->fluid) {
      s_->fluid->At(s_->fluid->now() + double(duration_ns) * 1e-9, std::move(cb));
      return;
    }
    if (!home_) home_ = s_->HostOf(job_, endpoint_);
    s_->actors.Run(
        "timer", home_,
        [duration_ns](std::function<void()>& done) {
          s4u::this_actor::sleep_for(double(duration_ns) * 1e-9);
          done();
        },
        std::move(cb));
  }
  uint64_t NowNs() const override { return s_->Now(); }
  void Arrive(int32_t peer, uint16_t channel, uint64_t tag, uint64_t bytes, bool notice) {
    if (notice) DeliverNotice(peer, channel, tag, bytes);
    else Deliver(peer, channel, tag, bytes);
  }
  // This endpoint's connection to KEY (peer and lane); null
  // with *AT where to Add it. A sorted vector: an endpoint talks to a few
  // peers, and a search in one or two cache lines beats a hash map of every
  // connection of the run (at 16,384 ranks, a cache miss or two per message).
  Connection* Find(uint64_t key, size_t* at) {
    const auto it = std::lower_bound(connections_.begin(), connections_.end(), std::make_pair(key, nullptr),
                                     [](const auto& a, const auto& b) { return a.first < b.first; });
    *at = size_t(it - connections_.begin());
    return it != connections_.end() && it->first == key ? it->second : nullptr;
  }
  void Add(size_t at, uint64_t key, Connection* c) {
    connections_.insert(connections_.begin() + std::ptrdiff_t(at), {key, c});
  }

 private:
  FlowSimulation::State* s_;
  uint32_t job_;
  int32_t endpoint_;
  s4u::Host* home_ = nullptr;  // HostOf(job_, endpoint_), once asked
  std::vector<std::pair<uint64_t, Connection*>> connections_;  // by key, ascending
};

void FlowSimulation::State::Transfer(FlowTransport& from, uint32_t job, int32_t src, int32_t dst, uint16_t channel,
                                     uint64_t tag, uint64_t bytes, bool notice, std::function<void()> on_sent) {
  const size_t m = pending_base + pending.size();
  // flows.csv's local: both ends on one host (over NVLink, or the schedule's local link).
  const bool local = notice || graph.MachineOf(TopologyHost(job, src)) == graph.MachineOf(TopologyHost(job, dst));
  pending.push_back({tag, bytes, Now(), 0, src, dst, uint16_t(job), channel, notice, local, false});
  // Every callback runs in an actor of its own, never inside another engine's call.
  const bool same_host = notice || TopologyHost(job, src) == TopologyHost(job, dst);
  if (same_host && fluid) {
    pending.back().on_sent = std::move(on_sent);
    fluid->At(fluid->now(), [this, m]() {
      const std::function<void()> sent = std::move(At(m).on_sent);
      Delivered(m, sent);
    });
    return;
  }
  if (same_host) {
    actors.Run(
        "notice", HostOf(job, src), [this, m](std::function<void()>& sent) { Delivered(m, sent); },
        std::move(on_sent));
    return;
  }
  const uint16_t route_channel = RouteChannelOf(job, channel, tag);
  // The sender's connection to (receiver, lane): the lane is 16 bits (models/lanes.h: channel, its
  // queue pair, mode), endpoints below 2^24.
  const uint64_t key = uint64_t(uint32_t(dst)) << 16 | route_channel;
  size_t at = 0;
  Connection* found = from.Find(key, &at);
  if (!found) {
    found = &connections.emplace_back();
    from.Add(at, key, found);
  }
  Connection& c = *found;
  pending.back().on_sent = std::move(on_sent);
  Enqueue(c, m);
  if (fluid) {
    if (c.route == FluidNetwork::kNone)
      c.route = fluid_routes.at({TopologyHost(job, dst), TopologyHost(job, src), job, route_channel});
    if (!c.active) {
      c.active = true;
      FluidSendNext(c);
    }
    return;
  }
  if (!c.queued) {
    c.queued = s4u::Semaphore::create(0);
    c.from = HostOf(job, src, route_channel);
    c.to = HostOf(job, dst, route_channel);
    c.links = &simgrid_routes.at({TopologyHost(job, dst), TopologyHost(job, src), job, route_channel});
  }
  c.queued->release();
  if (c.active) return;
  c.active = true;
  actors.Run("connection", c.from, [this, &c]() {
    while (!c.queued->acquire_timeout(kLingerSeconds)) {  // false: a message is queued
      auto [message, sent] = Dequeue(c);
      const uint64_t bytes = At(message).bytes;  // its row may go once delivered
      uint64_t rest = 0;
      const uint64_t before = BeforeSent(bytes, &rest);
      if (rest > 0) {  // the send buffer takes REST bytes: the send is done once the others arrived
        if (before > 0) Send(message, before, c.from, c.to, sent, false, Overlap(message));
        else sent();
        sent = nullptr;
      }
      Send(message, rest > 0 ? rest : bytes, c.from, c.to, sent, true, Overlap(message));
      for (uint32_t d : *c.links) delivered_link_bytes[d] += double(bytes);
    }
    c.active = false;
  });
}

void FlowSimulation::State::FluidSendNext(Connection& c) {
  const size_t m = c.head;
  uint64_t rest = 0;
  const uint64_t before = BeforeSent(At(m).bytes, &rest);
  if (rest > 0 && !c.head_sent) {  // the send buffer takes REST bytes: the send is done once the others arrived
    c.head_sent = true;
    if (before > 0) {
      fluid->StartFlow(
          c.route, double(before),
          [this, &c]() {
            const std::function<void()> sent = std::move(At(c.head).on_sent);
            sent();  // may queue more on C
            FluidSendNext(c);
          },
          config.coalesce, Overlap(m));
      return;
    }
    fluid->At(fluid->now(), [this, m]() {  // before its last byte can arrive: an event of this instant
      const std::function<void()> sent = std::move(At(m).on_sent);
      sent();
    });
  }
  fluid->StartFlow(
      c.route, double(rest > 0 ? rest : before),
      [this, &c]() {
        auto [message, sent] = Dequeue(c);  // SENT: empty if its send was done before
        c.head_sent = false;
        Delivered(message, sent);  // may queue more on C
        if (c.head == kNoMessage) c.active = false;
        else FluidSendNext(c);
      },
      config.coalesce, Overlap(m));
}

void FlowSimulation::State::Send(size_t m, uint64_t bytes, s4u::Host* from, s4u::Host* to,
                                 const std::function<void()>& on_sent, bool arrives, double overlap) {
  const Message msg = At(m);  // a copy: other actors add messages while this one waits
  models::JobProgress* progress = jobs[msg.job]->progress.get();
  if (!progress && bundling && bytes > 0) {
    SendInBundle(m, bytes, from, to, on_sent, arrives, overlap);
    return;
  }
  if (!progress || bytes == 0) {
    simgrid::kernel::resource::Action* action = nullptr;
    double left = 0;
    s4u::CommPtr comm = StartComm(from, to, bytes, overlap, &action, &left);
    if (bytes > 0) ShareEqually({action}, left);  // (one of 0 bytes ends as its latency is paid)
    comm->wait();
    Reached(m, on_sent, arrives);
    return;
  }
  const uint32_t op = models::TagOp(msg.tag);
  progress->Begin(msg.src, op);
  const uint64_t chunks = std::max<uint32_t>(1, config.mltcp_chunks);
  const uint64_t piece = std::max(kMltcpMinChunk, (msg.bytes + chunks - 1) / chunks);
  std::vector<s4u::CommPtr> comms;
  std::vector<simgrid::kernel::resource::Action*> actions;
  for (uint64_t left = bytes; left > 0;) {
    const uint64_t n = std::min(left, piece);
    const double f = config.mltcp_function(progress->Ratio(msg.src, models::MltcpScope::kEndpoint));
    const uint64_t k = std::min<uint64_t>(uint64_t(MltcpStreams(f)), n);
    comms.clear();
    actions.assign(k, nullptr);
    double latency_left = 0;
    for (uint64_t i = 0; i < k; ++i)
      comms.push_back(StartComm(from, to, n / k + (i < n % k ? 1 : 0), 0, &actions[i], &latency_left));
    ShareEqually(actions, latency_left);
    s4u::Comm::wait_all(comms);
    progress->Sent(msg.src, op, n);  // delivered: what an ACK tells MLTCP
    left -= n;
  }
  Reached(m, on_sent, arrives);
}

void FlowSimulation::State::SendInBundle(size_t m, uint64_t bytes, s4u::Host* from, s4u::Host* to,
                                         const std::function<void()>& on_sent, bool arrives, double overlap) {
  using simgrid::kernel::resource::ActionHeap;
  const double now = s4u::Engine::get_clock();
  const auto key = std::make_tuple(from, to, bytes);
  const auto open = bundles.find(key);
  // Joinable while its action is being made (every actor of a round runs to
  // its next simcall before SimGrid answers any) or waits out the latency.
  if (open != bundles.end() && open->second->clock == now && open->second->overlap == overlap &&
      (!open->second->action || open->second->action->get_type() == ActionHeap::Type::latency)) {
    Bundle& b = *open->second;
    b.members.emplace_back(m, &on_sent, arrives);
    if (b.action) Weigh(b);
    const bool first = !b.delivered;
    if (first) b.delivered = s4u::Semaphore::create(0);
    const s4u::SemaphorePtr delivered = b.delivered;  // the leader's B ends as it releases
    if (first) {
      double latency = 0;
      const double penalty = RoutePenalty(from, to, &latency);
      // Until SimGrid enabled it with one message's penalty.
      s4u::this_actor::sleep_for(std::max(0.0, latency * latency_factor - overlap));
      if (b.action) b.action->set_sharing_penalty(penalty / double(b.members.size()));  // else the leader sent each
    }
    delivered->acquire();  // the leader delivered M
    return;
  }
  Bundle b;
  b.clock = now;
  b.overlap = overlap;
  b.bytes = bytes;
  b.members.emplace_back(m, &on_sent, arrives);
  bundles[key] = &b;
  simgrid::kernel::resource::Action* action = nullptr;
  double latency_left = 0;
  s4u::CommPtr comm = StartComm(from, to, bytes, overlap, &action, &latency_left);
  if (action && action->get_type() == ActionHeap::Type::latency) {
    b.action = action;
    b.bound = action->get_bound();
    Weigh(b);
    // With equal shares a bundle that nobody joined shares with penalty 1
    // (one that was joined: its first to join divides RoutePenalty's 1).
    if (config.equal_shares) {
      s4u::this_actor::sleep_for(latency_left);
      if (b.members.size() == 1) action->set_sharing_penalty(1.0);
    }
    comm->wait();
    messages_coalesced += b.members.size() - 1;
  } else {  // a route without latency: its variable already shares, so the others go alone
    bundles.erase(key);
    std::vector<s4u::CommPtr> comms{comm};
    for (size_t i = 1; i < b.members.size(); ++i) comms.push_back(StartComm(from, to, bytes, overlap));
    s4u::Comm::wait_all(comms);
  }
  const auto self = bundles.find(key);
  if (self != bundles.end() && self->second == &b) bundles.erase(self);
  for (const auto& [member, sent, member_arrives] : b.members) Reached(member, *sent, member_arrives);
  for (size_t i = 1; i < b.members.size(); ++i) b.delivered->release();
}

double FlowSimulation::State::RoutePenalty(s4u::Host* from, s4u::Host* to, double* latency) const {
  std::vector<s4u::Link*> links;
  from->route_to(to, links, latency);
  if (config.equal_shares) return 1.0;
  double penalty = *latency;
  if (weight_s > 0)
    for (const s4u::Link* l : links) penalty += weight_s / l->get_bandwidth();
  return penalty;
}

s4u::CommPtr FlowSimulation::State::StartComm(s4u::Host* from, s4u::Host* to, uint64_t bytes, double overlap,
                                              simgrid::kernel::resource::Action** started_action,
                                              double* latency_left) {
  double penalty = 0;  // the route's sharing penalty, when none of its latency is left
  double factor = latency_factor;
  if (overlap > 0 || latency_left) {
    double latency = 0;
    const double route_penalty = RoutePenalty(from, to, &latency);
    const double left = std::max(0.0, latency * latency_factor - overlap);
    if (latency > 0) {
      factor = left / latency;
      // With equal shares it has penalty 1 already (and setting the same
      // value takes an action off SimGrid's lazy heap with no solve to put it back).
      if (left == 0 && !config.equal_shares) penalty = route_penalty;
    }
    if (latency_left) *latency_left = latency > 0 ? left : 0;
  }
  latency_factors[{from, to}].emplace_back(bytes, factor);  // SimGrid's callback takes it as it makes the action
  s4u::CommPtr comm = s4u::Comm::sendto_async(from, to, bytes);
  if (!started_action && penalty == 0) return comm;
  // SimGrid made the communication's action as it answered the round's
  // simcalls, each appended to its model's started set: this one is among
  // the last, those of the round's other actors after it.
  simgrid::kernel::resource::Action* action = nullptr;
  auto* started = network->get_started_action_set();
  for (auto it = started->rbegin(); it != started->rend() && !action; ++it)
    if (it->get_activity() == comm->get_impl()) action = &*it;
  // Without a latency to pay, CM02 shares it at once with penalty 1; as if
  // it had paid one, it shares with its route's (Bundle).
  if (action && penalty > 0) action->set_sharing_penalty(penalty);
  if (started_action) *started_action = action;
  return comm;
}

void FlowSimulation::State::ShareEqually(const std::vector<simgrid::kernel::resource::Action*>& actions,
                                         double latency_left) {
  if (!config.equal_shares || latency_left <= 0) return;
  s4u::this_actor::sleep_for(latency_left);
  for (simgrid::kernel::resource::Action* a : actions)
    if (a) a->set_sharing_penalty(1.0);
}

void FlowSimulation::State::Weigh(Bundle& b) {
  const double k = double(b.members.size());
  if (k == 1) return;
  b.action->set_remains(k * double(b.bytes));
  b.action->set_bound(b.bound * k);
}

void FlowSimulation::State::Delivered(size_t m, const std::function<void()>& on_sent) {
  Message& at = At(m);
  at.end_ns = Now();
  at.done = true;
  ++messages_done;
  // Copies: the callbacks add messages, and the row may go.
  const uint64_t tag = at.tag, bytes = at.bytes;
  const int32_t src = at.src, dst = at.dst;
  const uint16_t job = at.job, channel = at.channel;
  const bool notice = at.notice;
  FlushFlows(false);
  if (on_sent) on_sent();
  jobs[job]->transports[size_t(dst)]->Arrive(src, channel, tag, bytes, notice);
}

void FlowSimulation::State::FlushFlows(bool all) {
  while (!pending.empty() && (all || pending.front().done)) {
    const Message& m = pending.front();
    // A message's op is its tag's (models::MakeTag).
    const runs::FlowRecord row{m.job, models::TagOp(m.tag), m.src, m.dst, m.channel, m.bytes, m.local, m.start_ns,
                               m.end_ns};
    if (flows_out) flows_out->Add(row);
    else flows.push_back(row);
    pending.pop_front();
    ++pending_base;
  }
}

void FlowSimulation::State::PrintProgress(double wall_s, uint64_t* last_done, double* last_wall_s) {
  uint64_t steps_done = 0, endpoints = 0, finished = 0;
  for (const auto& job : jobs) {
    for (const auto& engine : job->engines) steps_done += engine->result().steps_done;
    endpoints += job->done.size();
    finished += job->done_count;
  }
  const double dt = wall_s - *last_wall_s;
  std::fprintf(stderr,
               "dltrace simulate (flow): %.3f ms simulated, %" PRIu64 " of %" PRIu64
               " messages done (%.0f per wall s; %" PRIu64 " joined another's flow), %" PRIu64 " of %" PRIu64
               " steps, %" PRIu64 " of %" PRIu64
               " endpoints finished, %zu flows.csv rows waiting, %zu %s, memory %.0f MiB, %.0f s wall\n",
               NowSeconds() * 1e3, messages_done, messages_total,
               dt > 0 ? double(messages_done - *last_done) / dt : 0.0,
               fluid ? fluid->flows_joined() : messages_coalesced, steps_done, steps_total, finished, endpoints,
               pending.size(), fluid ? fluid->flows_active() : actors.actors(), fluid ? "flows sharing" : "actors",
               double(CurrentRssKb()) / 1024, wall_s);
  *last_done = messages_done;
  *last_wall_s = wall_s;
}

void FlowSimulation::State::Sample() {
  std::vector<double> cum(directed.size());
  if (fluid) cum = fluid->LinkBytes();
  else
    for (size_t d = 0; d < directed.size(); ++d) cum[d] = sg_link_get_cum_load(directed[d]) * bandwidth_factor;
  cum = FoldShadows(std::move(cum));
  std::vector<double> bytes(last_cum.size(), 0);
  for (size_t d = 0; d < last_cum.size(); ++d) {
    bytes[d] = cum[d] - last_cum[d];
    last_cum[d] = cum[d];
  }
  if (links_out) links_out->Add(NowSeconds(), bytes);
  else samples.emplace_back(NowSeconds(), std::move(bytes));
}

FlowSimulation::State::RouteSet FlowSimulation::State::CollectRoutes(uint64_t* deps_total) {
  RouteSet routes;
  for (uint32_t j = 0; j < jobs.size(); ++j) {
    const JobState& job = *jobs[j];
    for (size_t e = 0; e < job.schedule.ranks.size(); ++e) {
      steps_total += job.schedule.ranks[e].steps.size();
      *deps_total += job.schedule.ranks[e].deps.size();
      for (const auto& st : job.schedule.ranks[e].steps) {
        if (st.type != models::StepType::kSend) continue;
        ++messages_total;
        const uint32_t a = job.placement.hosts[e], b = job.placement.hosts[size_t(st.peer)];
        if (!st.local && a != b) routes.insert({b, a, j, RouteChannelOf(j, st.channel, st.tag)});
      }
    }
  }
  return routes;
}

uint16_t FlowSimulation::State::RouteChannelOf(uint32_t job, uint16_t channel, uint64_t tag) const {
  if (graph.gpus_per_host == 1) return channel;
  const models::Schedule& schedule = jobs[job]->schedule;
  const uint32_t op = models::TagOp(tag);
  const models::RailMode mode = op < schedule.ops.size()
                                    ? models::OpRailMode(graph, schedule.ops[op], jobs[job]->placement.nic)
                                    : jobs[job]->placement.nic.ModeFor(false);
  return models::MakeLane(channel, mode);
}

bool FlowSimulation::State::RouteLinks(uint32_t a, uint32_t b, uint32_t job, uint16_t route_channel,
                                       std::unordered_map<uint32_t, std::vector<uint32_t>>* hops,
                                       std::vector<uint32_t>* links, std::string* error) const {
  const uint16_t channel = models::LaneChannel(route_channel);
  const models::RailMode mode = models::LaneMode(route_channel);
  auto hops_to = [&](uint32_t n) -> const std::vector<uint32_t>& {
    auto it = hops->find(n);
    if (it != hops->end()) return it->second;
    if (hops->size() >= 64) hops->clear();  // routes come sorted by receiver: few ends at a time
    return hops->emplace(n, graph.HopsTo(n)).first->second;
  };
  links->clear();
  uint32_t at = a;
  for (uint32_t li :
       models::ConnectionPath(graph, a, b, channel, mode, models::FlowHash(a, b, job, channel), hops_to)) {
    const auto& l = graph.links[li];
    const bool forward = l.a == at;
    links->push_back(2 * li + (forward ? 0 : 1));
    at = forward ? l.b : l.a;
  }
  if (links->empty())
    *error = "topology " + spec.Describe() + ": no path from " + graph.names[a] + " to " + graph.names[b] +
             " (job " + std::to_string(job) + ")";
  return !links->empty();
}

void FlowSimulation::State::ShadowScaleUp(std::vector<uint32_t>* links) {
  double network_rate = 0;  // the route's slowest network link (0: it stays in the domain)
  for (uint32_t d : *links) {
    const auto& l = graph.links[d / 2];
    if (!l.scale_up) network_rate = network_rate > 0 ? std::min(network_rate, double(l.rate_bps)) : double(l.rate_bps);
  }
  if (network_rate == 0) return;
  for (uint32_t& d : *links) {
    const auto& l = graph.links[d / 2];
    if (!l.scale_up || double(l.rate_bps) < kShadowRatio * network_rate) continue;
    if (shadow_of.empty()) shadow_of.assign(2 * graph.links.size(), kNoShadow);
    if (shadow_of[d] == kNoShadow) {
      shadow_of[d] = uint32_t(2 * graph.links.size() + shadow_real.size());
      shadow_real.push_back(d);
    }
    d = shadow_of[d];
  }
}

double FlowSimulation::State::DirectedRate(uint32_t d) const {
  // A shadow: enough for any flow that crosses it, so it never binds (nor adds weight-S).
  if (d >= 2 * graph.links.size()) return 1e9 * DirectedRate(RealLink(d));
  return double(graph.links[d / 2].rate_bps) / 8;
}

double FlowSimulation::State::DirectedLatency(uint32_t d) const {
  return double(graph.links[RealLink(d) / 2].delay_ns) * 1e-9;
}

std::vector<double> FlowSimulation::State::FoldShadows(std::vector<double> per_id) const {
  const size_t n = 2 * graph.links.size();
  for (size_t i = 0; i < shadow_real.size() && n + i < per_id.size(); ++i) per_id[shadow_real[i]] += per_id[n + i];
  per_id.resize(std::min(per_id.size(), n));
  return per_id;
}

bool FlowSimulation::State::AllRouteLinks(const RouteSet& routes, std::vector<std::vector<uint32_t>>* out,
                                          std::string* error) {
  std::unordered_map<uint32_t, std::vector<uint32_t>> hops;
  out->clear();
  out->reserve(routes.size());
  for (const auto& [b, a, j, ch] : routes) {
    out->emplace_back();
    if (!RouteLinks(a, b, j, ch, &hops, &out->back(), error)) return false;
    ShadowScaleUp(&out->back());
  }
  return true;
}

bool FlowSimulation::State::AllRouteStages(const RouteSet& routes,
                                           std::vector<std::vector<std::vector<uint32_t>>>* out, std::string* error) {
  std::unordered_map<uint32_t, std::vector<uint32_t>> hops;
  auto hops_to = [&](uint32_t n) -> const std::vector<uint32_t>& {
    auto it = hops.find(n);
    if (it != hops.end()) return it->second;
    if (hops.size() >= 64) hops.clear();
    return hops.emplace(n, graph.HopsTo(n)).first->second;
  };
  out->clear();
  for (const auto& [b, a, j, ch] : routes) {
    auto stages = models::ConnectionStages(graph, a, b, models::LaneChannel(ch), models::LaneMode(ch), hops_to);
    if (stages.empty()) {
      *error = "topology " + spec.Describe() + ": no path from " + graph.names[a] + " to " + graph.names[b] +
               " (job " + std::to_string(j) + ")";
      return false;
    }
    std::vector<uint32_t> first;  // each stage's first link: the scale-up hops get their shadows
    for (const auto& stage : stages) first.push_back(stage[0]);
    ShadowScaleUp(&first);
    for (size_t s = 0; s < stages.size(); ++s)
      if (stages[s].size() == 1) stages[s][0] = first[s];
    out->push_back(std::move(stages));
  }
  return true;
}

bool FlowSimulation::State::BuildFluid(const RouteSet& routes, std::string* error) {
  FluidParams params;
  if (!FluidParamsFrom(config.simgrid_cfg, &params, error)) return false;
  params.equal_shares = config.equal_shares;
  std::vector<std::vector<uint32_t>> route_links;
  std::vector<std::vector<std::vector<uint32_t>>> route_stages;
  const bool spread = models::SpreadsFlows(graph.lb);  // lb=spray, ar: a message over its equal-cost paths
  if (spread ? !AllRouteStages(routes, &route_stages, error) : !AllRouteLinks(routes, &route_links, error))
    return false;
  std::vector<double> bandwidth, latency;
  for (uint32_t d = 0; d < 2 * graph.links.size() + shadow_real.size(); ++d) {
    bandwidth.push_back(DirectedRate(d));
    latency.push_back(DirectedLatency(d));
  }
  fluid = std::make_unique<FluidNetwork>(std::move(bandwidth), std::move(latency), params);
  auto links = route_links.begin();
  auto stages = route_stages.begin();
  for (const auto& key : routes) {
    const uint32_t route = spread ? fluid->AddSprayRoute(*stages++) : fluid->AddRoute(*links++);
    if (route == FluidNetwork::kNone) {
      *error = std::string("--topo lb=") + models::LoadBalancerName(graph.lb) + ": topology " + spec.Describe() +
               " has equal-cost link groups that overlap (a fault?), so its paths cannot share evenly; use lb=ecmp";
      return false;
    }
    fluid_routes[key] = route;
  }
  return true;
}

bool FlowSimulation::State::BuildSimGrid(const RouteSet& routes, std::string* error) {
  // SimGrid's settings through its configuration API: ours, then the user's
  // (a bad key or value throws, and is reported as one line below).
  std::string program = "dltrace-flow";
  char* argv[] = {program.data(), nullptr};
  int argc = 1;
  try {
    engine = std::make_unique<s4u::Engine>(&argc, argv);
    xbt_log_control_set("root.thres:critical");
    for (const char* c : {"contexts/stack-size:32", "contexts/guard-size:0"}) s4u::Engine::set_config(c);
    // network/latency-factor stays ours: SimGrid takes it or a callback, not both, and the callback
    // (StartComm) lets a message that waited behind another pay only the rest of its latency.
    std::vector<std::string> cfg = DefaultSimGridConfig();
    cfg.insert(cfg.end(), config.simgrid_cfg.begin(), config.simgrid_cfg.end());
    const std::string kLatencyFactor = "network/latency-factor:";
    for (const auto& c : cfg) {
      if (c.rfind(kLatencyFactor, 0) != 0) continue;
      char* end = nullptr;
      const std::string value = c.substr(kLatencyFactor.size());
      latency_factor = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !std::isfinite(latency_factor) || latency_factor < 0) {
        *error = "--cfg " + c + ": network/latency-factor takes a number of 0 or more";
        return false;
      }
    }
    for (const auto& c : cfg) {
      if (c.rfind(kLatencyFactor, 0) == 0) continue;
      try {
        s4u::Engine::set_config(c);
      } catch (const std::exception& e) {
        const std::string what = e.what();
        *error = "--cfg " + c + ": SimGrid: " + what.substr(0, what.find('\n'));  // it lists every key after
        return false;
      }
    }
    sg_link_load_plugin_init();
    auto* zone = s4u::create_full_zone("dltrace");
    std::vector<std::vector<uint32_t>> route_links;
    if (!AllRouteLinks(routes, &route_links, error)) return false;
    const std::vector<std::string> names = LinkNames();  // per direction of each graph link
    for (uint32_t d = 0; d < names.size() + shadow_real.size(); ++d) {
      const std::string name = d < names.size() ? names[d] : names[RealLink(d)] + "/shadow";
      directed.push_back(zone->create_link(name, DirectedRate(d))->set_latency(DirectedLatency(d))->seal());
    }
    // The SimGrid hosts and the routes between those that exchange data: one
    // equal-cost path per (sender host, receiver host, job, channel), chosen by
    // the per-flow ECMP rule the ns-3 module routes by (models::FlowHash).
    auto host = [&](uint32_t h, uint32_t j, uint16_t ch) {
      s4u::Host*& at = hosts[State::HostKey(h, j, ch)];
      if (!at)
        at = zone->create_host(graph.names[h] + "/job" + std::to_string(j) + "/ch" + std::to_string(ch), 1e9)
                 ->seal();
      return at;
    };
    for (uint32_t j = 0; j < jobs.size(); ++j)
      for (uint32_t h : jobs[j]->placement.hosts) host(h, j, 0);
    auto links = route_links.begin();
    for (const auto& [b, a, j, ch] : routes) {
      std::vector<s4u::LinkInRoute> route;
      for (uint32_t d : *links) route.emplace_back(directed[d]);
      zone->add_route(host(a, j, ch)->get_netpoint(), host(b, j, ch)->get_netpoint(), nullptr, nullptr, route, false);
      // What the message crosses, for the bytes delivered over each link: shadows stand for their links.
      for (uint32_t& d : *links) d = RealLink(d);
      simgrid_routes[{b, a, j, ch}] = std::move(*links++);
    }
    zone->seal();
    delivered_link_bytes.assign(2 * graph.links.size(), 0);
    using simgrid::config::get_value;
    bandwidth_factor = get_value<double>("network/bandwidth-factor");
    // SimGrid's network model is a Model (its actions) and a NetworkModelIntf (what a zone hands out).
    // Bundles follow CM02's and LV08's sharing penalty and latency (Bundle), with the lazy updates that keep a
    // flow's latency apart.
    const std::string& model = get_value<std::string>("network/model");
    network = dynamic_cast<simgrid::kernel::resource::Model*>(zone->get_network_model());
    weight_s = get_value<double>("network/weight-S");
    bundling = network && config.coalesce && (model == "LV08" || model == "CM02") &&
               get_value<std::string>("network/optim") == "Lazy";
    // The factor each communication's latency is scaled by, as SimGrid makes its action (StartComm).
    zone->get_network_model()->set_lat_factor_cb(
        [this](double bytes, const s4u::Host* from, const s4u::Host* to, const std::vector<s4u::Link*>&,
               const std::unordered_set<s4u::NetZone*>&) {
          double factor = latency_factor;  // for a communication StartComm did not make
          const auto queued = latency_factors.find({from, to});
          if (queued == latency_factors.end()) return factor;
          auto& q = queued->second;
          while (!q.empty() && q.front().first != bytes) q.pop_front();  // one SimGrid made without asking
          if (!q.empty()) {
            factor = q.front().second;
            q.pop_front();
          }
          if (q.empty()) latency_factors.erase(queued);
          return factor;
        });
  } catch (const std::exception& e) {
    *error = std::string("SimGrid: ") + e.what();
    return false;
  }
  for (auto* link : directed) sg_link_load_track(link);
  return true;
}

FlowSimulation::FlowSimulation() : state_(std::make_unique<State>()) {}
FlowSimulation::~FlowSimulation() = default;

bool FlowSimulation::Setup(const FlowConfig& config, std::string* error) {
  State& s = *state_;
  s.config = config;
  if (config.jobs.empty()) {
    *error = "no job to simulate";
    return false;
  }
  // Load, lower, cut and place every job (models::PrepareJobs, as every executor does).
  const auto setup_start = std::chrono::steady_clock::now();
  std::vector<models::JobPlacement> placements = config.jobs;
  std::vector<models::PreparedJob> prepared;
  uint32_t needed = 0;
  // Loading a large job takes minutes: a line as each stage of it ends, once
  // 2 s have passed (a small job's bad input stays one error line).
  std::function<void(const char*)> on_stage;
  if (config.progress)
    on_stage = [setup_start](const char* stage) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - setup_start).count();
      if (s >= 2)
        std::fprintf(stderr, "dltrace simulate (flow): trace set %s, %.1f s; memory %.0f MiB\n", stage, s,
                     double(CurrentRssKb()) / 1024);
    };
  // A large job's schedule is hundreds of thousands of step vectors, each
  // grown while it is lowered and then shrunk to fit (models::ReallocVector).
  // While lowering, blocks of 64 KiB and up come straight from mmap: realloc
  // then moves their pages (mremap) instead of copying them into fresh pages
  // the kernel must zero, the unused half of a doubled vector is address
  // space, not memory, and a freed one goes back at once (glibc's adaptive
  // threshold would move such blocks into the heap, where their spare
  // capacity stays resident). 16,384-rank GPT-3 (README "Scale"): a median
  // 86.4 s to lowered and a 13,200 MiB peak, against 102.3 s and 14,177 MiB
  // with std::vector and 256 KiB.
  mallopt(M_MMAP_THRESHOLD, 64 * 1024);
  uint32_t fabric_gpus = 1;
  if (!models::TopologyGpusPerHost(config.topology, &fabric_gpus, error)) return false;
  models::TopologySpec unsized;  // what the spec says before it is sized to the jobs
  if (!models::ParseTopology(config.topology, 1, &unsized, error)) return false;
  if (models::SpreadsFlows(unsized.lb) && config.solver != FlowConfig::Solver::kIncremental) {
    *error = std::string("--topo lb=") + models::LoadBalancerName(unsized.lb) +
             ": the flow simulator spreads messages over equal-cost paths with --solver incremental only";
    return false;
  }
  if (!models::PrepareJobs(&placements, &prepared, &needed, error, on_stage, fabric_gpus)) return false;
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);  // the simulation's own blocks: as they were measured at scale
  if (!models::ParseTopology(config.topology, needed, &s.spec, error) || !s.spec.Fits(needed, error)) return false;
  s.graph = models::BuildTopology(s.spec);
  for (size_t j = 0; j < prepared.size(); ++j) {
    auto job = std::make_unique<JobState>();
    job->placement = placements[j];
    job->schedule = std::move(prepared[j].schedule);
    if (!models::SplitQueuePairs(&job->schedule, job->placement.hosts, &s.graph, job->placement.nic, error)) {
      *error = "job " + std::to_string(j) + ": " + *error;
      return false;
    }
    const std::unique_ptr<models::Job> loaded = std::move(prepared[j].loaded);  // null for a schedule given in code
    // Incomplete input (a truncated or damaged file, a missing rank) is
    // simulated as far as it goes, and said as replay and schedule say it.
    if (loaded)
      for (const auto& n : loaded->notes) std::fprintf(stderr, "dltrace: warning: %s\n", n.c_str());
    // The trace set and its merge are not needed past here: at 16,384 ranks
    // they are 1.9 GiB the run would otherwise hold to its end.
    job->recorded = runs::RecordedRun(job->schedule, loaded ? &loaded->merged : nullptr);
    if (job->schedule.ranks.empty()) {
      *error = "job " + std::to_string(j) + " has no endpoints to simulate";
      return false;
    }
    if (config.mltcp) job->progress = std::make_unique<models::JobProgress>(job->schedule);
    s.jobs.push_back(std::move(job));
  }
  malloc_trim(0);  // what lowering and the trace sets freed in the heap goes back before the engines are made
  const double lowered_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - setup_start).count();

  uint64_t deps_total = 0;  // for the progress line
  const auto routes = s.CollectRoutes(&deps_total);
  if (config.solver == FlowConfig::Solver::kIncremental) {
    if (config.mltcp) {
      *error = "--cc mltcp: the incremental solver shares max-min only; use --solver simgrid";
      return false;
    }
    if (!s.BuildFluid(routes, error)) return false;
  } else {
    if (!s.BuildSimGrid(routes, error)) return false;
  }
  s.last_cum.assign(2 * s.graph.links.size(), 0);
  if (config.progress) {
    uint64_t endpoints = 0;
    for (const auto& job : s.jobs) endpoints += job->schedule.ranks.size();
    std::fprintf(stderr,
                 "dltrace simulate (flow): lowered %" PRIu64 " endpoints (%" PRIu64 " steps, %" PRIu64
                 " dependencies, %" PRIu64 " messages) in %.1f s; platform of %zu hosts and %zu link directions in "
                 "%.1f s; memory %.0f MiB\n",
                 endpoints, s.steps_total, deps_total, s.messages_total, lowered_s,
                 s.fluid ? size_t(s.graph.hosts) : s.hosts.size(), s.last_cum.size(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - setup_start).count() - lowered_s,
                 double(CurrentRssKb()) / 1024);
    if (!s.fluid && endpoints >= kIncrementalHintEndpoints)
      std::fprintf(stderr,
                   "dltrace simulate (flow): note: --solver incremental shares bandwidth the same way and runs jobs "
                   "of this size several times faster (docs: results/scale-flow)\n");
  }

  for (uint32_t j = 0; j < s.jobs.size(); ++j) {
    JobState& job = *s.jobs[j];
    const size_t n = job.schedule.ranks.size();
    job.results.resize(n);
    job.done.assign(n, false);
    executor::ExecutorOptions executor_options;
    executor_options.time_scale = job.placement.time_scale;
    executor_options.step_times = false;  // flows.csv is written from the messages, not from step times
    for (size_t e = 0; e < n; ++e) {
      job.results[e].endpoint = int32_t(e);
      job.results[e].error = "never finished (waiting on a peer that never sent)";
      job.transports.push_back(std::make_unique<FlowTransport>(&s, j, int32_t(e)));
    }
    job.hasher = std::thread([&job]() { job.HashAndFreeDependencies(); });
    for (size_t e = 0; e < n; ++e) {
      job.engines.push_back(
          std::make_unique<executor::ScheduleExecutor>(job.schedule, int32_t(e), *job.transports[e], executor_options));
      job.built.store(e + 1, std::memory_order_release);
    }
    s.endpoints_left += n;
    for (size_t e = 0; e < n; ++e) {
      const double start = double(job.placement.start_ns) * 1e-9;
      auto run = [&s, &job, e]() {
        job.engines[e]->Start([&s, &job, e](const executor::RankResult&) {
          if (!job.done[e]) {
            job.done[e] = true;
            ++job.done_count;
            if (--s.endpoints_left == 0) s.finish_s = s.NowSeconds();
          }
        });
      };
      if (s.fluid) {
        s.fluid->At(start, run);
      } else {
        s.actors.Run("start", s.HostOf(j, int32_t(e)), [start, run]() {
          s4u::this_actor::sleep_until(start);
          run();
        });
      }
    }
  }
  return true;
}

bool FlowSimulation::Run(std::string* error) {
  State& s = *state_;
  const auto wall_start = std::chrono::steady_clock::now();
  const double interval = double(s.config.util_interval_ns) * 1e-9;
  if (!s.config.stream_dir.empty()) {
    s.flows_out = std::make_unique<runs::FlowsCsvWriter>(s.config.stream_dir + "/flows.csv");
    s.links_out = std::make_unique<runs::LinksCsvWriter>(s.config.stream_dir + "/links.csv");
    if (!s.flows_out->Open(error) || !s.links_out->Open(s.LinkNames(), s.LinkRates(), error)) return false;
  }
  if (s.fluid) s.RunFluid(interval, wall_start);
  else if (!s.RunSimGrid(interval, wall_start, error)) return false;
  if (interval > 0 && !s.final_sampled) s.Sample();
  if (s.config.progress && (s.bundling || (s.fluid && s.config.coalesce)))
    std::fprintf(stderr,
                 "dltrace simulate (flow): %" PRIu64 " of %" PRIu64
                 " messages went in the %s flow of an equal one that started with them between the same hosts "
                 "(--no-coalesce: one flow each)\n",
                 s.fluid ? s.fluid->flows_joined() : s.messages_coalesced, s.messages_total,
                 s.fluid ? "incremental solver's" : "SimGrid");
  if (s.config.progress && s.fluid)
    std::fprintf(stderr,
                 "dltrace simulate (flow): incremental solver: %" PRIu64 " flows, %" PRIu64
                 " instants re-solved, %.1f flows re-solved and %.1f rates changed per instant\n",
                 s.fluid->flows_started() - s.fluid->flows_joined(), s.fluid->solves(),
                 s.fluid->solves() ? double(s.fluid->flows_resolved()) / double(s.fluid->solves()) : 0.0,
                 s.fluid->solves() ? double(s.fluid->rate_changes()) / double(s.fluid->solves()) : 0.0);
  for (auto& job : s.jobs) job->JoinHasher();  // its hash goes in the results
  s.FlushFlows(true);
  if (s.flows_out && (!s.flows_out->Commit(error) || !s.links_out->Commit(error))) return false;
  // Each finished endpoint's result, moved out of its engine; then the engines go.
  for (auto& job : s.jobs) {
    for (size_t e = 0; e < job->engines.size(); ++e)
      if (job->done[e]) job->results[e] = job->engines[e]->TakeResult();
    job->engines.clear();
  }
  s.FillRecords(std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count());
  for (size_t j = 0; j < s.jobs.size(); ++j) {
    const JobState& job = *s.jobs[j];
    if (job.done_count == job.done.size()) continue;
    for (size_t e = 0; e < job.done.size(); ++e)
      if (!job.done[e]) {
        *error = "job " + std::to_string(j) + ": " + std::to_string(job.done.size() - job.done_count) + " of " +
                 std::to_string(job.done.size()) + " endpoints never finished (endpoint " + std::to_string(e) +
                 " first); the schedule stalled";
        return false;
      }
  }
  for (const auto& job : s.records.jobs)
    for (const auto& r : job.results)
      if (!r.complete) {
        *error = "endpoint " + std::to_string(r.endpoint) + ": " + r.error;
        return false;
      }
  return true;
}

bool FlowSimulation::State::RunSimGrid(double interval, std::chrono::steady_clock::time_point wall_start,
                                       std::string* error) {
  // Link samples and progress: a daemon actor, gone when the jobs are.
  s4u::ActorPtr sampler = s4u::Actor::create("sampler", hosts.begin()->second, [this, interval, wall_start]() {
    const double period = interval > 0 ? interval : 1e-3;
    auto last_print = std::chrono::steady_clock::now();
    uint64_t last_done = 0;
    double last_wall_s = 0;
    for (;;) {
      s4u::this_actor::sleep_for(period);
      if (interval > 0) Sample();
      if (finish_s >= 0) {
        final_sampled = true;
        return;
      }
      const auto now = std::chrono::steady_clock::now();
      if (config.progress && now - last_print > std::chrono::seconds(2)) {
        last_print = now;
        PrintProgress(std::chrono::duration<double>(now - wall_start).count(), &last_done, &last_wall_s);
      }
    }
  });
  sampler->daemonize();
  try {
    engine->run();
  } catch (const std::exception& e) {
    *error = std::string("SimGrid: ") + e.what();
    return false;
  }
  return true;
}

void FlowSimulation::State::RunFluid(double interval, std::chrono::steady_clock::time_point wall_start) {
  // Samples at every multiple of the interval, the last one after the jobs
  // finished (as SimGrid's sampler takes them); a progress line every 2 wall s.
  double next_sample = interval > 0 ? interval : std::numeric_limits<double>::infinity();
  auto last_print = std::chrono::steady_clock::now();
  uint64_t last_done = 0, instants = 0;
  double last_wall_s = 0;
  for (;;) {
    const double t = fluid->NextTime();
    if (t == std::numeric_limits<double>::infinity()) break;
    while (next_sample <= t && !final_sampled) {
      fluid->AdvanceTo(next_sample);
      Sample();
      next_sample += interval;
      final_sampled = finish_s >= 0;
    }
    fluid->Step();
    if (config.progress && ++instants % 1024 == 0) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last_print > std::chrono::seconds(2)) {
        last_print = now;
        PrintProgress(std::chrono::duration<double>(now - wall_start).count(), &last_done, &last_wall_s);
      }
    }
  }
  if (interval > 0 && !final_sampled) {
    fluid->AdvanceTo(next_sample);
    Sample();
    final_sampled = true;
  }
}

std::vector<std::string> FlowSimulation::State::LinkNames() const {
  std::vector<std::string> names;
  for (const auto& l : graph.links) {
    names.push_back(graph.names[l.a] + "-" + graph.names[l.b]);
    names.push_back(graph.names[l.b] + "-" + graph.names[l.a]);
  }
  return names;
}

std::vector<double> FlowSimulation::State::LinkRates() const {
  std::vector<double> rates;
  for (size_t d = 0; d < 2 * graph.links.size(); ++d) rates.push_back(double(graph.links[d / 2].rate_bps));
  return rates;
}

void FlowSimulation::State::FillRecords(double wall_seconds) {
  records = runs::SimulationRecords();
  records.source = "flow";
  records.flows = std::move(flows);
  records.flows_written = flows_out != nullptr;
  std::string title = (fluid ? std::string("# flow-level simulation (dltrace's incremental max-min)")
                             : "# flow-level simulation (SimGrid " + std::to_string(SIMGRID_VERSION_MAJOR) + "." +
                                   std::to_string(SIMGRID_VERSION_MINOR) + ")") +
                      ": " + spec.Describe();
  if (config.mltcp) {
    std::ostringstream f;
    f << "; MLTCP shares, F(r) = " << config.mltcp_function.slope << " r + " << config.mltcp_function.intercept;
    title += f.str();
  }
  records.header.push_back(title);
  for (const auto& job : jobs)
    records.jobs.push_back({&job->schedule, std::move(job->recorded), job->placement.trace,
                            job->placement.lower.algorithm, job->placement.hosts, job->placement.start_ns,
                            std::move(job->results), job->schedule_hash});
  records.links_written = links_out != nullptr;
  if (!links_out) {
    records.links.names = LinkNames();
    records.links.rate_bps = LinkRates();
  }
  records.links.time_s.reserve(samples.size());
  for (auto& [time_s, bytes] : samples) {
    records.links.time_s.push_back(time_s);
    records.links.bytes.push_back(std::move(bytes));
  }
  samples.clear();
  records.fabric = std::make_shared<const models::TopologyGraph>(graph);
  records.link_bytes = fluid ? FoldShadows(fluid->LinkBytes()) : delivered_link_bytes;
  records.simulated_s = finish_s >= 0 ? finish_s : NowSeconds();
  records.wall_s = wall_seconds;
  records.events = messages_done;
  records.event_unit = "messages";
  records.peak_rss_kb = runs::PeakRssKb();
}

const runs::SimulationRecords& FlowSimulation::Records() const { return state_->records; }

const std::vector<runs::FlowRecord>& FlowSimulation::flows() const { return state_->records.flows; }

uint64_t FlowSimulation::messages_coalesced() const { return state_->messages_coalesced; }

}  // namespace dltrace::flow
