// SPDX-License-Identifier: GPL-2.0-only
// DltraceRdmaNic: QP round robin with pacing on the send side; PSN checks,
// ACK/NACK and CNP generation on the receive side.
#include "dltrace-rdma-nic.h"

#include "dltrace-attributes.h"

#include "dltrace-rdma-net-device.h"
#include "dltrace-rdma-switch.h"

#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceRdmaNic");

NS_OBJECT_ENSURE_REGISTERED(DltraceRdmaNic);

TypeId
DltraceRdmaNic::GetTypeId()
{
    static TypeId tid = DltraceTypeId<DltraceRdmaNic, Object>("ns3::DltraceRdmaNic")
            .AddUinteger("Mtu",
                         "Payload bytes per packet (the RoCE path MTU); 62 bytes of RoCEv2 "
                         "headers come on top. Default 1024, the MTU of the DCQCN and HPCC "
                         "evaluations.",
                         1024, &DltraceRdmaNic::m_mtu, 64, 9000)
            .AddUinteger("AckInterval",
                         "Packets per ACK (a message's last packet is always acknowledged). "
                         "Default 1: HPCC needs per-packet feedback.",
                         1, &DltraceRdmaNic::m_ackInterval, 1)
            .AddTime("CnpInterval",
                     "A QP gets at most one CNP per this interval (s). Default 50 us "
                     "(DCQCN paper, notification point).",
                     MicroSeconds(50), &DltraceRdmaNic::m_cnpInterval, Seconds(0))
            .AddBoolean("OutOfOrder",
                        "Receivers place packets that arrive out of order (direct data "
                        "placement: PSNs above the expected one are kept until the gap "
                        "fills) and NACK only a missing PSN, which the sender alone "
                        "resends (selective repeat), as NICs do for adaptive routing "
                        "and spraying. Default false: go-back-N (a gap is a NACK and the "
                        "sender resends from the missing PSN).",
                        false, &DltraceRdmaNic::m_outOfOrder)
            .AddUinteger("OutOfOrderNackGap",
                         "With OutOfOrder: a missing PSN is NACKed once a packet this many "
                         "PSNs past it arrived (reordering by adaptive routing stays "
                         "below it; a loss on a lossy fabric does not). Default 256.",
                         256, &DltraceRdmaNic::m_oooNackGap, 1);
    return tid;
}

DltraceRdmaNic::DltraceRdmaNic()
    : m_host(0),
      m_haveCc(false),
      m_cnpsSent(0),
      m_nacks(0)
{
}

void
DltraceRdmaNic::DoDispose()
{
    for (auto& port : m_ports)
    {
        port.wakeEvent.Cancel();
    }
    for (auto& qp : m_qps)
    {
        qp->Dispose();
    }
    m_qps.clear();
    for (auto& pdc : m_pdcs)
    {
        pdc->Dispose();
    }
    m_pdcs.clear();
    if (m_uet)
    {
        m_uet->Dispose();
        m_uet.reset();
    }
    m_ports.clear();
    m_routing.reset();
    m_deliver = DeliverCallback();
    Object::DoDispose();
}

void
DltraceRdmaNic::Setup(uint32_t host, Ptr<DltraceRdmaNetDevice> device)
{
    m_host = host;
    AddPort(device, UINT32_MAX);
}

void
DltraceRdmaNic::Setup(uint32_t host, std::shared_ptr<DltraceRdmaRouting> routing)
{
    m_host = host;
    m_routing = std::move(routing);
}

void
DltraceRdmaNic::AddPort(Ptr<DltraceRdmaNetDevice> device, uint32_t link)
{
    const uint32_t port = uint32_t(m_ports.size());
    m_ports.push_back(Port{device, {}, 0, {}, 0, EventId()});
    m_portOfLink[link] = port;
    device->SetPullCallback(MakeBoundCallback(
        +[](DltraceRdmaNic* nic, uint32_t p) { return nic->Pull(p); },
        this,
        port));
    device->SetRdmaReceiveCallback(MakeCallback(&DltraceRdmaNic::Receive, this));
}

uint32_t
DltraceRdmaNic::PortTo(uint32_t dst, uint64_t flowHash) const
{
    if (m_ports.size() == 1 || !m_routing)
    {
        return 0;
    }
    const auto& graph = m_routing->GetGraph();
    const uint32_t link = graph.NextLink(m_host, dst, m_routing->HopsTo(dst), flowHash);
    auto port = m_portOfLink.find(link);
    if (port == m_portOfLink.end())
    {
        NS_FATAL_ERROR("DltraceRdmaNic " << graph.names[m_host] << ": no port towards node " << dst);
    }
    return port->second;
}

void
DltraceRdmaNic::SetCongestionControl(const ObjectFactory& factory)
{
    m_ccFactory = factory;
    m_haveCc = true;
}

Ptr<DltraceRdmaQueuePair>
DltraceRdmaNic::CreateQueuePair(uint32_t dst, uint32_t priority, uint64_t flowHash, Time baseRtt)
{
    Ptr<DltraceRdmaCongestionControl> cc =
        m_haveCc ? m_ccFactory.Create<DltraceRdmaCongestionControl>()
                 : CreateObject<DltraceRdmaCongestionControl>();
    Ptr<DltraceRdmaQueuePair> qp = CreateObject<DltraceRdmaQueuePair>();
    Port& port = m_ports.at(PortTo(dst, flowHash));
    port.qps.push_back(uint32_t(m_qps.size()));
    qp->Setup(static_cast<uint32_t>(m_qps.size()),
              m_host,
              dst,
              priority,
              flowHash,
              m_mtu,
              cc,
              static_cast<double>(port.device->GetDataRate().GetBitRate()),
              baseRtt);
    qp->SetWakeCallback(MakeCallback(&DltraceRdmaNic::Wake, this));
    qp->SetSelectiveRepeat(m_outOfOrder);
    m_qps.push_back(qp);
    return qp;
}

void
DltraceRdmaNic::SetDeliverCallback(DeliverCallback cb)
{
    m_deliver = cb;
}

void
DltraceRdmaNic::Wake()
{
    for (auto& port : m_ports)
    {
        port.device->TriggerTransmit();
    }
}

Ptr<Packet>
DltraceRdmaNic::Pull(uint32_t p)
{
    Port& port = m_ports[p];
    const uint32_t n = static_cast<uint32_t>(port.qps.size());
    const Time now = Simulator::Now();
    Time earliest = Time::Max();
    for (uint32_t i = 0; i < n; ++i)
    {
        uint32_t index = (port.rr + i) % n;
        DltraceRdmaQueuePair* qp = PeekPointer(m_qps[port.qps[index]]);
        if (!qp->HasDataToSend() || port.device->IsPaused(qp->GetPriority()) || !qp->WindowAllows())
        {
            continue;
        }
        Time at = qp->GetNextSendTime();
        if (at <= now)
        {
            port.rr = (index + 1) % n;
            return qp->NextPacket();
        }
        earliest = std::min(earliest, at);
    }
    if (!port.pdcs.empty())
    {
        if (Ptr<Packet> packet = PullUet(port))
        {
            return packet;
        }
    }
    if (earliest != Time::Max() &&
        (!port.wakeEvent.IsRunning() || Simulator::GetDelayLeft(port.wakeEvent) > earliest - now))
    {
        port.wakeEvent.Cancel();
        Ptr<DltraceRdmaNetDevice> device = port.device;
        port.wakeEvent = Simulator::Schedule(earliest - now, &DltraceRdmaNetDevice::TriggerTransmit, device);
    }
    return nullptr;
}

void
DltraceRdmaNic::Receive(Ptr<DltraceRdmaNetDevice> /*device*/, Ptr<Packet> packet)
{
    // Peeked and cut off rather than RemoveHeader's byte-at-a-time read
    // (the same for a packet without metadata, which the module never enables).
    DltraceRdmaHeader h;
    packet->RemoveAtStart(h.PeekFrom(*packet));
    if (h.dstHost != m_host)
    {
        NS_FATAL_ERROR("DltraceRdmaNic host " << m_host << ": a packet for host " << h.dstHost
                                              << " (GPU nodes do not forward)");
    }
    if (h.HasFlag(DltraceRdmaHeader::UET))
    {
        ReceiveUet(packet, h);
        return;
    }
    switch (h.type)
    {
    case DltraceRdmaHeader::DATA:
        ReceiveData(packet, h);
        break;
    case DltraceRdmaHeader::ACK:
    case DltraceRdmaHeader::NACK:
    case DltraceRdmaHeader::CNP:
        if (h.qp >= m_qps.size())
        {
            NS_FATAL_ERROR("DltraceRdmaNic host " << m_host << ": feedback for unknown QP " << h.qp);
        }
        if (h.type == DltraceRdmaHeader::ACK)
        {
            m_qps[h.qp]->OnAck(h);
        }
        else if (h.type == DltraceRdmaHeader::NACK)
        {
            m_qps[h.qp]->OnNack(h);
        }
        else
        {
            m_qps[h.qp]->OnCnp();
        }
        break;
    default:
        break;
    }
}

void
DltraceRdmaNic::ReceiveData(Ptr<Packet> packet, const DltraceRdmaHeader& h)
{
    Receiver& r = m_receivers[(uint64_t(h.srcHost) << 32) | h.qp];
    const Time now = Simulator::Now();
    if (h.HasFlag(DltraceRdmaHeader::ECN_CE))
    {
        if (!r.cnpSent || now - r.lastCnp >= m_cnpInterval)
        {
            r.cnpSent = true;
            r.lastCnp = now;
            ++m_cnpsSent;
            SendControl(DltraceRdmaHeader::CNP, h, 0, false);
        }
    }
    if (h.psn == r.expected)
    {
        const bool last = h.HasFlag(DltraceRdmaHeader::LAST);
        bool ack = Place(r, h.srcHost, h.qp, {packet->GetSize(), h.msgSeq, last});
        // Out of order: what waited for this PSN is in order now.
        for (auto it = r.placed.begin(); it != r.placed.end() && it->first == r.expected; it = r.placed.erase(it))
        {
            ack = Place(r, h.srcHost, h.qp, it->second) || ack;
        }
        if (ack)
        {
            SendControl(DltraceRdmaHeader::ACK, h, r.expected - 1, true);
        }
    }
    else if (h.psn > r.expected && m_outOfOrder)
    {
        r.placed.emplace(h.psn, Placed{packet->GetSize(), h.msgSeq, h.HasFlag(DltraceRdmaHeader::LAST)});
        if (!r.nackSent && h.psn - r.expected >= m_oooNackGap)
        {
            r.nackSent = true;
            ++m_nacks;
            SendControl(DltraceRdmaHeader::NACK, h, r.expected, false);
        }
    }
    else if (h.psn > r.expected && !r.nackSent)
    {
        r.nackSent = true;
        ++m_nacks;
        SendControl(DltraceRdmaHeader::NACK, h, r.expected, false);
    }
    else if (h.psn < r.expected && m_outOfOrder)
    {
        // A selective resend that was not needed after all: say again what arrived.
        SendControl(DltraceRdmaHeader::ACK, h, r.expected - 1, true);
    }
}

bool
DltraceRdmaNic::Place(Receiver& r, uint32_t srcHost, uint32_t qpn, const Placed& p)
{
    ++r.expected;
    r.nackSent = false;
    r.messageBytes += p.bytes;
    if (p.last)
    {
        uint64_t bytes = r.messageBytes;
        r.messageBytes = 0;
        if (!m_deliver.IsNull())
        {
            m_deliver(srcHost, qpn, p.msgSeq, bytes);
        }
    }
    return p.last || r.expected % m_ackInterval == 0;
}

void
DltraceRdmaNic::SendControl(uint8_t type, const DltraceRdmaHeader& data, uint32_t psn, bool withInt)
{
    DltraceRdmaHeader c;
    c.type = type;
    c.priority = data.priority;
    c.srcHost = m_host;
    c.dstHost = data.srcHost;
    c.qp = data.qp;
    c.psn = psn;
    c.flowHash = data.flowHash;
    c.tsNs = data.tsNs;
    if (withInt && data.HasFlag(DltraceRdmaHeader::INT_ENABLED))
    {
        c.SetFlag(DltraceRdmaHeader::INT_ENABLED);
        c.nHops = data.nHops;
        c.hops = data.hops;
    }
    Ptr<Packet> p = Create<Packet>();
    p->AddHeader(c);
    m_ports[PortTo(c.dstHost, c.flowHash)].device->EnqueueControl(p);
}

Ptr<DltraceRdmaNetDevice>
DltraceRdmaNic::GetDevice() const
{
    return m_ports.empty() ? nullptr : m_ports[0].device;
}

uint32_t
DltraceRdmaNic::GetPortCount() const
{
    return uint32_t(m_ports.size());
}

uint32_t
DltraceRdmaNic::GetMtu() const
{
    return m_mtu;
}

uint64_t
DltraceRdmaNic::GetCnpsSent() const
{
    return m_cnpsSent;
}

void
DltraceRdmaNic::FastForwardReceiver(uint32_t srcHost, uint32_t qpn, uint64_t bytes)
{
    m_receivers[(uint64_t(srcHost) << 32) | qpn].messageBytes += bytes;
}

uint64_t
DltraceRdmaNic::GetNacksSent() const
{
    return m_nacks;
}

void
DltraceRdmaNic::EnableUet(bool rccc)
{
    m_uet = std::make_unique<DltraceUetReceiver>();
    // RCCC paces pulls at the NIC's network rate: its fastest NIC port, not an NVLink.
    double rate = m_ports.empty() ? 0 : double(m_ports[0].device->GetDataRate().GetBitRate());
    if (m_routing)
    {
        double nicRate = 0;
        for (const auto& [link, port] : m_portOfLink)
        {
            if (link < m_routing->GetGraph().links.size() && !m_routing->GetGraph().links[link].scale_up)
            {
                nicRate = std::max(nicRate, double(m_ports[port].device->GetDataRate().GetBitRate()));
            }
        }
        rate = nicRate > 0 ? nicRate : rate;
    }
    m_uet->Setup(m_host,
                 rate,
                 rccc,
                 MakeBoundCallback(
                     +[](DltraceRdmaNic* nic, Ptr<Packet> p, uint32_t dst) {
                         DltraceRdmaHeader h;
                         h.PeekFrom(*p);
                         nic->m_ports[nic->PortTo(dst, h.flowHash)].device->EnqueueControl(p);
                     },
                     this));
    m_uet->SetDeliverCallback(MakeBoundCallback(
        +[](DltraceRdmaNic* nic, uint32_t src, uint32_t pdc, uint32_t seq, uint64_t bytes) {
            if (!nic->m_deliver.IsNull())
            {
                nic->m_deliver(src, pdc, seq, bytes);
            }
        },
        this));
}

Ptr<DltraceUetPdc>
DltraceRdmaNic::CreateUetPdc(uint32_t dst, uint32_t priority, uint64_t flowHash, const DltraceUetPdc::Fabric& fabric)
{
    Ptr<DltraceUetPdc> pdc = CreateObject<DltraceUetPdc>();
    // A PDC sprays over the paths from its port: the port is the PDC's own hash's.
    Port& port = m_ports.at(PortTo(dst, flowHash));
    port.pdcs.push_back(uint32_t(m_pdcs.size()));
    DltraceUetPdc::Fabric f = fabric;
    f.lineRateBps = double(port.device->GetDataRate().GetBitRate());
    pdc->Setup(uint32_t(m_pdcs.size()), m_host, dst, priority, flowHash, m_mtu, f);
    pdc->SetWakeCallback(MakeCallback(&DltraceRdmaNic::Wake, this));
    m_pdcs.push_back(pdc);
    return pdc;
}

const std::vector<Ptr<DltraceUetPdc>>&
DltraceRdmaNic::GetUetPdcs() const
{
    return m_pdcs;
}

uint64_t
DltraceRdmaNic::GetUetNacksSent() const
{
    return m_uet ? m_uet->GetNacksSent() : 0;
}

Ptr<Packet>
DltraceRdmaNic::PullUet(Port& port)
{
    const uint32_t n = static_cast<uint32_t>(port.pdcs.size());
    for (uint32_t i = 0; i < n; ++i)
    {
        const uint32_t index = (port.pdcRr + i) % n;
        DltraceUetPdc* pdc = PeekPointer(m_pdcs[port.pdcs[index]]);
        if (pdc->HasDataToSend() && pdc->WindowAllows())
        {
            port.pdcRr = (index + 1) % n;
            return pdc->NextPacket();
        }
    }
    return nullptr;
}

void
DltraceRdmaNic::ReceiveUet(Ptr<Packet> packet, const DltraceRdmaHeader& h)
{
    if (h.type == DltraceRdmaHeader::DATA)
    {
        if (!m_uet)
        {
            NS_FATAL_ERROR("DltraceRdmaNic host " << m_host << ": a UET packet, UET not enabled");
        }
        m_uet->Receive(packet, h);
        return;
    }
    if (h.qp >= m_pdcs.size())
    {
        NS_FATAL_ERROR("DltraceRdmaNic host " << m_host << ": feedback for unknown PDC " << h.qp);
    }
    switch (h.type)
    {
    case DltraceRdmaHeader::ACK:
        m_pdcs[h.qp]->OnAck(h);
        break;
    case DltraceRdmaHeader::NACK:
        m_pdcs[h.qp]->OnNack(h);
        break;
    case DltraceRdmaHeader::PULL:
        m_pdcs[h.qp]->OnPull(h.sack);
        break;
    default:
        break;
    }
}

} // namespace ns3
