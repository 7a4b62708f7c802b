// SPDX-License-Identifier: GPL-2.0-only
// DltraceLinkMonitor: per-direction byte and packet counters from the
// devices' trace sources, and the samples links.csv is written from.
#include "dltrace-link-monitor.h"

#include "dltrace-attributes.h"
#include "dltrace-timeline.h"

#include "ns3/log.h"
#include "ns3/simulator.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceLinkMonitor");

NS_OBJECT_ENSURE_REGISTERED(DltraceLinkMonitor);

TypeId
DltraceLinkMonitor::GetTypeId()
{
    static TypeId tid = DltraceTypeId<DltraceLinkMonitor, Object>("ns3::DltraceLinkMonitor")
            .AddTime("Interval",
                     "Link utilisation sample period (0: no samples; "
                     "the counters still count).",
                     MilliSeconds(1), &DltraceLinkMonitor::m_interval, Seconds(0));
    return tid;
}

DltraceLinkMonitor::DltraceLinkMonitor()
    : m_deviceDropBytes(0),
      m_deviceDrops(0)
{
}

DltraceLinkMonitor::~DltraceLinkMonitor() = default;

void
DltraceLinkMonitor::AddLink(const std::string& name,
                            const std::string& reverseName,
                            uint64_t rateBps,
                            Ptr<NetDevice> a,
                            Ptr<NetDevice> b)
{
    for (int d = 0; d < 2; ++d)
    {
        auto dir = std::make_unique<Direction>();
        Ptr<NetDevice> dev = d == 0 ? a : b;
        dir->name = d == 0 ? name : reverseName;
        dir->rateBps = rateBps;
        dev->TraceConnectWithoutContext(
            "PhyTxEnd",
            MakeBoundCallback(&DltraceLinkMonitor::CountLinkTx, this, dir.get()));
        dev->TraceConnectWithoutContext(
            "MacTxDrop",
            MakeBoundCallback(&DltraceLinkMonitor::CountTx, &m_deviceDropBytes, &m_deviceDrops));
        m_directions.push_back(std::move(dir));
        m_sampledBytes.push_back(0);
    }
}

void
DltraceLinkMonitor::Start()
{
    if (m_interval.IsStrictlyPositive())
    {
        DltraceTimeline::Schedule(m_interval, [this] { SampleLinks(); });
    }
}

void
DltraceLinkMonitor::CountTx(uint64_t* bytes, uint64_t* packets, Ptr<const Packet> packet)
{
    *bytes += packet->GetSize();
    ++*packets;
}

void
DltraceLinkMonitor::CountLinkTx(DltraceLinkMonitor* monitor, Direction* direction, Ptr<const Packet> packet)
{
    direction->bytes += packet->GetSize();
    ++direction->packets;
    if (monitor->m_untilHook && --monitor->m_untilHook == 0)
    {
        monitor->m_untilHook = monitor->m_hookEvery;
        monitor->m_hook();
    }
}

void
DltraceLinkMonitor::SetPacketHook(uint64_t every, std::function<void()> hook)
{
    m_hook = std::move(hook);
    m_hookEvery = m_hook ? every : 0;
    m_untilHook = m_hookEvery;
}

void
DltraceLinkMonitor::SampleLinks()
{
    TakeSample();
    // Keep sampling while anything else is still scheduled.
    if (!Simulator::IsFinished())
    {
        DltraceTimeline::Schedule(m_interval, [this] { SampleLinks(); });
    }
}

void
DltraceLinkMonitor::Finish()
{
    const double now = DltraceTimeline::Now().GetSeconds();
    const double last = m_samples.empty() ? 0 : m_samples.back().timeS;
    if (m_interval.IsStrictlyPositive() && now > last)
    {
        TakeSample();
    }
}

void
DltraceLinkMonitor::TakeSample()
{
    if (m_beforeSample)
    {
        m_beforeSample();
    }
    Sample s;
    s.timeS = DltraceTimeline::Now().GetSeconds();
    s.bytes.reserve(m_directions.size());
    for (size_t d = 0; d < m_directions.size(); ++d)
    {
        s.bytes.push_back(m_directions[d]->bytes - m_sampledBytes[d]);
        m_sampledBytes[d] = m_directions[d]->bytes;
    }
    m_samples.push_back(std::move(s));
}

void
DltraceLinkMonitor::SetBeforeSampleCallback(std::function<void()> cb)
{
    m_beforeSample = std::move(cb);
}

uint32_t
DltraceLinkMonitor::GetDirectionCount() const
{
    return uint32_t(m_directions.size());
}

const DltraceLinkMonitor::Direction&
DltraceLinkMonitor::GetDirection(uint32_t d) const
{
    return *m_directions.at(d);
}

const std::vector<DltraceLinkMonitor::Sample>&
DltraceLinkMonitor::GetSamples() const
{
    return m_samples;
}

uint64_t
DltraceLinkMonitor::GetLinkPackets() const
{
    uint64_t n = 0;
    for (const auto& d : m_directions)
    {
        n += d->packets;
    }
    return n;
}

void
DltraceLinkMonitor::Credit(uint32_t d, uint64_t bytes, uint64_t packets)
{
    m_directions.at(d)->bytes += bytes;
    m_directions.at(d)->packets += packets;
}

uint64_t
DltraceLinkMonitor::GetDeviceDrops() const
{
    return m_deviceDrops;
}

} // namespace ns3
