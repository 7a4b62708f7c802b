// SPDX-License-Identifier: GPL-2.0-only
// DltraceRdmaQueuePair: segmentation, pacing, cumulative ACKs and go-back-N
// (or selective repeat towards a receiver that places out of order).
#include "dltrace-rdma-queue-pair.h"

#include "dltrace-attributes.h"

#include "ns3/data-rate.h"
#include "ns3/log.h"
#include "ns3/simulator.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceRdmaQueuePair");

NS_OBJECT_ENSURE_REGISTERED(DltraceRdmaQueuePair);

TypeId
DltraceRdmaQueuePair::GetTypeId()
{
    static TypeId tid = DltraceTypeId<DltraceRdmaQueuePair, Object>("ns3::DltraceRdmaQueuePair")
            .AddTime("RetransmitTimeout",
                     "Go back N when no ACK advances for this long while packets are "
                     "outstanding (s). Default 1 ms: far above a lossless fabric's RTT, "
                     "short enough that lossy RoCE recovers a lost tail quickly.",
                     MilliSeconds(1), &DltraceRdmaQueuePair::m_rto, MicroSeconds(1));
    return tid;
}

DltraceRdmaQueuePair::DltraceRdmaQueuePair()
    : m_qpn(0),
      m_src(0),
      m_dst(0),
      m_priority(0),
      m_flowHash(0),
      m_mtu(1024),
      m_nextMsgSeq(0),
      m_endPsn(0),
      m_nextPsn(0),
      m_unaPsn(0),
      m_highPsn(0),
      m_inflightBytes(0),
      m_bytesAcked(0),
      m_retransmitted(0),
      m_timeouts(0),
      m_skipped(0)
{
}

void
DltraceRdmaQueuePair::DoDispose()
{
    m_rtoEvent.Cancel();
    if (m_cc)
    {
        m_cc->SetActive(false);
        m_cc->Dispose();
    }
    m_cc = nullptr;
    m_acked = MessageAckedCallback();
    m_wake = Callback<void>();
    Object::DoDispose();
}

void
DltraceRdmaQueuePair::Setup(uint32_t qpn,
                            uint32_t srcHost,
                            uint32_t dstHost,
                            uint32_t priority,
                            uint64_t flowHash,
                            uint32_t mtu,
                            Ptr<DltraceRdmaCongestionControl> cc,
                            double lineRateBps,
                            Time baseRtt)
{
    m_qpn = qpn;
    m_src = srcHost;
    m_dst = dstHost;
    m_priority = priority;
    m_flowHash = flowHash;
    m_mtu = mtu;
    m_cc = cc;
    m_cc->Start(lineRateBps, baseRtt, mtu + DltraceRdmaHeader::kRoceOverhead);
    m_cc->SetRateIncreaseCallback(MakeCallback(&DltraceRdmaQueuePair::UpdateActive, this));
}

void
DltraceRdmaQueuePair::SetMessageAckedCallback(MessageAckedCallback cb)
{
    m_acked = cb;
}

void
DltraceRdmaQueuePair::SetWakeCallback(Callback<void> cb)
{
    m_wake = cb;
}

uint32_t
DltraceRdmaQueuePair::PostSend(uint64_t bytes)
{
    NS_ASSERT(bytes > 0);
    Message m;
    m.seq = m_nextMsgSeq++;
    m.firstPsn = m_endPsn;
    m.packets = static_cast<uint32_t>((bytes + m_mtu - 1) / m_mtu);
    m.bytes = bytes;
    m.skipped = 0;
    m_messages.push_back(m);
    m_endPsn += m.packets;
    UpdateActive();
    return m.seq;
}

void
DltraceRdmaQueuePair::UpdateActive()
{
    m_cc->SetActive(m_unaPsn < m_endPsn);
    if (!m_wake.IsNull() && HasDataToSend())
    {
        m_wake();
    }
}

void
DltraceRdmaQueuePair::SetSelectiveRepeat(bool selective)
{
    m_selective = selective;
}

bool
DltraceRdmaQueuePair::HasDataToSend() const
{
    return m_nextPsn < m_endPsn || !m_resend.empty();
}

bool
DltraceRdmaQueuePair::WindowAllows() const
{
    if (!m_resend.empty())
    {
        return true; // a selective resend is already counted in flight
    }
    uint64_t window = m_cc->GetWindow();
    uint64_t inflight = uint64_t(m_nextPsn - m_unaPsn) * (m_mtu + DltraceRdmaHeader::kRoceOverhead);
    return window == 0 || inflight < window;
}

Time
DltraceRdmaQueuePair::GetNextSendTime() const
{
    return m_nextSend;
}

uint32_t
DltraceRdmaQueuePair::PayloadOf(uint32_t psn, bool* last, uint32_t* msgSeq) const
{
    // The message holding PSN: the last one whose first PSN is not above it.
    auto it = std::upper_bound(m_messages.begin(),
                               m_messages.end(),
                               psn,
                               [](uint32_t p, const Message& m) { return p < m.firstPsn; });
    NS_ASSERT(it != m_messages.begin());
    const Message& m = *(it - 1);
    uint32_t index = psn - m.firstPsn;
    *msgSeq = m.seq;
    *last = index + 1 == m.packets;
    return *last ? static_cast<uint32_t>(m.bytes - uint64_t(index + m.skipped) * m_mtu) : m_mtu;
}

Ptr<Packet>
DltraceRdmaQueuePair::NextPacket()
{
    bool last = false;
    uint32_t msgSeq = 0;
    const bool resend = !m_resend.empty(); // selective repeat: what a NACK named goes first
    const uint32_t psn = resend ? m_resend.front() : m_nextPsn;
    uint32_t payload = PayloadOf(psn, &last, &msgSeq);
    Ptr<Packet> p = Create<Packet>(payload);
    DltraceRdmaHeader h;
    h.type = DltraceRdmaHeader::DATA;
    h.priority = static_cast<uint8_t>(m_priority);
    if (last)
    {
        h.SetFlag(DltraceRdmaHeader::LAST);
    }
    if (m_cc->NeedsInt())
    {
        h.SetFlag(DltraceRdmaHeader::INT_ENABLED);
    }
    h.srcHost = m_src;
    h.dstHost = m_dst;
    h.qp = m_qpn;
    h.psn = psn;
    h.flowHash = m_flowHash;
    h.msgSeq = msgSeq;
    h.tsNs = Simulator::Now().GetNanoSeconds();
    p->AddHeader(h);
    if (resend)
    {
        m_resend.pop_front();
        ++m_retransmitted;
    }
    else
    {
        if (m_nextPsn < m_highPsn)
        {
            ++m_retransmitted;
        }
        ++m_nextPsn;
        if (m_nextPsn > m_highPsn)
        {
            m_highPsn = m_nextPsn;
            m_lastSend = Simulator::Now();
        }
    }
    m_nextSend = Simulator::Now() + m_txTimes.Get(static_cast<uint64_t>(m_cc->GetRate()), p->GetSize());
    m_cc->OnSend(p->GetSize());
    if (!m_rtoEvent.IsRunning())
    {
        RestartTimer();
    }
    return p;
}

void
DltraceRdmaQueuePair::Acknowledge(uint32_t ackedPsn, Time echoedTs, const DltraceRdmaHeader* header)
{
    if (ackedPsn + 1 <= m_unaPsn)
    {
        return; // stale
    }
    uint32_t newPackets = ackedPsn + 1 - m_unaPsn;
    m_unaPsn = ackedPsn + 1;
    if (m_nextPsn < m_unaPsn)
    {
        m_nextPsn = m_unaPsn;
    }
    while (!m_resend.empty() && m_resend.front() < m_unaPsn)
    {
        m_resend.pop_front();
    }
    while (!m_messages.empty() &&
           m_messages.front().firstPsn + m_messages.front().packets <= m_unaPsn)
    {
        Message m = m_messages.front();
        m_messages.pop_front();
        m_bytesAcked += m.bytes;
        if (!m_acked.IsNull())
        {
            m_acked(m.seq, m.bytes);
        }
    }
    DltraceRdmaAckInfo info;
    info.ackedPsn = ackedPsn;
    info.nextPsn = m_nextPsn;
    info.newBytes = uint64_t(newPackets) * m_mtu;
    info.rtt = Simulator::Now() - echoedTs;
    if (echoedTs < m_heldAt)
    {
        info.rtt -= m_heldFor; // sent before a hold (and acknowledged after it)
    }
    info.header = header;
    m_cc->OnAck(info);
    if (m_unaPsn < m_highPsn)
    {
        RestartTimer();
    }
    else
    {
        m_rtoEvent.Cancel();
    }
    UpdateActive();
}

void
DltraceRdmaQueuePair::OnAck(const DltraceRdmaHeader& ack)
{
    Acknowledge(ack.psn, NanoSeconds(ack.tsNs), &ack);
}

void
DltraceRdmaQueuePair::OnNack(const DltraceRdmaHeader& nack)
{
    // The receiver expects PSN nack.psn: everything before it arrived.
    if (nack.psn > m_unaPsn)
    {
        Acknowledge(nack.psn - 1, NanoSeconds(nack.tsNs), &nack);
    }
    if (m_selective)
    {
        // The receiver holds what came after: resend the missing PSN alone.
        Resend(nack.psn);
    }
    else if (m_nextPsn > nack.psn && nack.psn >= m_unaPsn)
    {
        m_nextPsn = nack.psn;
    }
    UpdateActive();
}

void
DltraceRdmaQueuePair::Resend(uint32_t psn)
{
    if (psn >= m_unaPsn && psn < m_highPsn && std::find(m_resend.begin(), m_resend.end(), psn) == m_resend.end())
    {
        m_resend.push_back(psn);
    }
}

void
DltraceRdmaQueuePair::OnCnp()
{
    m_cc->OnCnp();
}

void
DltraceRdmaQueuePair::RestartTimer()
{
    // The deadline moves with every ACK; one event waits for it (and waits
    // again when it comes early). An event cancelled and queued anew per ACK
    // left a millisecond of dead events in ns-3's queue: at 100 Gbit/s
    // thousands a QP, and a fifth of a run's time spent sorting them.
    m_rtoDeadline = Simulator::Now() + m_rto;
    if (!m_rtoEvent.IsRunning())
    {
        m_rtoEvent = Simulator::Schedule(m_rto, &DltraceRdmaQueuePair::Timeout, this);
    }
}

void
DltraceRdmaQueuePair::Timeout()
{
    if (Simulator::Now() < m_rtoDeadline)
    {
        m_rtoEvent = Simulator::Schedule(m_rtoDeadline - Simulator::Now(), &DltraceRdmaQueuePair::Timeout, this);
        return;
    }
    if (m_unaPsn >= m_highPsn)
    {
        return;
    }
    ++m_timeouts;
    if (m_selective)
    {
        Resend(m_unaPsn);
    }
    else
    {
        m_nextPsn = m_unaPsn;
    }
    RestartTimer();
    UpdateActive();
}

uint32_t
DltraceRdmaQueuePair::GetQpn() const
{
    return m_qpn;
}

uint32_t
DltraceRdmaQueuePair::GetSrcHost() const
{
    return m_src;
}

uint32_t
DltraceRdmaQueuePair::GetDstHost() const
{
    return m_dst;
}

uint32_t
DltraceRdmaQueuePair::GetPriority() const
{
    return m_priority;
}

Ptr<DltraceRdmaCongestionControl>
DltraceRdmaQueuePair::GetCongestionControl() const
{
    return m_cc;
}

uint64_t
DltraceRdmaQueuePair::GetBytesAcked() const
{
    return m_bytesAcked;
}

uint32_t
DltraceRdmaQueuePair::GetAckedPackets() const
{
    return m_unaPsn + static_cast<uint32_t>(m_skipped);
}

bool
DltraceRdmaQueuePair::IsActive() const
{
    return m_unaPsn < m_endPsn;
}

uint32_t
DltraceRdmaQueuePair::GetPacketsInFlight() const
{
    return m_nextPsn - m_unaPsn;
}

uint32_t
DltraceRdmaQueuePair::GetSkippablePackets() const
{
    if (m_messages.empty() || m_nextPsn < m_highPsn || !m_resend.empty())
    {
        return 0;
    }
    const Message& m = m_messages.front(); // holds snd_una
    const uint32_t last = m.firstPsn + m.packets - 1;
    return m_nextPsn < last ? last - m_nextPsn : 0;
}

void
DltraceRdmaQueuePair::FastForward(uint32_t packets, Time skipped)
{
    if (packets == 0)
    {
        return;
    }
    NS_ASSERT(packets <= GetSkippablePackets());
    m_messages.front().packets -= packets;
    m_messages.front().skipped += packets;
    for (size_t i = 1; i < m_messages.size(); ++i)
    {
        m_messages[i].firstPsn -= packets;
    }
    m_endPsn -= packets;
    m_skipped += packets;
    m_cc->FastForward(skipped, uint64_t(packets) * (m_mtu + DltraceRdmaHeader::kRoceOverhead));
}

uint64_t
DltraceRdmaQueuePair::GetSentPackets() const
{
    return m_highPsn + m_skipped;
}

uint64_t
DltraceRdmaQueuePair::GetSkippedPackets() const
{
    return m_skipped;
}

Time
DltraceRdmaQueuePair::GetLastSendTime() const
{
    return m_lastSend;
}

uint32_t
DltraceRdmaQueuePair::GetPostedMessages() const
{
    return m_nextMsgSeq;
}

uint32_t
DltraceRdmaQueuePair::GetOpenMessages() const
{
    return uint32_t(m_messages.size());
}

uint64_t
DltraceRdmaQueuePair::GetFlowHash() const
{
    return m_flowHash;
}

void
DltraceRdmaQueuePair::Hold()
{
    m_rtoEvent.Cancel();
    m_heldAt = Simulator::Now();
    m_heldFor = Time();
}

void
DltraceRdmaQueuePair::Release(Time held)
{
    m_heldFor = held;
    m_nextSend += held;
    m_lastSend += held;
    if (m_unaPsn < m_highPsn)
    {
        RestartTimer();
    }
}

uint64_t
DltraceRdmaQueuePair::GetRetransmittedPackets() const
{
    return m_retransmitted;
}

uint64_t
DltraceRdmaQueuePair::GetTimeouts() const
{
    return m_timeouts;
}

uint64_t
DltraceRdmaQueuePair::GetCnps() const
{
    return m_cc->GetCnpCount();
}

} // namespace ns3
