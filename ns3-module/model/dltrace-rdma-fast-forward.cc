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
                     MicroSeconds(2), &DltraceRdmaFastForward::m_minSkip, Seconds(0));
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
    if (m_network)
    {
        m_network->SetPostCallback(Callback<void>());
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
    for (const auto& link : fabric->GetLinks())
    {
        m_ports.push_back(link.a);
        m_ports.push_back(link.b);
    }
    m_creditedBytes.assign(links->GetDirectionCount(), 0);
    m_creditedPackets.assign(links->GetDirectionCount(), 0);
}

void
DltraceRdmaFastForward::Start(Time notBefore)
{
    m_notBefore = notBefore;
    m_network->SetPostCallback(MakeCallback(&DltraceRdmaFastForward::Wake, this));
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
    for (const auto& q : qps)
    {
        const bool active = q.qp->IsActive();
        s.active.push_back(active);
        s.anyActive = s.anyActive || active;
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
        for (uint32_t c = 0; c < DltraceRdmaNetDevice::kClasses; ++c)
        {
            const auto pfc = port->GetPfcCounters(c);
            s.disturbances += pfc.pausesSent + pfc.resumesSent;
            s.paused = s.paused || port->IsPaused(c);
        }
    }
    const auto& graph = m_fabric->GetGraph();
    for (uint32_t h = 0; h < graph.hosts; ++h)
    {
        Ptr<DltraceRdmaNic> nic = m_fabric->GetNic(h);
        if (nic)
        {
            s.disturbances += nic->GetNacksSent() + nic->GetCnpsSent();
        }
    }
    for (uint32_t w = 0; w < m_fabric->GetSwitchCount(); ++w)
    {
        Ptr<DltraceRdmaSwitchMmu> mmu = m_fabric->GetSwitch(w)->GetMmu();
        s.disturbances += mmu->GetEcnMarks() + mmu->GetDrops();
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
            const uint64_t a = s.queues[p];
            const uint64_t b = now.queues[p];
            if ((a > b ? a - b : b - a) > m_queueTolerance)
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
    const auto& qps = m_network->GetQueuePairs();
    auto near = [this](double a, double b) {
        return std::abs(a - b) <= std::max(2.0, m_tolerance * std::max(a, b));
    };
    for (size_t i = 0; i < now.active.size(); ++i)
    {
        if (!now.active[i])
        {
            continue;
        }
        // Packets sent in each half, scaled to half the window.
        const double sent = double(now.sent[i] - first.sent[i]);
        const double half = (now.at - first.at).GetSeconds() / 2;
        const double early =
            double(middle.sent[i] - first.sent[i]) * half / (middle.at - first.at).GetSeconds();
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
    }
    return true;
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
    if (anyActive && m_history.size() > 1 && Steady(m_history.back()))
    {
        atAnchor = Skip(m_history.front(), m_history.back());
    }
    if (anyActive)
    {
        // A skip that stopped at an anchored event (a sample, say) goes on
        // right after it, if that event changed nothing; those events are
        // due now and were scheduled before this check, so they run first.
        m_check = Simulator::Schedule(atAnchor ? Time() : window / 4, &DltraceRdmaFastForward::Check, this);
    }
    else
    {
        m_history.clear(); // idle: the next Post wakes the checks
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
        // The rate from the departures of the packets that bound the window,
        // not from the snapshots' instants: counting packets between two
        // instants is off by up to one packet, 1% of a 10 us window at
        // 100 Gbit/s, and a skip carries that error over its whole length.
        const double span = (now.lastSend[i] - old.lastSend[i]).GetSeconds();
        pps[i] = double(now.sent[i] - old.sent[i]) / (span > 0 ? span : dt);
        const uint32_t skippable = qps[i].qp->GetSkippablePackets();
        const uint32_t margin = qps[i].qp->GetPacketsInFlight() + 8;
        if (skippable <= margin)
        {
            NS_LOG_LOGIC("no skip: qp " << i << " near its tail");
            return false;
        }
        room[i] = skippable - margin;
        skip = std::min(skip, room[i] / pps[i]);
        skip = std::min(skip, qps[i].qp->GetCongestionControl()->GetSteadyHorizon(m_tolerance).GetSeconds());
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
        const auto& qp = qps[i].qp;
        const uint32_t packets =
            std::min<uint32_t>(room[i], static_cast<uint32_t>(std::llround(pps[i] * seconds)));
        qp->FastForward(packets, delta);
        Ptr<DltraceRdmaNic> receiver = m_fabric->GetNic(qp->GetDstHost());
        receiver->FastForwardReceiver(qp->GetSrcHost(), qp->GetQpn(), uint64_t(packets) * receiver->GetMtu());
        m_skippedPackets += packets;
    }
    for (size_t d = 0; d < now.linkBytes.size(); ++d)
    {
        const double share = seconds / dt;
        const auto bytes = uint64_t(std::llround((now.linkBytes[d] - old.linkBytes[d]) * share));
        const auto packets = uint64_t(std::llround((now.linkPackets[d] - old.linkPackets[d]) * share));
        m_links->Credit(uint32_t(d), bytes, packets);
        m_creditedBytes[d] += bytes;
        m_creditedPackets[d] += packets;
        m_skippedLinkPackets += packets;
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

} // namespace ns3
