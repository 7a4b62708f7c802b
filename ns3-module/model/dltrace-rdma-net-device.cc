// SPDX-License-Identifier: GPL-2.0-only
// DltraceRdmaNetDevice: queues, the transmit loop, and both halves of PFC.
#include "dltrace-rdma-net-device.h"

#include "dltrace-attributes.h"
#include "dltrace-canonical-scheduler.h"

#include "dltrace-rdma-channel.h"
#include "dltrace-rdma-header.h"

#include "ns3/enum.h"
#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <sstream>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceRdmaNetDevice");

NS_OBJECT_ENSURE_REGISTERED(DltraceRdmaNetDevice);


TypeId
DltraceRdmaNetDevice::GetTypeId()
{
    static TypeId tid = DltraceTypeId<DltraceRdmaNetDevice, NetDevice>("ns3::DltraceRdmaNetDevice")
            .AddAttribute("DataRate",
                          "Line rate of the port (bit/s).",
                          DataRateValue(DataRate("100Gbps")),
                          MakeDataRateAccessor(&DltraceRdmaNetDevice::m_rate),
                          MakeDataRateChecker())
            .AddUinteger("Mtu",
                         "Largest frame payload (bytes) the port accepts; RoCE MTUs are 256 "
                         "to 4096 (IB spec). Default 1500: Ethernet.",
                         1500, &DltraceRdmaNetDevice::m_mtu, 64)
            .AddTime("PfcResponseTime",
                     "Time from receiving a PFC frame to acting on it (s). Default 1 us: "
                     "802.1Qbb allows a port up to 3840 bit times after the frame plus one "
                     "frame in progress; we round that up at 25-100 Gb/s.",
                     MicroSeconds(1), &DltraceRdmaNetDevice::m_pfcResponseTime, Seconds(0))
            .AddUinteger("PauseQuanta",
                         "Pause time an XOFF frame asks for, in quanta of 512 bit times "
                         "(802.1Qbb); refreshed every half while the pause lasts. Default "
                         "65535, the largest.",
                         65535, &DltraceRdmaNetDevice::m_pauseQuanta, 1)
            .AddAttribute("Scheduler",
                          "How data classes share the port: strict priority (7 first) or "
                          "weighted round robin (deficit round robin with WrrWeights).",
                          EnumValue(STRICT_PRIORITY),
                          MakeEnumAccessor(&DltraceRdmaNetDevice::m_scheduler),
                          MakeEnumChecker(STRICT_PRIORITY,
                                          "strict",
                                          WEIGHTED_ROUND_ROBIN,
                                          "wrr"))
            .AddAttribute("WrrWeights",
                          "Weights of classes 0..7 for weighted round robin, comma-separated "
                          "(missing ones 1); each round gives a class Weight x Mtu bytes.",
                          StringValue("1,1,1,1,1,1,1,1"),
                          MakeStringAccessor(&DltraceRdmaNetDevice::SetWrrWeights,
                                             &DltraceRdmaNetDevice::GetWrrWeights),
                          MakeStringChecker())
            .AddTraceSource("PhyTxEnd",
                            "A frame's last bit left the port.",
                            &DltraceRdmaNetDevice::m_phyTxEndTrace, "ns3::Packet::TracedCallback")
            .AddTraceSource("MacTxDrop",
                            "The switch dropped a packet bound for this port.",
                            &DltraceRdmaNetDevice::m_macTxDropTrace, "ns3::Packet::TracedCallback")
            .AddTraceSource("PfcTx",
                            "The port sent a PFC frame: priority, true for XOFF.",
                            &DltraceRdmaNetDevice::m_pfcTxTrace, "ns3::DltraceRdmaNetDevice::PfcTracedCallback");
    return tid;
}

DltraceRdmaNetDevice::DltraceRdmaNetDevice()
    : m_ifIndex(0),
      m_address(Mac48Address::Allocate()),
      m_txBusy(false),
      m_totalQueueBytes(0),
      m_peakQueueBytes(0),
      m_drrIndex(0),
      m_txBytes(0),
      m_controlTxBytes(0),
      m_creditedTxBytes(0),
      m_drops(0),
      m_held(false)
{
    m_classTxBytes.fill(0);
    m_queueBytes.fill(0);
    m_deficit.fill(0);
    m_xoffSent.fill(false);
    m_paused.fill(false);
}

DltraceRdmaNetDevice::~DltraceRdmaNetDevice() = default;

void
DltraceRdmaNetDevice::DoDispose()
{
    m_node = nullptr;
    m_channel = nullptr;
    m_control.clear();
    for (auto& q : m_queues)
    {
        q.clear();
    }
    m_pull = PullCallback();
    m_dequeue = DequeueCallback();
    m_rdmaRx = RdmaReceiveCallback();
    m_heldFrames.clear();
    m_heldTx = nullptr;
    m_heldDisturbed = Callback<void, Ptr<DltraceRdmaNetDevice>>();
    NetDevice::DoDispose();
}

bool
DltraceRdmaNetDevice::Attach(Ptr<DltraceRdmaChannel> channel)
{
    m_channel = channel;
    channel->Attach(this);
    return true;
}

// Parses "w0,w1,...,w7" (fewer: the rest 1) into WEIGHTS; false on a bad list.
bool
DltraceRdmaNetDevice::ParseWeights(const std::string& text, std::array<uint32_t, kClasses>* weights)
{
    std::array<uint32_t, DltraceRdmaNetDevice::kClasses> w;
    w.fill(1);
    std::stringstream in(text);
    std::string item;
    uint32_t i = 0;
    while (std::getline(in, item, ','))
    {
        if (i >= w.size())
        {
            return false;
        }
        char* end = nullptr;
        unsigned long v = std::strtoul(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || v == 0 || v > 1000)
        {
            return false;
        }
        w[i++] = static_cast<uint32_t>(v);
    }
    *weights = w;
    return true;
}

void
DltraceRdmaNetDevice::SetWrrWeights(std::string text)
{
    if (!ParseWeights(text, &m_weights))
    {
        NS_FATAL_ERROR("DltraceRdmaNetDevice: WrrWeights '"
                       << text << "' is not up to 8 comma-separated weights 1..1000");
    }
}

std::string
DltraceRdmaNetDevice::GetWrrWeights() const
{
    std::string s;
    for (uint32_t w : m_weights)
    {
        s += (s.empty() ? "" : ",") + std::to_string(w);
    }
    return s;
}

DataRate
DltraceRdmaNetDevice::GetDataRate() const
{
    return m_rate;
}

void
DltraceRdmaNetDevice::EnqueueData(Ptr<Packet> packet, uint32_t priority, uint32_t inPort)
{
    NS_ASSERT(priority < kClasses);
    Disturb();
    uint32_t size = packet->GetSize();
    m_queues[priority].push_back(Entry{packet, inPort});
    m_queueBytes[priority] += size;
    m_totalQueueBytes += size;
    m_peakQueueBytes = std::max(m_peakQueueBytes, m_totalQueueBytes);
    TriggerTransmit();
}

Ptr<Packet>
DltraceRdmaNetDevice::RemoveLastData(uint32_t priority, uint32_t* inPort)
{
    NS_ASSERT(priority < kClasses);
    if (m_queues[priority].empty())
    {
        return nullptr;
    }
    Entry e = m_queues[priority].back();
    m_queues[priority].pop_back();
    const uint32_t size = e.packet->GetSize();
    m_queueBytes[priority] -= size;
    m_totalQueueBytes -= size;
    *inPort = e.inPort;
    return e.packet;
}

void
DltraceRdmaNetDevice::EnqueueControl(Ptr<Packet> packet)
{
    Disturb();
    m_control.push_back(packet);
    TriggerTransmit();
}

void
DltraceRdmaNetDevice::NotifyDrop(Ptr<const Packet> packet)
{
    ++m_drops;
    m_macTxDropTrace(packet);
}

void
DltraceRdmaNetDevice::SetPullCallback(PullCallback cb)
{
    m_pull = cb;
}

void
DltraceRdmaNetDevice::SetDequeueCallback(DequeueCallback cb)
{
    m_dequeue = cb;
}

void
DltraceRdmaNetDevice::SetRdmaReceiveCallback(RdmaReceiveCallback cb)
{
    m_rdmaRx = cb;
}

Ptr<Packet>
DltraceRdmaNetDevice::DequeueData()
{
    int chosen = -1;
    if (m_scheduler == STRICT_PRIORITY)
    {
        for (int c = kClasses - 1; c >= 0; --c)
        {
            if (!m_paused[c] && !m_queues[c].empty())
            {
                chosen = c;
                break;
            }
        }
    }
    else
    {
        // Deficit round robin: a class keeps the port while its deficit
        // covers its head packet; each visit adds Weight x Mtu frame.
        const int64_t quantum = m_mtu + DltraceRdmaHeader::kRoceOverhead;
        for (uint32_t n = 0; n < 3 * kClasses && chosen < 0; ++n)
        {
            uint32_t c = m_drrIndex;
            if (m_queues[c].empty())
            {
                m_deficit[c] = 0;
            }
            else if (!m_paused[c])
            {
                int64_t head = m_queues[c].front().packet->GetSize();
                if (m_deficit[c] < head)
                {
                    m_deficit[c] += quantum * m_weights[c];
                }
                if (m_deficit[c] >= head)
                {
                    m_deficit[c] -= head;
                    chosen = static_cast<int>(c);
                    break;
                }
            }
            m_drrIndex = (c + 1) % kClasses;
        }
    }
    if (chosen < 0)
    {
        return nullptr;
    }
    Entry e = m_queues[chosen].front();
    m_queues[chosen].pop_front();
    uint32_t size = e.packet->GetSize();
    m_queueBytes[chosen] -= size;
    m_totalQueueBytes -= size;
    m_classTxBytes[chosen] += size;
    if (!m_dequeue.IsNull())
    {
        m_dequeue(e.packet, static_cast<uint32_t>(chosen), e.inPort);
    }
    return e.packet;
}

void
DltraceRdmaNetDevice::TriggerTransmit()
{
    if (m_txBusy || !m_channel || m_held)
    {
        return;
    }
    Ptr<Packet> p;
    if (!m_control.empty())
    {
        p = m_control.front();
        m_control.pop_front();
        m_controlTxBytes += p->GetSize();
    }
    else
    {
        p = DequeueData();
        if (!p && !m_pull.IsNull())
        {
            p = m_pull();
        }
    }
    if (p)
    {
        TransmitStart(p);
    }
}

void
DltraceRdmaNetDevice::TransmitStart(Ptr<Packet> packet)
{
    m_txBusy = true;
    m_txHeldTime = m_heldTime;
    Time txTime = m_txTimes.Get(m_rate.GetBitRate(), packet->GetSize());
    m_txBytes += packet->GetSize();
    // Completion first: at equal times it runs before the peer's reception.
    Simulator::Schedule(txTime, &DltraceRdmaNetDevice::TransmitComplete, this, packet);
    m_channel->Transmit(packet, this, txTime);
}

void
DltraceRdmaNetDevice::TransmitComplete(Ptr<Packet> packet)
{
    if (m_held)
    {
        m_heldTx = packet;
        m_heldTxOffset = Simulator::Now() - m_heldAt;
        return;
    }
    if (m_heldTime != m_txHeldTime)
    {
        // A hold began during this transmission and ended before it would have: it ends as much later.
        const Time late = m_heldTime - m_txHeldTime;
        m_txHeldTime = m_heldTime;
        Simulator::Schedule(late, &DltraceRdmaNetDevice::TransmitComplete, this, packet);
        return;
    }
    m_txBusy = false;
    m_phyTxEndTrace(packet);
    TriggerTransmit();
}

Time
DltraceRdmaNetDevice::QuantaTime(uint16_t quanta) const
{
    return m_rate.CalculateBytesTxTime(uint64_t(quanta) * 512 / 8);
}

void
DltraceRdmaNetDevice::SendPfcFrame(uint32_t priority, uint16_t quanta)
{
    Disturb();
    DltraceRdmaHeader h;
    h.type = DltraceRdmaHeader::PFC;
    h.priority = static_cast<uint8_t>(priority);
    h.msgSeq = quanta;
    Ptr<Packet> p = Create<Packet>();
    p->AddHeader(h);
    // PFC frames go ahead of everything queued, behind only the frame on the wire.
    m_control.push_front(p);
    if (quanta > 0)
    {
        ++m_pfc[priority].pausesSent;
    }
    else
    {
        ++m_pfc[priority].resumesSent;
    }
    m_pfcTxTrace(priority, quanta > 0);
    TriggerTransmit();
}

void
DltraceRdmaNetDevice::SendPause(uint32_t priority)
{
    NS_ASSERT(priority < kClasses);
    if (m_xoffSent[priority])
    {
        return;
    }
    m_xoffSent[priority] = true;
    RefreshPause(priority);
}

void
DltraceRdmaNetDevice::RefreshPause(uint32_t priority)
{
    if (!m_xoffSent[priority])
    {
        return;
    }
    SendPfcFrame(priority, m_pauseQuanta);
    m_refreshEvent[priority] = Simulator::Schedule(QuantaTime(m_pauseQuanta) / 2,
                                                   &DltraceRdmaNetDevice::RefreshPause,
                                                   this,
                                                   priority);
}

void
DltraceRdmaNetDevice::SendResume(uint32_t priority)
{
    NS_ASSERT(priority < kClasses);
    if (!m_xoffSent[priority])
    {
        return;
    }
    m_xoffSent[priority] = false;
    m_refreshEvent[priority].Cancel();
    SendPfcFrame(priority, 0);
}

bool
DltraceRdmaNetDevice::IsPaused(uint32_t priority) const
{
    return m_paused[priority];
}

void
DltraceRdmaNetDevice::Receive(Ptr<Packet> packet)
{
    DltraceRdmaHeader h;
    h.PeekFrom(*packet);
    if (h.type == DltraceRdmaHeader::PFC)
    {
        Disturb();
        uint32_t priority = h.priority % kClasses;
        uint16_t quanta = static_cast<uint16_t>(h.msgSeq);
        if (quanta > 0)
        {
            ++m_pfc[priority].pausesReceived;
        }
        else
        {
            ++m_pfc[priority].resumesReceived;
        }
        Simulator::Schedule(m_pfcResponseTime,
                            &DltraceRdmaNetDevice::ApplyPfc,
                            this,
                            priority,
                            quanta);
        return;
    }
    if (!m_rdmaRx.IsNull())
    {
        m_rdmaRx(this, packet);
    }
}

void
DltraceRdmaNetDevice::ApplyPfc(uint32_t priority, uint16_t quanta)
{
    m_expiryEvent[priority].Cancel();
    if (quanta > 0)
    {
        if (!m_paused[priority])
        {
            m_paused[priority] = true;
            m_pausedSince[priority] = Simulator::Now();
        }
        m_expiryEvent[priority] = Simulator::Schedule(QuantaTime(quanta),
                                                      &DltraceRdmaNetDevice::PauseExpired,
                                                      this,
                                                      priority);
        return;
    }
    PauseExpired(priority);
}

void
DltraceRdmaNetDevice::PauseExpired(uint32_t priority)
{
    if (m_paused[priority])
    {
        m_paused[priority] = false;
        m_pfc[priority].pausedTime += Simulator::Now() - m_pausedSince[priority];
    }
    TriggerTransmit();
}

uint64_t
DltraceRdmaNetDevice::GetQueueBytes(uint32_t priority) const
{
    return m_queueBytes[priority];
}

uint64_t
DltraceRdmaNetDevice::GetQueueBytes() const
{
    return m_totalQueueBytes;
}

uint64_t
DltraceRdmaNetDevice::GetPeakQueueBytes() const
{
    return m_peakQueueBytes;
}

uint64_t
DltraceRdmaNetDevice::GetTxBytes() const
{
    return m_txBytes;
}

uint64_t
DltraceRdmaNetDevice::GetQueueBytesFrom(uint32_t priority) const
{
    if (m_scheduler != STRICT_PRIORITY)
    {
        return m_totalQueueBytes;
    }
    uint64_t bytes = 0;
    for (uint32_t c = priority; c < kClasses; ++c)
    {
        bytes += m_queueBytes[c];
    }
    return bytes;
}

void
DltraceRdmaNetDevice::Hold()
{
    NS_ASSERT(!m_held);
    m_held = true;
    m_heldAt = Simulator::Now();
}

void
DltraceRdmaNetDevice::Release()
{
    NS_ASSERT(m_held);
    m_held = false;
    m_heldTime += Simulator::Now() - m_heldAt;
    for (auto& f : m_heldFrames)
    {
        DltraceFrameArrival::Schedule(f.to, f.frame, f.offset, this);
    }
    m_heldFrames.clear();
    if (m_heldTx)
    {
        m_txHeldTime = m_heldTime;
        Simulator::Schedule(m_heldTxOffset, &DltraceRdmaNetDevice::TransmitComplete, this, m_heldTx);
        m_heldTx = nullptr;
    }
    TriggerTransmit();
}

bool
DltraceRdmaNetDevice::IsHeld() const
{
    return m_held;
}

Time
DltraceRdmaNetDevice::GetHeldTime() const
{
    return m_heldTime;
}

void
DltraceRdmaNetDevice::HoldArrival(Ptr<DltraceRdmaNetDevice> to, Ptr<Packet> frame)
{
    m_heldFrames.push_back({to, frame, Simulator::Now() - m_heldAt});
}

void
DltraceRdmaNetDevice::CreditTxBytes(uint64_t bytes)
{
    m_txBytes += bytes;
    m_creditedTxBytes += bytes;
}

void
DltraceRdmaNetDevice::SetHeldDisturbedCallback(Callback<void, Ptr<DltraceRdmaNetDevice>> cb)
{
    m_heldDisturbed = cb;
}

void
DltraceRdmaNetDevice::Disturb()
{
    if (m_held && !m_heldDisturbed.IsNull())
    {
        m_heldDisturbed(this);
    }
}

uint64_t
DltraceRdmaNetDevice::GetTxBytesFrom(uint32_t priority) const
{
    if (m_scheduler != STRICT_PRIORITY)
    {
        return m_txBytes;
    }
    // (a hold's credit counts in every class: a steady set's traffic is in one)
    uint64_t bytes = m_controlTxBytes + m_creditedTxBytes;
    for (uint32_t c = priority; c < kClasses; ++c)
    {
        bytes += m_classTxBytes[c];
    }
    return bytes;
}

uint64_t
DltraceRdmaNetDevice::GetDrops() const
{
    return m_drops;
}

DltraceRdmaNetDevice::PfcCounters
DltraceRdmaNetDevice::GetPfcCounters(uint32_t priority) const
{
    PfcCounters c = m_pfc[priority];
    if (m_paused[priority])
    {
        c.pausedTime += Simulator::Now() - m_pausedSince[priority];
    }
    return c;
}

// NetDevice: the fabric addresses hosts by number, not by MAC or IP; these
// exist so the device can live in a Node and in NetDeviceContainers.

void
DltraceRdmaNetDevice::SetIfIndex(const uint32_t index)
{
    m_ifIndex = index;
}

uint32_t
DltraceRdmaNetDevice::GetIfIndex() const
{
    return m_ifIndex;
}

Ptr<Channel>
DltraceRdmaNetDevice::GetChannel() const
{
    return m_channel;
}

void
DltraceRdmaNetDevice::SetAddress(Address address)
{
    m_address = Mac48Address::ConvertFrom(address);
}

Address
DltraceRdmaNetDevice::GetAddress() const
{
    return m_address;
}

bool
DltraceRdmaNetDevice::SetMtu(const uint16_t mtu)
{
    m_mtu = mtu;
    return true;
}

uint16_t
DltraceRdmaNetDevice::GetMtu() const
{
    return m_mtu;
}

bool
DltraceRdmaNetDevice::IsLinkUp() const
{
    return m_channel != nullptr;
}

void
DltraceRdmaNetDevice::AddLinkChangeCallback(Callback<void> /*callback*/)
{
}

bool
DltraceRdmaNetDevice::IsBroadcast() const
{
    return false;
}

Address
DltraceRdmaNetDevice::GetBroadcast() const
{
    return Mac48Address::GetBroadcast();
}

bool
DltraceRdmaNetDevice::IsMulticast() const
{
    return false;
}

Address
DltraceRdmaNetDevice::GetMulticast(Ipv4Address /*multicastGroup*/) const
{
    return Mac48Address::GetMulticast(Ipv4Address());
}

Address
DltraceRdmaNetDevice::GetMulticast(Ipv6Address addr) const
{
    return Mac48Address::GetMulticast(addr);
}

bool
DltraceRdmaNetDevice::IsBridge() const
{
    return false;
}

bool
DltraceRdmaNetDevice::IsPointToPoint() const
{
    return true;
}

bool
DltraceRdmaNetDevice::Send(Ptr<Packet> /*packet*/, const Address& /*dest*/, uint16_t /*protocol*/)
{
    NS_FATAL_ERROR("DltraceRdmaNetDevice carries RDMA frames only; IP packets cannot be sent on it");
    return false;
}

bool
DltraceRdmaNetDevice::SendFrom(Ptr<Packet> packet,
                               const Address& /*source*/,
                               const Address& dest,
                               uint16_t protocolNumber)
{
    return Send(packet, dest, protocolNumber);
}

Ptr<Node>
DltraceRdmaNetDevice::GetNode() const
{
    return m_node;
}

void
DltraceRdmaNetDevice::SetNode(Ptr<Node> node)
{
    m_node = node;
}

bool
DltraceRdmaNetDevice::NeedsArp() const
{
    return false;
}

void
DltraceRdmaNetDevice::SetReceiveCallback(NetDevice::ReceiveCallback cb)
{
    m_rxCallback = cb;
}

void
DltraceRdmaNetDevice::SetPromiscReceiveCallback(PromiscReceiveCallback /*cb*/)
{
}

bool
DltraceRdmaNetDevice::SupportsSendFrom() const
{
    return false;
}

} // namespace ns3
