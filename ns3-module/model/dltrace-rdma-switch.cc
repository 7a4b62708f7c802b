// SPDX-License-Identifier: GPL-2.0-only
// DltraceRdmaSwitch: receive, route, admit, mark, queue; release and stamp INT at dequeue.
#include "dltrace-rdma-switch.h"

#include "dltrace-attributes.h"

#include "dltrace-rdma-header.h"
#include "dltrace-rdma-net-device.h"

#include "ns3/log.h"
#include "ns3/simulator.h"

#include <cstdint>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceRdmaSwitch");

NS_OBJECT_ENSURE_REGISTERED(DltraceRdmaSwitch);

DltraceRdmaRouting::DltraceRdmaRouting(dltrace::models::TopologyGraph graph)
    : m_graph(std::move(graph)),
      m_hops(m_graph.hosts)
{
}

const dltrace::models::TopologyGraph&
DltraceRdmaRouting::GetGraph() const
{
    return m_graph;
}

const std::vector<uint32_t>&
DltraceRdmaRouting::HopsTo(uint32_t dst)
{
    if (m_hops[dst].empty())
    {
        m_hops[dst] = m_graph.HopsTo(dst);
    }
    return m_hops[dst];
}

TypeId
DltraceRdmaSwitch::GetTypeId()
{
    static TypeId tid = DltraceTypeId<DltraceRdmaSwitch, Object>("ns3::DltraceRdmaSwitch");
    return tid;
}

DltraceRdmaSwitch::DltraceRdmaSwitch()
    : m_mmu(CreateObject<DltraceRdmaSwitchMmu>()),
      m_graphNode(0)
{
}

void
DltraceRdmaSwitch::DoDispose()
{
    m_ports.clear();
    m_mmu = nullptr;
    Object::DoDispose();
}

void
DltraceRdmaSwitch::SetRouting(std::shared_ptr<DltraceRdmaRouting> routing, uint32_t graphNode)
{
    m_routing = std::move(routing);
    m_graphNode = graphNode;
    m_portOfLink.assign(m_routing->GetGraph().links.size(), UINT32_MAX);
    m_candidates.assign(m_routing->GetGraph().hosts, {});
}

const std::vector<uint32_t>&
DltraceRdmaSwitch::CandidatePorts(uint32_t dstHost)
{
    std::vector<uint32_t>& ports = m_candidates.at(dstHost);
    if (ports.empty())
    {
        const auto& graph = m_routing->GetGraph();
        for (uint32_t link : graph.EqualCostLinks(m_graphNode, dstHost, m_routing->HopsTo(dstHost)))
        {
            if (m_portOfLink[link] == UINT32_MAX)
            {
                NS_FATAL_ERROR("DltraceRdmaSwitch " << graph.names[m_graphNode] << ": link "
                                                    << graph.links[link].name << " has no port");
            }
            ports.push_back(m_portOfLink[link]);
        }
        if (ports.empty())
        {
            NS_FATAL_ERROR("DltraceRdmaSwitch " << graph.names[m_graphNode] << ": no route to host "
                                                << dstHost);
        }
    }
    return ports;
}

uint32_t
DltraceRdmaSwitch::LeastLoaded(const std::vector<uint32_t>& candidates, uint64_t key) const
{
    const auto& graph = m_routing->GetGraph();
    const uint32_t n = static_cast<uint32_t>(candidates.size());
    const uint32_t first = graph.HashPick(m_graphNode, n, key);
    uint32_t best = candidates[first];
    uint64_t least = m_ports[best]->GetQueueBytes();
    for (uint32_t i = 1; i < n && least > 0; ++i)
    {
        const uint32_t port = candidates[(first + i) % n];
        const uint64_t bytes = m_ports[port]->GetQueueBytes();
        if (bytes < least)
        {
            best = port;
            least = bytes;
        }
    }
    return best;
}

uint32_t
DltraceRdmaSwitch::SelectPort(uint32_t dstHost, uint64_t flowHash, uint64_t packetKey)
{
    using dltrace::models::LoadBalancer;
    const auto& graph = m_routing->GetGraph();
    const std::vector<uint32_t>& candidates = CandidatePorts(dstHost);
    if (candidates.size() == 1)
    {
        return candidates[0];
    }
    const uint32_t n = static_cast<uint32_t>(candidates.size());
    switch (graph.lb)
    {
    case LoadBalancer::kEcmp:
    case LoadBalancer::kEEcmp:
        // NextLink's pick, so a flow takes the path the static routes (and the
        // flow simulator) give it; it hashes among the same links in the same order.
        return m_portOfLink[graph.NextLink(m_graphNode, dstHost, m_routing->HopsTo(dstHost), flowHash)];
    case LoadBalancer::kSpray:
        return candidates[graph.HashPick(m_graphNode, n, flowHash ^ (packetKey + 1) * 0xD6E8FEB86659FD93ull)];
    case LoadBalancer::kAdaptive:
        return LeastLoaded(candidates, flowHash ^ (packetKey + 1) * 0xD6E8FEB86659FD93ull);
    case LoadBalancer::kFlowlet: {
        const Time now = Simulator::Now();
        auto [it, fresh] = m_flowlets.try_emplace(flowHash ^ (uint64_t(dstHost) << 40), Flowlet{now, 0});
        if (fresh || now - it->second.last > NanoSeconds(graph.flowlet_gap_ns))
        {
            it->second.port = LeastLoaded(candidates, flowHash ^ uint64_t(now.GetNanoSeconds()));
        }
        it->second.last = now;
        return it->second.port;
    }
    }
    return candidates[0];
}

void
DltraceRdmaSwitch::AddPort(Ptr<DltraceRdmaNetDevice> device, uint32_t link, Time delay)
{
    uint32_t port = m_mmu->AddPort(device, delay);
    NS_ASSERT(port == m_ports.size());
    m_ports.push_back(device);
    m_portOfLink.at(link) = port;
    m_linkOfPort.push_back(link);
    device->SetRdmaReceiveCallback(MakeCallback(&DltraceRdmaSwitch::Receive, this));
    device->SetDequeueCallback(MakeBoundCallback(
        +[](DltraceRdmaSwitch* sw, uint32_t out, Ptr<Packet> p, uint32_t prio, uint32_t in) {
            sw->Dequeued(out, p, prio, in);
        },
        this,
        port));
}

Ptr<DltraceRdmaSwitchMmu>
DltraceRdmaSwitch::GetMmu() const
{
    return m_mmu;
}

uint32_t
DltraceRdmaSwitch::GetPortCount() const
{
    return static_cast<uint32_t>(m_ports.size());
}

Ptr<DltraceRdmaNetDevice>
DltraceRdmaSwitch::GetPort(uint32_t port) const
{
    return m_ports.at(port);
}

void
DltraceRdmaSwitch::Receive(Ptr<DltraceRdmaNetDevice> device, Ptr<Packet> packet)
{
    DltraceRdmaHeader h;
    h.PeekFrom(*packet);
    uint32_t out = SelectPort(h.dstHost, h.flowHash, h.psn);
    Ptr<DltraceRdmaNetDevice> outDevice = m_ports[out];
    if (h.type != DltraceRdmaHeader::DATA || h.HasFlag(DltraceRdmaHeader::TRIMMED))
    {
        outDevice->EnqueueControl(packet);
        return;
    }
    uint32_t in = 0;
    while (m_ports[in] != device)
    {
        ++in;
    }
    uint32_t priority = h.priority % DltraceRdmaNetDevice::kClasses;
    if (h.HasFlag(DltraceRdmaHeader::UET))
    {
        if (UetAdmit(packet, h, in, out, m_linkOfPort[out]))
        {
            outDevice->EnqueueData(packet, priority, in);
        }
        return;
    }
    if (!m_mmu->Admit(in, out, priority, packet->GetSize()))
    {
        outDevice->NotifyDrop(packet);
        return;
    }
    if (!h.HasFlag(DltraceRdmaHeader::ECN_CE) && m_mmu->ShouldMarkEcn(out, priority))
    {
        packet->RemoveAtStart(h.GetSerializedSize()); // (H holds it: peeked above)
        h.SetFlag(DltraceRdmaHeader::ECN_CE);
        packet->AddHeader(h);
    }
    outDevice->EnqueueData(packet, priority, in);
}

void
DltraceRdmaSwitch::Dequeued(uint32_t outPort, Ptr<Packet> packet, uint32_t priority, uint32_t inPort)
{
    m_mmu->Release(inPort, priority, packet->GetSize());
    DltraceRdmaHeader h;
    h.PeekFrom(*packet);
    if (h.HasFlag(DltraceRdmaHeader::UET))
    {
        UetMark(outPort, packet, priority);
        return;
    }
    if (h.HasFlag(DltraceRdmaHeader::INT_ENABLED))
    {
        Ptr<DltraceRdmaNetDevice> dev = m_ports[outPort];
        packet->RemoveAtStart(h.GetSerializedSize()); // (H holds it: peeked above)
        DltraceIntHop hop;
        // What this packet's class competes with (its class and above under
        // strict priority), so a high class is not held back by traffic it preempts.
        hop.qlenBytes = static_cast<uint32_t>(dev->GetQueueBytesFrom(priority));
        hop.txBytes = static_cast<uint32_t>(dev->GetTxBytesFrom(priority));
        hop.tsNs = static_cast<uint32_t>(Simulator::Now().GetNanoSeconds());
        hop.rateMbps = static_cast<uint32_t>(dev->GetDataRate().GetBitRate() / 1000000);
        h.AddHop(hop);
        packet->AddHeader(h);
    }
}

void
DltraceRdmaSwitch::SetUetQueue(uint64_t queueBytes, bool ecn, uint64_t ecnLow, uint64_t ecnHigh, bool ecnToHosts)
{
    m_uetQueueBytes = queueBytes;
    m_uetEcn = ecn;
    m_uetEcnLow = ecnLow;
    m_uetEcnHigh = std::max(ecnHigh, ecnLow + 1);
    m_uetPortToHost.assign(m_ports.size(), false);
    const auto& graph = m_routing->GetGraph();
    for (uint32_t l = 0; l < m_portOfLink.size(); ++l)
    {
        if (m_portOfLink[l] != UINT32_MAX && !ecnToHosts &&
            (!graph.IsSwitch(graph.links[l].a) || !graph.IsSwitch(graph.links[l].b)))
        {
            m_uetPortToHost[m_portOfLink[l]] = true;
        }
    }
    if (!m_uetRng)
    {
        m_uetRng = CreateObject<UniformRandomVariable>();
    }
}

uint64_t
DltraceRdmaSwitch::GetTrimmed() const
{
    return m_trimmed;
}

uint64_t
DltraceRdmaSwitch::GetUetEcnMarks() const
{
    return m_uetMarks;
}

bool
DltraceRdmaSwitch::UetAdmit(Ptr<Packet> packet, DltraceRdmaHeader& h, uint32_t in, uint32_t out, uint32_t link)
{
    const uint32_t priority = h.priority % DltraceRdmaNetDevice::kClasses;
    const uint64_t queued = m_ports[out]->GetQueueBytes(priority);
    const bool fits = m_uetQueueBytes == 0 || queued + packet->GetSize() <= m_uetQueueBytes;
    if (!fits && m_uetRng->GetValue() < 0.5)
    {
        // uet-htsim's composite queue: half the time the packet queued last is
        // trimmed and the arriving one takes its place.
        uint32_t victimIn = 0;
        if (Ptr<Packet> victim = m_ports[out]->RemoveLastData(priority, &victimIn))
        {
            m_mmu->Release(victimIn, priority, victim->GetSize());
            DltraceRdmaHeader v;
            victim->RemoveAtStart(v.PeekFrom(*victim));
            Trim(v, out, link);
            if (m_mmu->Admit(in, out, priority, packet->GetSize()))
            {
                return true;
            }
        }
    }
    else if (fits && m_mmu->Admit(in, out, priority, packet->GetSize()))
    {
        return true;
    }
    Trim(h, out, link);
    return false;
}

void
DltraceRdmaSwitch::Trim(DltraceRdmaHeader h, uint32_t out, uint32_t link)
{
    // The header goes on, first in line, so the receiver can NACK at once.
    ++m_trimmed;
    h.SetFlag(DltraceRdmaHeader::TRIMMED);
    const auto& l = m_routing->GetGraph().links[link];
    if (l.a == h.dstHost || l.b == h.dstHost)
    {
        h.SetFlag(DltraceRdmaHeader::LAST_HOP_TRIM);
    }
    Ptr<Packet> trimmed = Create<Packet>();
    trimmed->AddHeader(h);
    m_ports[out]->EnqueueControl(trimmed);
}

void
DltraceRdmaSwitch::UetMark(uint32_t outPort, Ptr<Packet> packet, uint32_t priority)
{
    if (!m_uetEcn)
    {
        return;
    }
    if (m_uetPortToHost[outPort])
    {
        return;
    }
    const uint64_t q = m_ports[outPort]->GetQueueBytes(priority);
    if (q <= m_uetEcnLow)
    {
        return;
    }
    if (q <= m_uetEcnHigh &&
        m_uetRng->GetValue() >= double(q - m_uetEcnLow) / double(m_uetEcnHigh - m_uetEcnLow))
    {
        return;
    }
    DltraceRdmaHeader h;
    packet->RemoveAtStart(h.PeekFrom(*packet));
    h.SetFlag(DltraceRdmaHeader::ECN_CE);
    packet->AddHeader(h);
    ++m_uetMarks;
}

} // namespace ns3
