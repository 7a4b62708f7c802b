// SPDX-License-Identifier: GPL-2.0-only
// DltraceRdmaFastForward: snapshots of the fabric, the steadiness test and
// the skip to the next event with its credits.
#include "dltrace-rdma-fast-forward.h"

#include "dltrace-attributes.h"
#include "dltrace-link-monitor.h"
#include "dltrace-rdma-net-device.h"
#include "dltrace-rdma-nic.h"
#include "dltrace-rdma-switch-mmu.h"
#include "dltrace-rdma-switch.h"
#include "dltrace-rdma-transport.h"
#include "dltrace-timeline.h"

#include "ns3/dltrace-rdma-helper.h"
#include "ns3/log.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceRdmaFastForward");

NS_OBJECT_ENSURE_REGISTERED(DltraceRdmaFastForward);

TypeId
DltraceRdmaFastForward::GetTypeId()
{
    static TypeId tid =
        DltraceTypeId<DltraceRdmaFastForward, Object>("ns3::DltraceRdmaFastForward")
            .AddTime("Window",
                     "How long every busy queue pair's rate and every queue must have held "
                     "before a skip (s); snapshots are taken every quarter of it, and the "
                     "rates credited are those over it. Default 0: the largest "
                     "SteadyWindow of the busy QPs' congestion controls (DCQCN 5 us, HPCC "
                     "and TIMELY 20 us; --cc none has none) and WindowPackets frames at "
                     "their line rates.",
                     Seconds(0), &DltraceRdmaFastForward::m_window, Seconds(0))
            .AddUinteger("WindowPackets",
                         "Where Window is 0, the window is also at least this many MTU "
                         "frames at each busy QP's line rate: a rate measured over a few "
                         "frames is off by the ACKs that share the link (at 10 Gbit/s a 5 us "
                         "window holds 5 frames, and DCQCN's ring iterations came out 1.6% "
                         "short). Default 64: 32 to 128 gave the same DCQCN iteration within "
                         "0.02%, HPCC's within 0.5% at 64 (0.8% at 32); 64 frames take 5.6 us "
                         "at 100 Gbit/s, 22 us at 25, 56 us at 10 (docs/results/rdma.md).",
                         64, &DltraceRdmaFastForward::m_windowPackets)
            .AddDouble("Tolerance",
                       "Largest relative difference between the packets a busy queue pair "
                       "sent in the window's two halves, and between those it sent and had "
                       "acknowledged, that still counts as steady (at least 2 packets); also "
                       "HPCC's tolerance on U over its last round trips. Default 0.02: on "
                       "the 16-host bench 0.01 held HPCC's U so rarely that 30% of the link "
                       "transmissions were simulated (3.8% at 0.02 and 0.03, 2.6% at 0.05, "
                       "each within 0.3% of packet level); 0.05 without the U test let "
                       "HPCC's iteration off by 1.6% (docs/results/rdma.md, fast-forward).",
                       0.02, &DltraceRdmaFastForward::m_tolerance, 0, 1)
            .AddUinteger("QueueTolerance",
                         "Largest change of a port's queued bytes over the window that still "
                         "counts as steady (bytes). Default 4344: four 1024-byte-MTU frames, "
                         "the queue a port with a few senders at line rate sees from one "
                         "snapshot to the next.",
                         4344, &DltraceRdmaFastForward::m_queueTolerance)
            .AddTime("MinSkip",
                     "A skip shorter than this is not taken (s): the next event is too near "
                     "for it to pay. Default 2 us.",
                     MicroSeconds(2), &DltraceRdmaFastForward::m_minSkip, Seconds(0))
            .AddBoolean("PerSet",
                        "Where the busy queue pairs fall into two or more connected sets of "
                        "links and the fabric as a whole is not steady, hold each set that is "
                        "steady on its own while the others run packet by packet (per-flow "
                        "ECMP fabrics only; --fast-forward-sets). Default false: on the "
                        "flow-vs-ns-3 matrix's chaotic rows, where packet level itself moves "
                        "by percents with any perturbation, holds moved job times by up to 12% "
                        "where the whole-fabric test never skips; where sets run out of step "
                        "(a steady job beside a busy one, a 128-GPU hybrid job) it ran 2-8x "
                        "faster than the whole-fabric skip within 0.15% (docs/results/rdma.md).",
                        false, &DltraceRdmaFastForward::m_perSet);
    return tid;
}

DltraceRdmaFastForward::DltraceRdmaFastForward()
    : m_fabric(nullptr),
      m_skips(0),
      m_skippedPackets(0),
      m_skippedLinkPackets(0)
{
}

void
DltraceRdmaFastForward::DoDispose()
{
    m_check.Cancel();
    for (auto& h : m_holds)
    {
        h.release.Cancel();
    }
    m_holds.clear();
    if (m_network)
    {
        m_network->SetPostCallback(Callback<void>());
        m_network->SetBeforePostCallback(Callback<void, size_t>());
    }
    for (auto& port : m_ports)
    {
        port->SetHeldDisturbedCallback(Callback<void, Ptr<DltraceRdmaNetDevice>>());
    }
    if (m_links)
    {
        m_links->SetBeforeSampleCallback(nullptr);
    }
    m_network = nullptr;
    m_links = nullptr;
    m_ports.clear();
    m_history.clear();
    Object::DoDispose();
}

void
DltraceRdmaFastForward::Watch(const DltraceRdmaHelper* fabric,
                              Ptr<DltraceRdmaNetwork> network,
                              Ptr<DltraceLinkMonitor> links)
{
    m_fabric = fabric;
    m_network = network;
    m_links = links;
    // Directions in the graph's link order: [2l] a to b, [2l + 1] b to a.
    const auto& graph = fabric->GetGraph();
    for (uint32_t l = 0; l < fabric->GetLinks().size(); ++l)
    {
        const auto& link = fabric->GetLinks()[l];
        m_ports.push_back(link.a);
        m_ports.push_back(link.b);
        m_dirNodes.push_back(graph.links[l].a);
        m_dirNodes.push_back(graph.links[l].b);
        m_dirNodes.push_back(graph.links[l].b);
        m_dirNodes.push_back(graph.links[l].a);
    }
    m_creditedBytes.assign(links->GetDirectionCount(), 0);
    m_creditedPackets.assign(links->GetDirectionCount(), 0);
}

void
DltraceRdmaFastForward::Start(Time notBefore)
{
    m_notBefore = notBefore;
    m_network->SetPostCallback(MakeCallback(&DltraceRdmaFastForward::Wake, this));
    using dltrace::models::LoadBalancer;
    const auto lb = m_fabric->GetGraph().lb;
    m_sets = m_perSet && (lb == LoadBalancer::kEcmp || lb == LoadBalancer::kEEcmp);
    if (m_sets)
    {
        m_holdOfDir.assign(m_ports.size(), -1);
        m_network->SetBeforePostCallback(MakeCallback(&DltraceRdmaFastForward::BeforePost, this));
        for (auto& port : m_ports)
        {
            port->SetHeldDisturbedCallback(MakeCallback(&DltraceRdmaFastForward::Disturbed, this));
        }
        m_links->SetBeforeSampleCallback([this] {
            for (auto& h : m_holds)
            {
                if (h.live)
                {
                    CreditLinks(h);
                }
            }
        });
    }
}

void
DltraceRdmaFastForward::Wake()
{
    if (!m_check.IsRunning())
    {
        m_check = Simulator::Schedule(GetWindow() / 4, &DltraceRdmaFastForward::Check, this);
    }
}

Time
DltraceRdmaFastForward::GetWindow() const
{
    if (!m_window.IsZero())
    {
        return m_window;
    }
    Time window;
    for (const auto& q : m_network->GetQueuePairs())
    {
        if (q.qp->IsActive())
        {
            const auto cc = q.qp->GetCongestionControl();
            window = std::max({window, cc->GetSteadyWindow(), cc->GetFrameTime() * int64_t(m_windowPackets)});
        }
    }
    return window.IsZero() ? MicroSeconds(5) : window; // (no busy QP: only the next check waits on it)
}

DltraceRdmaFastForward::Snapshot
DltraceRdmaFastForward::Take() const
{
    Snapshot s;
    s.at = Simulator::Now();
    const auto& qps = m_network->GetQueuePairs();
    s.active.reserve(qps.size());
    for (size_t i = 0; i < qps.size(); ++i)
    {
        const auto& q = qps[i];
        const bool active = q.qp->IsActive();
        const bool held = i < m_holdOfQp.size() && m_holdOfQp[i] >= 0;
        s.active.push_back(active);
        s.anyActive = s.anyActive || active;
        s.held.push_back(held);
        s.anyUnheld = s.anyUnheld || (active && !held);
        s.qpDisturbances.push_back(q.qp->GetCnps() + q.qp->GetRetransmittedPackets() + q.qp->GetTimeouts());
        s.qpPosted.push_back(q.qp->GetPostedMessages());
        s.open.push_back(q.qp->GetOpenMessages());
        // Packets that went as packets (credits left out): a skip changes
        // nothing the packet machinery sees, so snapshots from before it
        // still tell how it runs after it.
        s.acked.push_back(q.qp->GetAckedPackets() - q.qp->GetSkippedPackets());
        s.sent.push_back(q.qp->GetSentPackets() - q.qp->GetSkippedPackets());
        s.lastSend.push_back(q.qp->GetLastSendTime());
        s.disturbances += q.qp->GetCnps() + q.qp->GetRetransmittedPackets() + q.qp->GetTimeouts();
    }
    for (const auto& port : m_ports)
    {
        s.queues.push_back(port->GetQueueBytes());
        uint64_t pfcSent = 0;
        bool paused = false;
        for (uint32_t c = 0; c < DltraceRdmaNetDevice::kClasses; ++c)
        {
            const auto pfc = port->GetPfcCounters(c);
            pfcSent += pfc.pausesSent + pfc.resumesSent;
            paused = paused || port->IsPaused(c);
        }
        s.disturbances += pfcSent;
        s.paused = s.paused || paused;
        s.pfc.push_back(pfcSent);
        s.dirPaused.push_back(paused);
    }
    const auto& graph = m_fabric->GetGraph();
    s.nodeDisturbances.assign(graph.names.size(), 0);
    for (uint32_t h = 0; h < graph.hosts; ++h)
    {
        Ptr<DltraceRdmaNic> nic = m_fabric->GetNic(h);
        if (nic)
        {
            s.nodeDisturbances[h] = nic->GetNacksSent() + nic->GetCnpsSent();
            s.disturbances += s.nodeDisturbances[h];
        }
    }
    for (uint32_t w = 0; w < m_fabric->GetSwitchCount(); ++w)
    {
        Ptr<DltraceRdmaSwitchMmu> mmu = m_fabric->GetSwitch(w)->GetMmu();
        s.nodeDisturbances[graph.hosts + w] = mmu->GetEcnMarks() + mmu->GetDrops();
        s.disturbances += s.nodeDisturbances[graph.hosts + w];
    }
    for (uint32_t d = 0; d < m_links->GetDirectionCount(); ++d)
    {
        s.linkBytes.push_back(m_links->GetDirection(d).bytes - m_creditedBytes[d]);
        s.linkPackets.push_back(m_links->GetDirection(d).packets - m_creditedPackets[d]);
    }
    s.window = GetWindow();
    s.posted = m_network->GetMessages().size();
    s.delivered = m_network->GetDeliveredCount();
    return s;
}

bool
DltraceRdmaFastForward::Steady(const Snapshot& now) const
{
    const Snapshot& first = m_history.front();
    if (now.paused || now.at - first.at < now.window)
    {
        NS_LOG_LOGIC("not steady: " << (now.paused ? "paused" : "short history"));
        return false;
    }
    for (const Snapshot& s : m_history)
    {
        if (s.paused || s.posted != now.posted || s.delivered != now.delivered ||
            s.disturbances != now.disturbances || s.active != now.active)
        {
            NS_LOG_LOGIC("not steady: paused " << s.paused << ", posted " << now.posted - s.posted
                                               << ", delivered " << now.delivered - s.delivered
                                               << ", disturbances " << now.disturbances - s.disturbances);
            return false;
        }
        for (size_t p = 0; p < now.queues.size(); ++p)
        {
            if (!QueueHeld(s.queues[p], now.queues[p]))
            {
                NS_LOG_LOGIC("not steady: queue");
                return false;
            }
        }
    }
    // Every busy QP sent as much in the window's first half as in its second
    // (its rate held: rates move from ACK to ACK, HPCC's by a few percent,
    // so halves are compared, not instants), its ACKs kept pace with its
    // sending (not so in its first round trip), and its congestion control
    // says its rate holds.
    const Snapshot& middle = m_history[m_history.size() / 2];
    for (size_t i = 0; i < now.active.size(); ++i)
    {
        if (now.active[i] && !QpSteady(i, first, middle, now))
        {
            return false;
        }
    }
    return true;
}

bool
DltraceRdmaFastForward::QpSteady(size_t i, const Snapshot& first, const Snapshot& middle, const Snapshot& now) const
{
    const auto& qps = m_network->GetQueuePairs();
    auto near = [this](double a, double b) {
        return std::abs(a - b) <= std::max(2.0, m_tolerance * std::max(a, b));
    };
    // Packets sent in each half, scaled to half the window.
    const double sent = double(now.sent[i] - first.sent[i]);
    const double half = (now.at - first.at).GetSeconds() / 2;
    const double early = double(middle.sent[i] - first.sent[i]) * half / (middle.at - first.at).GetSeconds();
    const double late = double(now.sent[i] - middle.sent[i]) * half / (now.at - middle.at).GetSeconds();
    if (qps[i].qp->GetCongestionControl()->GetSteadyHorizon(m_tolerance) < m_minSkip || sent == 0 ||
        !near(double(now.acked[i] - first.acked[i]), sent) || !near(early, late))
    {
        NS_LOG_LOGIC("not steady: qp " << i << " horizon "
                                       << qps[i].qp->GetCongestionControl()->GetSteadyHorizon(m_tolerance)
                                       << " sent " << sent << " acked " << now.acked[i] - first.acked[i]
                                       << " halves " << early << " " << late);
        return false;
    }
    return true;
}

double
DltraceRdmaFastForward::QpRate(size_t i, const Snapshot& old, const Snapshot& now) const
{
    // The rate from the departures of the packets that bound the window,
    // not from the snapshots' instants: counting packets between two
    // instants is off by up to one packet, 1% of a 10 us window at
    // 100 Gbit/s, and a skip carries that error over its whole length.
    const double span = (now.lastSend[i] - old.lastSend[i]).GetSeconds();
    return double(now.sent[i] - old.sent[i]) / (span > 0 ? span : (now.at - old.at).GetSeconds());
}

bool
DltraceRdmaFastForward::QueueHeld(uint64_t before, uint64_t now) const
{
    return (before > now ? before - now : now - before) <= m_queueTolerance;
}

uint32_t
DltraceRdmaFastForward::Room(size_t i) const
{
    // Its packets in flight, plus 8, and its message's tail run packet by packet.
    const auto& qp = m_network->GetQueuePairs()[i].qp;
    const uint32_t skippable = qp->GetSkippablePackets();
    const uint32_t margin = qp->GetPacketsInFlight() + 8;
    return skippable > margin ? skippable - margin : 0;
}

double
DltraceRdmaFastForward::CreditableFor(size_t i, double pps, uint32_t room) const
{
    const auto& qp = m_network->GetQueuePairs()[i].qp;
    return std::min(room / pps, qp->GetCongestionControl()->GetSteadyHorizon(m_tolerance).GetSeconds());
}

void
DltraceRdmaFastForward::CreditQp(size_t i, double pps, uint32_t room, Time length, Time timers)
{
    const auto& qp = m_network->GetQueuePairs()[i].qp;
    // Rounded against what earlier skips rounded: skips of one length at one
    // rate would otherwise round the same way each time (a parameter server's
    // eight QPs at 143.88 packets a 1 ms skip came out 26 us early in 27 ms).
    if (m_creditError.size() <= i)
    {
        m_creditError.resize(m_network->GetQueuePairs().size(), 0.0);
    }
    const double exact = pps * length.GetSeconds() - m_creditError[i];
    const uint32_t packets = std::min<uint32_t>(room, static_cast<uint32_t>(std::max<int64_t>(0, std::llround(exact))));
    m_creditError[i] = packets < room ? double(packets) - exact : 0.0;
    qp->FastForward(packets, timers);
    Ptr<DltraceRdmaNic> receiver = m_fabric->GetNic(qp->GetDstHost());
    receiver->FastForwardReceiver(qp->GetSrcHost(), qp->GetQpn(), uint64_t(packets) * receiver->GetMtu());
    m_skippedPackets += packets;
}

void
DltraceRdmaFastForward::CreditLink(uint32_t d, uint64_t bytes, uint64_t packets)
{
    m_links->Credit(d, bytes, packets);
    m_creditedBytes[d] += bytes;
    m_creditedPackets[d] += packets;
    m_skippedLinkPackets += packets;
}

void
DltraceRdmaFastForward::Check()
{
    Snapshot now = Take();
    const bool anyActive = now.anyActive;
    m_history.push_back(std::move(now));
    // Keep the newest snapshot at least a window old, and those after it.
    const Time window = m_history.back().window;
    while (m_history.size() > 2 && m_history.back().at - m_history[1].at >= window)
    {
        m_history.pop_front();
    }
    bool atAnchor = false;
    if (anyActive && m_history.size() > 1)
    {
        if (m_live == 0 && Steady(m_history.back()))
        {
            atAnchor = Skip(m_history.front(), m_history.back());
        }
        else if (m_sets && DltraceTimeline::Now() >= m_notBefore)
        {
            // The fabric is not steady as a whole: its steady sets are held apart.
            const std::vector<Set> sets = FindSets(m_history.back());
            if (sets.size() + m_live >= 2)
            {
                for (const Set& set : sets)
                {
                    if (SetSteady(m_history.back(), set))
                    {
                        HoldSet(m_history.front(), m_history.back(), set);
                    }
                }
            }
        }
    }
    if (anyActive && (m_history.back().anyUnheld || m_live == 0))
    {
        // A skip that stopped at an anchored event (a sample, say) goes on
        // right after it, if that event changed nothing; those events are
        // due now and were scheduled before this check, so they run first.
        m_check = Simulator::Schedule(atAnchor ? Time() : window / 4, &DltraceRdmaFastForward::Check, this);
    }
    else
    {
        m_history.clear(); // idle or all held: the next Post or release wakes the checks
    }
}

bool
DltraceRdmaFastForward::Skip(const Snapshot& old, const Snapshot& now)
{
    if (DltraceTimeline::Now() < m_notBefore)
    {
        return false;
    }
    const double dt = (now.at - old.at).GetSeconds();
    const auto& qps = m_network->GetQueuePairs();
    // The skip ends where the first busy QP comes within its margin of its
    // message's last packet, at the next anchored event, or where a
    // congestion control's steady horizon ends.
    const Time toAnchored = DltraceTimeline::NextAnchored() - DltraceTimeline::Now();
    double skip = std::numeric_limits<double>::infinity();
    std::vector<double> pps(qps.size(), 0); // packets per second over the window
    std::vector<uint32_t> room(qps.size(), 0);
    for (size_t i = 0; i < qps.size(); ++i)
    {
        if (!now.active[i])
        {
            continue;
        }
        pps[i] = QpRate(i, old, now);
        room[i] = Room(i);
        if (room[i] == 0)
        {
            NS_LOG_LOGIC("no skip: qp " << i << " near its tail");
            return false;
        }
        skip = std::min(skip, CreditableFor(i, pps[i], room[i]));
    }
    const bool atAnchored = skip >= toAnchored.GetSeconds();
    const Time delta = atAnchored ? toAnchored : NanoSeconds(int64_t(std::floor(skip * 1e9)));
    if (delta < m_minSkip)
    {
        return false;
    }
    const double seconds = delta.GetSeconds();
    for (size_t i = 0; i < qps.size(); ++i)
    {
        if (!now.active[i])
        {
            continue;
        }
        CreditQp(i, pps[i], room[i], delta, delta);
    }
    for (size_t d = 0; d < now.linkBytes.size(); ++d)
    {
        const double share = seconds / dt;
        CreditLink(uint32_t(d),
                   uint64_t(std::llround((now.linkBytes[d] - old.linkBytes[d]) * share)),
                   uint64_t(std::llround((now.linkPackets[d] - old.linkPackets[d]) * share)));
    }
    DltraceTimeline::Skip(delta);
    ++m_skips;
    m_skipped += delta;
    NS_LOG_INFO("skipped " << delta << " at " << Simulator::Now());
    return atAnchored;
}

uint64_t
DltraceRdmaFastForward::GetSkips() const
{
    return m_skips;
}

Time
DltraceRdmaFastForward::GetSkippedTime() const
{
    return m_skipped;
}

uint64_t
DltraceRdmaFastForward::GetSkippedPackets() const
{
    return m_skippedPackets;
}

uint64_t
DltraceRdmaFastForward::GetSkippedLinkPackets() const
{
    return m_skippedLinkPackets;
}

uint64_t
DltraceRdmaFastForward::GetHolds() const
{
    return m_holdCount;
}

Time
DltraceRdmaFastForward::GetHeldTime() const
{
    return m_heldTime;
}

const std::vector<uint32_t>&
DltraceRdmaFastForward::RouteDirs(size_t i)
{
    if (m_routeDirs.size() <= i)
    {
        m_routeDirs.resize(i + 1);
    }
    std::vector<uint32_t>& dirs = m_routeDirs[i];
    if (!dirs.empty())
    {
        return dirs;
    }
    const auto& graph = m_fabric->GetGraph();
    const auto& qp = m_network->GetQueuePairs()[i].qp;
    const uint32_t ends[2] = {qp->GetSrcHost(), qp->GetDstHost()};
    // Data one way, ACKs and CNPs back: both on the QP's flow hash (DltraceRdmaNic).
    for (uint32_t way = 0; way < 2; ++way)
    {
        const uint32_t from = ends[way];
        const uint32_t to = ends[1 - way];
        auto hops = m_hopsTo.find(to);
        if (hops == m_hopsTo.end())
        {
            hops = m_hopsTo.emplace(to, graph.HopsTo(to)).first;
        }
        uint32_t at = from;
        for (uint32_t l : graph.Route(from, to, hops->second, qp->GetFlowHash()))
        {
            const bool forward = graph.links[l].a == at;
            dirs.push_back(2 * l + (forward ? 0 : 1));
            at = forward ? graph.links[l].b : graph.links[l].a;
        }
    }
    return dirs;
}

std::vector<DltraceRdmaFastForward::Set>
DltraceRdmaFastForward::FindSets(const Snapshot& now)
{
    // Union-find over link directions: a QP joins the directions of its paths.
    std::vector<uint32_t> parent(m_ports.size());
    for (uint32_t d = 0; d < parent.size(); ++d)
    {
        parent[d] = d;
    }
    auto root = [&parent](uint32_t d) {
        while (parent[d] != d)
        {
            d = parent[d] = parent[parent[d]];
        }
        return d;
    };
    std::vector<uint32_t> busy;
    for (uint32_t i = 0; i < now.active.size(); ++i)
    {
        if (!now.active[i] || now.held[i] || RouteDirs(i).empty())
        {
            continue;
        }
        busy.push_back(i);
        const auto& dirs = RouteDirs(i);
        for (uint32_t d : dirs)
        {
            parent[root(d)] = root(dirs[0]);
        }
    }
    std::map<uint32_t, Set> byRoot;
    for (uint32_t i : busy)
    {
        byRoot[root(RouteDirs(i)[0])].qps.push_back(i);
    }
    std::vector<Set> sets;
    std::vector<bool> dirSeen(m_ports.size(), false);
    std::vector<bool> nodeSeen(m_fabric->GetGraph().names.size(), false);
    for (auto& [r, set] : byRoot)
    {
        (void)r;
        for (uint32_t i : set.qps)
        {
            for (uint32_t d : RouteDirs(i))
            {
                if (!dirSeen[d])
                {
                    dirSeen[d] = true;
                    set.dirs.push_back(d);
                }
                for (uint32_t n : {m_dirNodes[2 * d], m_dirNodes[2 * d + 1]})
                {
                    if (!nodeSeen[n])
                    {
                        nodeSeen[n] = true;
                        set.nodes.push_back(n);
                    }
                }
            }
        }
        sets.push_back(std::move(set));
    }
    return sets;
}

bool
DltraceRdmaFastForward::SetSteady(const Snapshot& now, const Set& set) const
{
    // The whole fabric's test (Steady) on the set's own QPs, ports and nodes.
    const Snapshot& first = m_history.front();
    if (now.at - first.at < now.window)
    {
        return false;
    }
    for (const Snapshot& s : m_history)
    {
        for (uint32_t q : set.qps)
        {
            if (q >= s.active.size() || !s.active[q] || s.held[q] ||
                s.qpDisturbances[q] != now.qpDisturbances[q] || s.qpPosted[q] != now.qpPosted[q] ||
                s.open[q] != now.open[q])
            {
                return false;
            }
        }
        for (uint32_t d : set.dirs)
        {
            if (s.dirPaused[d] || s.pfc[d] != now.pfc[d] || !QueueHeld(s.queues[d], now.queues[d]))
            {
                return false;
            }
        }
        for (uint32_t n : set.nodes)
        {
            if (s.nodeDisturbances[n] != now.nodeDisturbances[n])
            {
                return false;
            }
        }
    }
    const Snapshot& middle = m_history[m_history.size() / 2];
    for (uint32_t q : set.qps)
    {
        if (!QpSteady(q, first, middle, now))
        {
            return false;
        }
    }
    return true;
}

void
DltraceRdmaFastForward::HoldSet(const Snapshot& old, const Snapshot& now, const Set& set)
{
    // The hold ends where the first QP comes within its margin of its
    // message's last packet, or where a congestion control's horizon ends
    // (as a skip does); events of the timeline go on meanwhile.
    const auto& qps = m_network->GetQueuePairs();
    Hold h;
    double until = std::numeric_limits<double>::infinity();
    for (uint32_t q : set.qps)
    {
        const uint32_t room = Room(q);
        if (room == 0)
        {
            return;
        }
        const double pps = QpRate(q, old, now);
        h.qps.push_back(q);
        h.pps.push_back(pps);
        h.room.push_back(room);
        until = std::min(until, CreditableFor(q, pps, room));
    }
    const Time length = NanoSeconds(int64_t(std::floor(std::min(until, 1e6) * 1e9)));
    if (length < m_minSkip)
    {
        return;
    }
    const double dt = (now.at - old.at).GetSeconds();
    h.dirs = set.dirs;
    for (uint32_t d : set.dirs)
    {
        h.bytesPerS.push_back((now.linkBytes[d] - old.linkBytes[d]) / dt);
        h.packetsPerS.push_back((now.linkPackets[d] - old.linkPackets[d]) / dt);
    }
    h.creditedBytes.assign(set.dirs.size(), 0);
    h.creditedPackets.assign(set.dirs.size(), 0);
    h.at = Simulator::Now();
    h.live = true;
    size_t index = m_holds.size();
    for (size_t k = 0; k < m_holds.size(); ++k)
    {
        if (!m_holds[k].live)
        {
            index = k;
            break;
        }
    }
    if (index == m_holds.size())
    {
        m_holds.emplace_back();
    }
    h.release = Simulator::Schedule(length, &DltraceRdmaFastForward::ReleaseHold, this, index);
    if (m_holdOfQp.size() < qps.size())
    {
        m_holdOfQp.resize(qps.size(), -1);
    }
    for (uint32_t q : h.qps)
    {
        m_holdOfQp[q] = int64_t(index);
        qps[q].qp->Hold();
    }
    for (uint32_t d : h.dirs)
    {
        m_holdOfDir[d] = int64_t(index);
        m_ports[d]->Hold();
    }
    m_holds[index] = std::move(h);
    ++m_live;
    NS_LOG_INFO("held " << set.qps.size() << " QPs on " << set.dirs.size() << " link directions for up to "
                        << length << " at " << Simulator::Now());
}

void
DltraceRdmaFastForward::CreditLinks(Hold& h)
{
    const double held = (Simulator::Now() - h.at).GetSeconds();
    for (size_t k = 0; k < h.dirs.size(); ++k)
    {
        const uint32_t d = h.dirs[k];
        const auto bytes = uint64_t(std::llround(h.bytesPerS[k] * held)) - h.creditedBytes[k];
        const auto packets = uint64_t(std::llround(h.packetsPerS[k] * held)) - h.creditedPackets[k];
        h.creditedBytes[k] += bytes;
        h.creditedPackets[k] += packets;
        CreditLink(d, bytes, packets);
        m_ports[d]->CreditTxBytes(bytes); // (ns-3's clock moved: INT sees the hold's bytes)
    }
}

void
DltraceRdmaFastForward::ReleaseHold(size_t index)
{
    Hold& h = m_holds[index];
    NS_ASSERT(h.live);
    h.release.Cancel();
    const Time held = Simulator::Now() - h.at;
    const auto& qps = m_network->GetQueuePairs();
    // Credits first, then the QPs, then the ports (which may pull a packet at once).
    for (size_t k = 0; k < h.qps.size(); ++k)
    {
        CreditQp(h.qps[k], h.pps[k], h.room[k], held, Time()); // (its timers ran meanwhile)
    }
    CreditLinks(h);
    for (uint32_t q : h.qps)
    {
        m_holdOfQp[q] = -1;
        qps[q].qp->Release(held);
    }
    for (uint32_t d : h.dirs)
    {
        m_holdOfDir[d] = -1;
    }
    h.live = false;
    --m_live;
    ++m_holdCount;
    m_heldTime += held;
    for (uint32_t d : h.dirs)
    {
        m_ports[d]->Release();
    }
    NS_LOG_INFO("released a hold of " << held << " at " << Simulator::Now());
    Wake();
}

void
DltraceRdmaFastForward::BeforePost(size_t qp)
{
    if (qp < m_holdOfQp.size() && m_holdOfQp[qp] >= 0)
    {
        ReleaseHold(size_t(m_holdOfQp[qp]));
    }
    for (uint32_t d : RouteDirs(qp))
    {
        if (m_holdOfDir[d] >= 0)
        {
            ReleaseHold(size_t(m_holdOfDir[d]));
        }
    }
}

void
DltraceRdmaFastForward::Disturbed(Ptr<DltraceRdmaNetDevice> port)
{
    for (uint32_t d = 0; d < m_ports.size(); ++d)
    {
        if (m_ports[d] == port && m_holdOfDir[d] >= 0)
        {
            ReleaseHold(size_t(m_holdOfDir[d]));
            return;
        }
    }
}

void
DltraceRdmaFastForward::Finish()
{
    for (size_t k = 0; k < m_holds.size(); ++k)
    {
        if (m_holds[k].live)
        {
            ReleaseHold(k);
        }
    }
}

} // namespace ns3
