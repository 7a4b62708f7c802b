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
#include <deque>
#include <iomanip>
#include <map>
#include <sstream>
#include <tuple>

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

DltraceRdmaMonitor::Report
DltraceRdmaMonitor::Collect() const
{
    Report r;
    for (const Port& p : m_ports)
    {
        for (uint32_t c = 0; c < DltraceRdmaNetDevice::kClasses; ++c)
        {
            const auto k = p.device->GetPfcCounters(c);
            r.pfc.push_back(
                {k.pausesSent, k.resumesSent, k.pausesReceived, k.resumesReceived, k.pausedTime.GetTimeStep()});
        }
        r.peak.push_back(p.switchPort ? p.device->GetPeakQueueBytes() : 0);
    }
    r.sampleTimes = m_sampleTimes;
    r.samples = m_samples;
    r.drops = GetDrops();
    r.ecnMarks = GetEcnMarks();
    for (const auto& q : m_network->GetQueuePairs())
    {
        if (!q.qp) // a UET PDC: no CNPs; its NACKs in their place
        {
            r.qps.push_back({q.job, q.src, q.dst, q.channel, true, q.pdc->GetPriority(), q.pdc->GetNacks(),
                             q.pdc->GetRetransmittedPackets(), q.pdc->GetTimeouts(), q.pdc->GetBytesAcked()});
            continue;
        }
        r.qps.push_back({q.job, q.src, q.dst, q.channel, false, q.qp->GetPriority(), q.qp->GetCnps(),
                         q.qp->GetRetransmittedPackets(), q.qp->GetTimeouts(), q.qp->GetBytesAcked()});
    }
    for (const auto& m : m_network->GetMessages())
    {
        r.messages.push_back({m.job, m.src, m.dst, m.channel, m.priority, m.bytes, m.posted.GetTimeStep(),
                              m.delivered.GetTimeStep(), m.ideal.GetTimeStep()});
    }
    r.remote = m_network->GetRemoteDeliveries();
    return r;
}

void
DltraceRdmaMonitor::Merge(const std::vector<Report>& parts)
{
    Report all = parts.at(0);
    all.remote.clear();
    // Partitions sample at the same times; one may stop before another's last sample.
    size_t samples = all.samples.size();
    for (const Report& p : parts)
    {
        samples = std::min(samples, p.samples.size());
    }
    all.samples.resize(samples);
    all.sampleTimes.resize(samples);
    for (size_t i = 1; i < parts.size(); ++i)
    {
        const Report& p = parts[i];
        NS_ABORT_MSG_IF(p.pfc.size() != all.pfc.size() || p.peak.size() != all.peak.size(),
                        "DltraceRdmaMonitor: partitions watch different ports");
        for (size_t k = 0; k < all.pfc.size(); ++k)
        {
            all.pfc[k].pausesSent += p.pfc[k].pausesSent;
            all.pfc[k].resumesSent += p.pfc[k].resumesSent;
            all.pfc[k].pausesReceived += p.pfc[k].pausesReceived;
            all.pfc[k].resumesReceived += p.pfc[k].resumesReceived;
            all.pfc[k].pausedSteps += p.pfc[k].pausedSteps;
        }
        for (size_t k = 0; k < all.peak.size(); ++k)
        {
            all.peak[k] = std::max(all.peak[k], p.peak[k]);
        }
        for (size_t t = 0; t < samples; ++t)
        {
            for (size_t k = 0; k < all.samples[t].size() && k < p.samples[t].size(); ++k)
            {
                all.samples[t][k] += p.samples[t][k];
            }
        }
        all.drops += p.drops;
        all.ecnMarks += p.ecnMarks;
        all.qps.insert(all.qps.end(), p.qps.begin(), p.qps.end());
        all.messages.insert(all.messages.end(), p.messages.begin(), p.messages.end());
    }
    // A message to a host of another partition was delivered there: its
    // route's messages, in the order posted, take that route's deliveries.
    using Key = std::tuple<uint32_t, int32_t, int32_t, uint16_t>;
    std::map<Key, std::deque<int64_t>> delivered;
    for (const Report& p : parts)
    {
        for (const auto& d : p.remote)
        {
            delivered[{d.job, d.src, d.dst, d.channel}].push_back(d.delivered.GetTimeStep());
        }
    }
    for (MessageRow& m : all.messages)
    {
        auto it = delivered.find({m.job, m.src, m.dst, m.channel});
        if (m.delivered == 0 && it != delivered.end() && !it->second.empty())
        {
            m.delivered = it->second.front();
            it->second.pop_front();
        }
    }
    auto key = [](const auto& x) { return std::make_tuple(x.job, x.src, x.dst, x.channel); };
    std::stable_sort(all.qps.begin(), all.qps.end(), [&](const QpRow& a, const QpRow& b) {
        return key(a) < key(b);
    });
    std::stable_sort(all.messages.begin(), all.messages.end(), [&](const MessageRow& a, const MessageRow& b) {
        return std::make_tuple(a.posted, key(a)) < std::make_tuple(b.posted, key(b));
    });
    m_merged = std::move(all);
}

DltraceRdmaMonitor::Report
DltraceRdmaMonitor::Current() const
{
    return m_merged ? *m_merged : Collect();
}

bool
DltraceRdmaMonitor::Write(const std::string& dir, std::string* error) const
{
    const Report r = Current();
    std::ostringstream queues;
    queues << "time_s,port,queue_bytes\n";
    for (size_t i = 0; i < r.samples.size(); ++i)
    {
        for (size_t p = 0; p < m_ports.size(); ++p)
        {
            queues << std::setprecision(9) << r.sampleTimes[i] << "," << m_ports[p].name << ","
                   << r.samples[i][p] << "\n";
        }
    }
    std::ostringstream pfc;
    pfc << "port,priority,pauses_sent,resumes_sent,pauses_received,resumes_received,paused_s\n";
    for (size_t p = 0; p < m_ports.size(); ++p)
    {
        for (uint32_t c = 0; c < DltraceRdmaNetDevice::kClasses; ++c)
        {
            const PfcRow& k = r.pfc[p * DltraceRdmaNetDevice::kClasses + c];
            if (k.pausesSent + k.pausesReceived + k.resumesSent + k.resumesReceived == 0)
            {
                continue;
            }
            pfc << m_ports[p].name << "," << c << "," << k.pausesSent << "," << k.resumesSent << ","
                << k.pausesReceived << "," << k.resumesReceived << "," << std::setprecision(9)
                << TimeStep(k.pausedSteps).GetSeconds() << "\n";
        }
    }
    std::ostringstream qps;
    qps << "job,src,dst,channel,priority,cnps,packets_resent,timeouts,bytes_acked\n";
    for (const QpRow& q : r.qps)
    {
        qps << q.job << "," << q.src << "," << q.dst << "," << q.channel << "," << q.priority << ","
            << q.congestion << "," << q.resent << "," << q.timeouts << "," << q.acked << "\n";
    }
    std::ostringstream messages;
    messages << "job,src,dst,channel,priority,bytes,posted_s,completion_s,ideal_s,slowdown\n";
    for (const MessageRow& m : r.messages)
    {
        messages << m.job << "," << m.src << "," << m.dst << "," << m.channel << "," << m.priority << ","
                 << m.bytes << "," << std::setprecision(9) << TimeStep(m.posted).GetSeconds() << ",";
        if (m.delivered != 0)
        {
            const double fct = (TimeStep(m.delivered) - TimeStep(m.posted)).GetSeconds();
            const double ideal = TimeStep(m.ideal).GetSeconds();
            messages << fct << "," << ideal << "," << std::setprecision(4) << fct / ideal << "\n";
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
    const Report r = Current();
    uint64_t cnps = 0, resent = 0, nacks = 0, timeouts = 0;
    for (const QpRow& q : r.qps)
    {
        resent += q.resent;
        if (q.uet)
        {
            nacks += q.congestion;
            timeouts += q.timeouts;
        }
        else
        {
            cnps += q.congestion;
        }
    }
    uint64_t pauses = 0;
    int64_t pausedSteps = 0;
    for (const PfcRow& k : r.pfc)
    {
        pauses += k.pausesSent;
        pausedSteps += k.pausedSteps;
    }
    const uint64_t peak = r.peak.empty() ? 0 : *std::max_element(r.peak.begin(), r.peak.end());
    std::vector<double> slowdowns;
    for (const MessageRow& m : r.messages)
    {
        if (m.delivered != 0 && m.ideal > 0)
        {
            slowdowns.push_back((TimeStep(m.delivered) - TimeStep(m.posted)).GetSeconds() /
                                TimeStep(m.ideal).GetSeconds());
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
                  pauses,
                  TimeStep(pausedSteps).GetSeconds(),
                  peak,
                  r.drops,
                  r.ecnMarks,
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
                      r.drops,
                      pauses);
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
