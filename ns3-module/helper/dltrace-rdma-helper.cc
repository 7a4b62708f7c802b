// SPDX-License-Identifier: GPL-2.0-only
// DltraceRdmaHelper: nodes, cables and ports from the graph; routes by the graph's ECMP.
#include "dltrace-rdma-helper.h"

#include "ns3/dltrace-rdma-channel.h"
#include "ns3/dltrace-rdma-dcqcn.h"
#include "ns3/dltrace-rdma-hpcc.h"
#include "ns3/dltrace-rdma-net-device.h"
#include "ns3/dltrace-rdma-timely.h"
#include "ns3/log.h"
#include "ns3/uinteger.h"

#include <cmath>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceRdmaHelper");

bool
DltraceRdmaHelper::LookupCongestionControl(const std::string& name, TypeId* tid)
{
    if (name == "none")
    {
        *tid = DltraceRdmaCongestionControl::GetTypeId();
    }
    else if (name == "dcqcn")
    {
        *tid = DltraceRdmaDcqcn::GetTypeId();
    }
    else if (name == "hpcc")
    {
        *tid = DltraceRdmaHpcc::GetTypeId();
    }
    else if (name == "timely")
    {
        *tid = DltraceRdmaTimely::GetTypeId();
    }
    else
    {
        return false;
    }
    return true;
}

std::string
DltraceRdmaHelper::CongestionControlNames()
{
    return "none, dcqcn, hpcc, timely";
}

void
DltraceRdmaHelper::SetCongestionControl(const std::string& name)
{
    TypeId tid;
    if (!LookupCongestionControl(name, &tid))
    {
        NS_FATAL_ERROR("unknown RDMA congestion control '" << name << "' (known: "
                                                           << CongestionControlNames() << ")");
    }
    m_cc.SetTypeId(tid);
    m_haveCc = true;
}

void
DltraceRdmaHelper::Build(const dltrace::models::TopologyGraph& graph, const std::vector<uint32_t>& systemId)
{
    m_routing = std::make_shared<DltraceRdmaRouting>(graph);
    const uint32_t nodes = static_cast<uint32_t>(graph.names.size());
    auto system = [&systemId](uint32_t i) { return i < systemId.size() ? systemId[i] : 0; };
    // Hosts first, then switches: node ids are the graph's in every partition.
    for (uint32_t n = 0; n < nodes; ++n)
    {
        (n < graph.hosts ? m_hosts : m_switchNodes).Add(CreateObject<Node>(system(n)));
    }
    for (uint32_t s = graph.hosts; s < nodes; ++s)
    {
        Ptr<DltraceRdmaSwitch> sw = CreateObject<DltraceRdmaSwitch>();
        sw->SetRouting(m_routing, s);
        m_switchNodes.Get(s - graph.hosts)->AggregateObject(sw);
        m_switches.push_back(sw);
    }
    for (uint32_t h = 0; h < graph.hosts; ++h)
    {
        Ptr<DltraceRdmaNic> nic = CreateObject<DltraceRdmaNic>();
        if (m_haveCc)
        {
            nic->SetCongestionControl(m_cc);
        }
        nic->Setup(h, m_routing);
        m_hosts.Get(h)->AggregateObject(nic);
        m_nics.push_back(nic);
    }
    const uint32_t mtu = m_nics.empty() ? 1024 : m_nics[0]->GetMtu();
    auto nodeOf = [&](uint32_t n) {
        return n < graph.hosts ? m_hosts.Get(n) : m_switchNodes.Get(n - graph.hosts);
    };
    for (uint32_t l = 0; l < graph.links.size(); ++l)
    {
        const auto& link = graph.links[l];
        Ptr<DltraceRdmaRemoteChannel> remote;
        if (system(link.a) != system(link.b))
        {
            remote = CreateObject<DltraceRdmaRemoteChannel>();
            m_remoteChannels.push_back(remote);
        }
        Ptr<DltraceRdmaChannel> channel = remote ? Ptr<DltraceRdmaChannel>(remote) : CreateObject<DltraceRdmaChannel>();
        channel->SetAttribute("Delay", TimeValue(NanoSeconds(link.delay_ns)));
        Ptr<DltraceRdmaNetDevice> ends[2];
        for (int e = 0; e < 2; ++e)
        {
            uint32_t n = e == 0 ? link.a : link.b;
            Ptr<DltraceRdmaNetDevice> dev = CreateObject<DltraceRdmaNetDevice>();
            dev->SetAttribute("DataRate", DataRateValue(DataRate(link.rate_bps)));
            dev->SetMtu(static_cast<uint16_t>(mtu));
            nodeOf(n)->AddDevice(dev);
            dev->Attach(channel);
            ends[e] = dev;
        }
        if (remote)
        {
            remote->Connect();
        }
        for (int e = 0; e < 2; ++e)
        {
            uint32_t n = e == 0 ? link.a : link.b;
            if (graph.IsSwitch(n))
            {
                m_switches[n - graph.hosts]->AddPort(ends[e], l, NanoSeconds(link.delay_ns));
            }
            else
            {
                m_nics[n]->AddPort(ends[e], l); // a GPU: its NVLink link and NIC ports
            }
        }
        std::string nameA = graph.names[link.a];
        std::string nameB = graph.names[link.b];
        m_links.push_back(Link{ends[0], ends[1], nameA + "-" + nameB, nameB + "-" + nameA, link.rate_bps});
    }
    if (m_uet)
    {
        BuildUet();
    }
}

void
DltraceRdmaHelper::SetUet(const UetConfig& config)
{
    m_uet = true;
    m_uetConfig = config;
}

bool
DltraceRdmaHelper::IsUet() const
{
    return m_uet;
}

void
DltraceRdmaHelper::BuildUet()
{
    const auto& graph = m_routing->GetGraph();
    const uint32_t frame = m_nics.at(0)->GetMtu() + DltraceRdmaHeader::kUetOverhead;
    // uet-htsim's calculate_rtt: twice the one-way latency of the longest path, plus a
    // full frame's and an ACK's serialization at the host rate on each of its hops.
    uint64_t hostRate = 0;
    for (const auto& link : graph.links)
    {
        if (link.host_link)
        {
            hostRate = std::max(hostRate, link.rate_bps);
        }
    }
    if (hostRate == 0)
    {
        hostRate = graph.links.at(0).rate_bps;
    }
    Time longest;
    uint32_t longestHops = 0;
    const uint32_t src = 0;
    for (uint32_t dst = 1; dst < graph.hosts; ++dst)
    {
        Time oneWay;
        uint32_t hops = 0;
        for (uint32_t l : graph.Route(src, dst, m_routing->HopsTo(dst), 0))
        {
            oneWay += NanoSeconds(graph.links[l].delay_ns);
            ++hops;
        }
        if (hops > longestHops || (hops == longestHops && oneWay > longest))
        {
            longest = oneWay;
            longestHops = hops;
        }
    }
    const DataRate rate(hostRate);
    m_uetRtt = m_uetConfig.networkRtt > Seconds(0)
                   ? m_uetConfig.networkRtt
                   : 2 * longest + longestHops * (rate.CalculateBytesTxTime(frame) +
                                                  rate.CalculateBytesTxTime(DltraceRdmaHeader::kMinFrame));
    const double bdpBytes = m_uetRtt.GetSeconds() * double(hostRate) / 8;
    const uint64_t bdpPackets = uint64_t(std::ceil(bdpBytes / frame));
    m_uetQueueBytes = m_uetConfig.queuePackets > 0
                          ? uint64_t(m_uetConfig.queuePackets) * frame
                          : uint64_t(std::ceil(bdpPackets * m_uetConfig.queueBdp)) * frame;
    const uint64_t ecnLow = uint64_t(std::ceil(bdpPackets * 0.2)) * frame;
    const uint64_t ecnHigh = std::min<uint64_t>(uint64_t(std::ceil(bdpPackets * 0.8)) * frame, m_uetQueueBytes);
    for (auto& sw : m_switches)
    {
        // uet-htsim: with RCCC the receiver's pulls pace the last hop, which marks nothing.
        sw->SetUetQueue(m_uetQueueBytes, true, std::min(ecnLow, ecnHigh), ecnHigh, !m_uetConfig.rccc);
    }
    for (auto& nic : m_nics)
    {
        nic->EnableUet(m_uetConfig.rccc);
    }
}

Time
DltraceRdmaHelper::GetUetNetworkRtt() const
{
    return m_uetRtt;
}

uint64_t
DltraceRdmaHelper::GetUetQueueBytes() const
{
    return m_uetQueueBytes;
}

uint64_t
DltraceRdmaHelper::GetUetTrimmed() const
{
    uint64_t trimmed = 0;
    for (const auto& sw : m_switches)
    {
        trimmed += sw->GetTrimmed();
    }
    return trimmed;
}

uint64_t
DltraceRdmaHelper::GetUetEcnMarks() const
{
    uint64_t marks = 0;
    for (const auto& sw : m_switches)
    {
        marks += sw->GetUetEcnMarks();
    }
    return marks;
}

Ptr<DltraceUetPdc>
DltraceRdmaHelper::CreateUetPdc(uint32_t src, uint32_t dst, uint32_t priority, uint64_t flowHash)
{
    NS_ASSERT_MSG(m_uet, "CreateUetPdc on a fabric built without SetUet");
    DltraceUetPdc::Fabric f;
    f.networkRtt = m_uetRtt;
    f.queueBytes = m_uetQueueBytes;
    f.trimming = true;
    f.rccc = m_uetConfig.rccc;
    return m_nics.at(src)->CreateUetPdc(dst, priority, flowHash, f);
}

NodeContainer
DltraceRdmaHelper::GetHosts() const
{
    return m_hosts;
}

Ptr<DltraceRdmaNic>
DltraceRdmaHelper::GetNic(uint32_t host) const
{
    return m_nics.at(host);
}

Ptr<DltraceRdmaSwitch>
DltraceRdmaHelper::GetSwitch(uint32_t index) const
{
    return m_switches.at(index);
}

uint32_t
DltraceRdmaHelper::GetSwitchCount() const
{
    return static_cast<uint32_t>(m_switches.size());
}

const std::vector<DltraceRdmaHelper::Link>&
DltraceRdmaHelper::GetLinks() const
{
    return m_links;
}

const std::vector<Ptr<DltraceRdmaRemoteChannel>>&
DltraceRdmaHelper::GetRemoteChannels() const
{
    return m_remoteChannels;
}

const dltrace::models::TopologyGraph&
DltraceRdmaHelper::GetGraph() const
{
    return m_routing->GetGraph();
}

Time
DltraceRdmaHelper::BaseRtt(uint32_t src, uint32_t dst, uint64_t flowHash) const
{
    const auto& graph = m_routing->GetGraph();
    const uint32_t frame = m_nics.at(src)->GetMtu() + DltraceRdmaHeader::kRoceOverhead;
    Time rtt;
    for (uint32_t dir = 0; dir < 2; ++dir)
    {
        uint32_t from = dir == 0 ? src : dst;
        uint32_t to = dir == 0 ? dst : src;
        uint32_t bytes = dir == 0 ? frame : DltraceRdmaHeader::kMinFrame;
        for (uint32_t l : graph.Route(from, to, m_routing->HopsTo(to), flowHash))
        {
            const auto& link = graph.links[l];
            rtt += NanoSeconds(link.delay_ns) + DataRate(link.rate_bps).CalculateBytesTxTime(bytes);
        }
    }
    return rtt;
}

Ptr<DltraceRdmaQueuePair>
DltraceRdmaHelper::CreateQueuePair(uint32_t src, uint32_t dst, uint32_t priority, uint64_t flowHash)
{
    return m_nics.at(src)->CreateQueuePair(dst, priority, flowHash, BaseRtt(src, dst, flowHash));
}

} // namespace ns3
