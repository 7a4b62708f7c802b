// SPDX-License-Identifier: GPL-2.0-only
// DltraceRdmaMonitor: queue samples during the run, the RDMA CSV files and
// summary lines after it.
#include "dltrace-rdma-monitor.h"

#include "ns3/dltrace-attributes.h"

#include "ns3/dltrace-rdma-net-device.h"
#include "ns3/dltrace-timeline.h"
#include "ns3/log.h"
#include "ns3/simulator.h"

#include "dltrace/runs/atomic_file.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <iomanip>
#include <sstream>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceRdmaMonitor");

NS_OBJECT_ENSURE_REGISTERED(DltraceRdmaMonitor);

TypeId
DltraceRdmaMonitor::GetTypeId()
{
    static TypeId tid = DltraceTypeId<DltraceRdmaMonitor, Object>("ns3::DltraceRdmaMonitor")
            .AddTime("Interval",
                     "Queue occupancy sample period for queues.csv (0: none).",
                     MilliSeconds(1), &DltraceRdmaMonitor::m_interval, Seconds(0));
    return tid;
}

DltraceRdmaMonitor::DltraceRdmaMonitor()
    : m_fabric(nullptr)
{
}

void
DltraceRdmaMonitor::Watch(const DltraceRdmaHelper* fabric, Ptr<DltraceRdmaNetwork> network)
{
    m_fabric = fabric;
    m_network = network;
    const auto& graph = fabric->GetGraph();
    const auto& links = fabric->GetLinks();
    for (uint32_t l = 0; l < links.size(); ++l)
    {
        m_ports.push_back(Port{links[l].name, links[l].a, graph.IsSwitch(graph.links[l].a)});
        m_ports.push_back(Port{links[l].reverseName, links[l].b, graph.IsSwitch(graph.links[l].b)});
    }
}

void
DltraceRdmaMonitor::Start()
{
    if (m_interval.IsStrictlyPositive())
    {
        DltraceTimeline::Schedule(m_interval, [this] { Sample(); });
    }
}

void
DltraceRdmaMonitor::Sample()
{
    m_sampleTimes.push_back(DltraceTimeline::Now().GetSeconds());
    std::vector<uint64_t> q;
    q.reserve(m_ports.size());
    for (const Port& p : m_ports)
    {
        q.push_back(p.device->GetQueueBytes());
    }
    m_samples.push_back(std::move(q));
    if (!Simulator::IsFinished())
    {
        DltraceTimeline::Schedule(m_interval, [this] { Sample(); });
    }
}

uint64_t
DltraceRdmaMonitor::GetPauseFrames() const
{
    uint64_t n = 0;
    for (const Port& p : m_ports)
    {
        for (uint32_t c = 0; c < DltraceRdmaNetDevice::kClasses; ++c)
        {
            n += p.device->GetPfcCounters(c).pausesSent;
        }
    }
    return n;
}

uint64_t
DltraceRdmaMonitor::GetPeakQueueBytes() const
{
    uint64_t peak = 0;
    for (const Port& p : m_ports)
    {
        if (p.switchPort)
        {
            peak = std::max(peak, p.device->GetPeakQueueBytes());
        }
    }
    return peak;
}

uint64_t
DltraceRdmaMonitor::SumOverSwitches(uint64_t (DltraceRdmaSwitchMmu::*count)() const) const
{
    uint64_t n = 0;
    for (uint32_t s = 0; s < m_fabric->GetSwitchCount(); ++s)
    {
        n += (*m_fabric->GetSwitch(s)->GetMmu().*count)();
    }
    return n;
}

uint64_t
DltraceRdmaMonitor::GetDrops() const
{
    return SumOverSwitches(&DltraceRdmaSwitchMmu::GetDrops);
}

uint64_t
DltraceRdmaMonitor::GetEcnMarks() const
{
    return SumOverSwitches(&DltraceRdmaSwitchMmu::GetEcnMarks);
}

bool
DltraceRdmaMonitor::Write(const std::string& dir, std::string* error) const
{
    std::ostringstream queues;
    queues << "time_s,port,queue_bytes\n";
    for (size_t i = 0; i < m_samples.size(); ++i)
    {
        for (size_t p = 0; p < m_ports.size(); ++p)
        {
            queues << std::setprecision(9) << m_sampleTimes[i] << "," << m_ports[p].name << ","
                   << m_samples[i][p] << "\n";
        }
    }
    std::ostringstream pfc;
    pfc << "port,priority,pauses_sent,resumes_sent,pauses_received,resumes_received,paused_s\n";
    for (const Port& p : m_ports)
    {
        for (uint32_t c = 0; c < DltraceRdmaNetDevice::kClasses; ++c)
        {
            auto k = p.device->GetPfcCounters(c);
            if (k.pausesSent + k.pausesReceived + k.resumesSent + k.resumesReceived == 0)
            {
                continue;
            }
            pfc << p.name << "," << c << "," << k.pausesSent << "," << k.resumesSent << ","
                << k.pausesReceived << "," << k.resumesReceived << "," << std::setprecision(9)
                << k.pausedTime.GetSeconds() << "\n";
        }
    }
    std::ostringstream qps;
    qps << "job,src,dst,channel,priority,cnps,packets_resent,timeouts,bytes_acked\n";
    for (const auto& q : m_network->GetQueuePairs())
    {
        if (!q.qp) // a UET PDC: no CNPs; its NACKs in their place
        {
            qps << q.job << "," << q.src << "," << q.dst << "," << q.channel << "," << q.pdc->GetPriority()
                << "," << q.pdc->GetNacks() << "," << q.pdc->GetRetransmittedPackets() << ","
                << q.pdc->GetTimeouts() << "," << q.pdc->GetBytesAcked() << "\n";
            continue;
        }
        qps << q.job << "," << q.src << "," << q.dst << "," << q.channel << ","
            << q.qp->GetPriority() << "," << q.qp->GetCnps() << ","
            << q.qp->GetRetransmittedPackets() << "," << q.qp->GetTimeouts() << ","
            << q.qp->GetBytesAcked() << "\n";
    }
    std::ostringstream messages;
    messages << "job,src,dst,channel,priority,bytes,posted_s,completion_s,ideal_s,slowdown\n";
    for (const auto& m : m_network->GetMessages())
    {
        const bool done = !m.delivered.IsZero();
        const double fct = done ? (m.delivered - m.posted).GetSeconds() : 0.0;
        messages << m.job << "," << m.src << "," << m.dst << "," << m.channel << "," << m.priority
                 << "," << m.bytes << "," << std::setprecision(9) << m.posted.GetSeconds() << ",";
        if (done)
        {
            messages << fct << "," << m.ideal.GetSeconds() << "," << std::setprecision(4)
                     << fct / m.ideal.GetSeconds() << "\n";
        }
        else
        {
            messages << ",," << "\n";
        }
    }
    return dltrace::runs::WriteFileAtomically(dir + "/queues.csv", queues.str(), error) &&
           dltrace::runs::WriteFileAtomically(dir + "/pfc.csv", pfc.str(), error) &&
           dltrace::runs::WriteFileAtomically(dir + "/qps.csv", qps.str(), error) &&
           dltrace::runs::WriteFileAtomically(dir + "/messages.csv", messages.str(), error);
}

void
DltraceRdmaMonitor::PrintSummary(std::ostream& os) const
{
    uint64_t cnps = 0, resent = 0, nacks = 0, timeouts = 0;
    for (const auto& q : m_network->GetQueuePairs())
    {
        if (q.qp)
        {
            cnps += q.qp->GetCnps();
            resent += q.qp->GetRetransmittedPackets();
        }
        else
        {
            nacks += q.pdc->GetNacks();
            resent += q.pdc->GetRetransmittedPackets();
            timeouts += q.pdc->GetTimeouts();
        }
    }
    double pausedS = 0;
    for (const Port& p : m_ports)
    {
        for (uint32_t c = 0; c < DltraceRdmaNetDevice::kClasses; ++c)
        {
            pausedS += p.device->GetPfcCounters(c).pausedTime.GetSeconds();
        }
    }
    std::vector<double> slowdowns;
    for (const auto& m : m_network->GetMessages())
    {
        if (!m.delivered.IsZero() && m.ideal.IsStrictlyPositive())
        {
            slowdowns.push_back((m.delivered - m.posted).GetSeconds() / m.ideal.GetSeconds());
        }
    }
    std::sort(slowdowns.begin(), slowdowns.end());
    auto pct = [&](double f) {
        return slowdowns.empty() ? 0.0 : slowdowns[size_t(f * (slowdowns.size() - 1))];
    };
    char line[320];
    std::snprintf(line,
                  sizeof line,
                  "rdma: %" PRIu64 " PFC pause frames (%.6f s paused in all), peak switch queue %" PRIu64
                  " B, %" PRIu64 " drops, %" PRIu64 " ECN marks, %" PRIu64 " CNPs, %" PRIu64
                  " packets resent\n",
                  GetPauseFrames(),
                  pausedS,
                  GetPeakQueueBytes(),
                  GetDrops(),
                  GetEcnMarks(),
                  cnps,
                  resent);
    os << line;
    if (m_fabric->IsUet())
    {
        std::snprintf(line,
                      sizeof line,
                      "uet: %" PRIu64 " packets trimmed, %" PRIu64 " ECN marks, %" PRIu64 " NACKs, %" PRIu64
                      " retransmitted, %" PRIu64 " timeouts, %" PRIu64 " drops, %" PRIu64 " PFC pauses\n",
                      m_fabric->GetUetTrimmed(),
                      m_fabric->GetUetEcnMarks(),
                      nacks,
                      resent,
                      timeouts,
                      GetDrops(),
                      GetPauseFrames());
        os << line;
    }
    std::snprintf(line,
                  sizeof line,
                  "rdma: %zu messages, completion slowdown vs an empty network p50 %.3g, p99 %.3g, "
                  "max %.3g\n",
                  slowdowns.size(),
                  pct(0.5),
                  pct(0.99),
                  slowdowns.empty() ? 0.0 : slowdowns.back());
    os << line;
}

} // namespace ns3
