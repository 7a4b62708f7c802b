// SPDX-License-Identifier: GPL-2.0-only
// UET: load balancers, NSCC, the PDC sender and the receiver, after uet-htsim's
// uec.cpp and uec_mp.cpp (constants and rules; the code is our own).
#include "dltrace-uet-pdc.h"

#include "dltrace-attributes.h"

#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceUetPdc");
NS_OBJECT_ENSURE_REGISTERED(DltraceUetPdc);

// ---------------------------------------------------------------- load balancers

bool
DltraceUetLoadBalancer::Parse(const std::string& name, Kind* kind)
{
    static const std::map<std::string, Kind> kinds = {{"oblivious", OBLIVIOUS},
                                                      {"bitmap", BITMAP},
                                                      {"reps", REPS},
                                                      {"mixed", MIXED}};
    auto it = kinds.find(name);
    if (it == kinds.end())
    {
        return false;
    }
    *kind = it->second;
    return true;
}

std::string
DltraceUetLoadBalancer::Names()
{
    return "oblivious, bitmap, reps, mixed";
}

DltraceUetLoadBalancer::DltraceUetLoadBalancer(Kind kind, uint32_t entropies, Ptr<UniformRandomVariable> rng)
    : m_kind(kind),
      m_entropies(entropies),
      m_rng(rng),
      m_penalty(entropies, 0)
{
    m_xor = Random(m_entropies);
}

uint32_t
DltraceUetLoadBalancer::Random(uint32_t n)
{
    return m_rng->GetInteger(0, n - 1);
}

uint32_t
DltraceUetLoadBalancer::NextRoundRobin(bool skipPenalised)
{
    auto advance = [this]() {
        if (++m_index == m_entropies)
        {
            m_index = 0;
            m_xor = Random(m_entropies);
        }
    };
    // uet-htsim XORs the index with a fresh random value each round (N a power
    // of two); for other N a random rotation keeps each round a permutation.
    const bool pow2 = (m_entropies & (m_entropies - 1)) == 0;
    auto value = [this, pow2]() { return pow2 ? (m_index ^ m_xor) : (m_index + m_xor) % m_entropies; };
    uint32_t e = value();
    if (skipPenalised)
    {
        bool forgiven = false;
        for (uint32_t tries = 0; m_penalty[e] > 0 && tries <= m_entropies; ++tries)
        {
            if (!forgiven)
            {
                --m_penalty[e]; // one point forgiven per pass over a penalised value
                forgiven = true;
            }
            advance();
            e = value();
        }
    }
    advance();
    return e;
}

uint32_t
DltraceUetLoadBalancer::Next()
{
    if ((m_kind == REPS || m_kind == MIXED) && !m_clean.empty())
    {
        uint32_t e = m_clean.front();
        m_clean.pop_front();
        return e;
    }
    switch (m_kind)
    {
    case OBLIVIOUS:
        return NextRoundRobin(false);
    case REPS:
        return Random(m_entropies);
    default:
        return NextRoundRobin(true);
    }
}

void
DltraceUetLoadBalancer::OnFeedback(uint32_t entropy, Feedback feedback)
{
    entropy %= m_entropies;
    if ((m_kind == REPS || m_kind == MIXED) && feedback == GOOD && m_clean.size() < 4 * m_entropies)
    {
        m_clean.push_back(entropy);
    }
    if (m_kind == BITMAP || m_kind == MIXED)
    {
        static const uint8_t kPenalty[] = {0, 1, 4, 15};
        m_penalty[entropy] = std::min<uint32_t>(15, m_penalty[entropy] + kPenalty[feedback]);
    }
}

// ---------------------------------------------------------------- NSCC

namespace
{
constexpr double kPsPerUs = 1e6;
} // namespace

void
DltraceUetNscc::Init(const Params& p, double baseRttPs, uint64_t initialCwnd)
{
    m_p = p;
    // uet-htsim's initNsccParams: the reference network is 100 Gb/s with a 12 us RTT.
    const double referenceBdp = 12e-6 * 100e9 / 8;
    const double networkBdp = p.networkRttPs * 1e-12 * p.rateBps / 8;
    m_target = p.targetDelayPs > 0 ? p.targetDelayPs : (p.trimming ? 0.75 : 1.0) * p.networkRttPs;
    m_qaThreshold = 4 * m_target;
    const double a = networkBdp / referenceBdp;
    const double b = m_target / (12 * kPsPerUs);
    m_alpha = 4.0 * p.mss * a * b / m_target;
    m_fi = 5.0 * p.mss * a;
    m_eta = 0.15 * p.mss * a;
    m_fiScale = 0.25 * a;
    m_adjustPeriod = p.networkRttPs;
    m_adjustBytes = 8.0 * p.mtu;
    m_minCwnd = p.mtu;
    // initNscc: the window starts at (and is capped by) 1.5 BDP of the path.
    m_baseRtt = baseRttPs;
    m_bdp = m_baseRtt * 1e-12 * p.rateBps / 8;
    m_maxWnd = 1.5 * m_bdp;
    m_cwnd = initialCwnd > 0 ? double(initialCwnd) : m_maxWnd;
}

uint64_t
DltraceUetNscc::GetCwnd() const
{
    return uint64_t(m_cwnd);
}

double
DltraceUetNscc::GetBaseRttPs() const
{
    return m_baseRtt;
}

void
DltraceUetNscc::Bound()
{
    m_cwnd = std::clamp(m_cwnd, m_minCwnd, std::max(m_minCwnd, m_maxWnd));
}

void
DltraceUetNscc::UpdateBaseRtt(double raw)
{
    if (m_baseRtt > raw)
    {
        m_baseRtt = raw;
        m_bdp = raw * 1e-12 * m_p.rateBps / 8;
        m_maxWnd = 1.5 * m_bdp;
    }
}

void
DltraceUetNscc::UpdateDelay(double raw, bool skip)
{
    const double delay = raw - m_baseRtt;
    if (!skip && delay > m_target)
    {
        m_avgDelay = m_delayAlpha * m_baseRtt * 0.25 + (1 - m_delayAlpha) * m_avgDelay;
    }
    else
    {
        m_avgDelay = m_delayAlpha * delay + (1 - m_delayAlpha) * m_avgDelay;
    }
}

bool
DltraceUetNscc::QuickAdapt(double now, bool loss, bool skip, double delay, uint64_t inFlight)
{
    bool done = false;
    if (m_ignored < m_toIgnore && skip)
    {
        done = true;
    }
    else if (now > m_qaEnd)
    {
        if (m_qaEnd != 0 && (m_triggerQa || loss || delay > m_qaThreshold) &&
            m_achieved < std::floor(m_maxWnd / double(1u << m_p.qaGate)))
        {
            m_cwnd = std::max(m_achieved, m_minCwnd);
            m_toIgnore = double(inFlight);
            m_ignored = 0;
            m_triggerQa = false;
            done = true;
        }
        m_achieved = 0;
        m_qaEnd = now + m_baseRtt + m_target;
    }
    if (done)
    {
        m_incBytes = 0;
        m_received = 0;
    }
    return done;
}

void
DltraceUetNscc::OnAck(double now, double raw, bool ecn, uint64_t newly, uint64_t inFlight)
{
    m_achieved += newly;
    m_received += newly;
    m_ignored += newly;
    double delay = m_avgDelay;
    if (raw >= 0)
    {
        UpdateBaseRtt(raw);
        if (raw >= m_baseRtt)
        {
            UpdateDelay(raw, ecn);
            delay = raw - m_baseRtt;
        }
    }
    if (QuickAdapt(now, false, ecn, delay, inFlight))
    {
        return;
    }
    if (!ecn && delay >= m_target)
    {
        m_incBytes += m_fi * newly; // fair increase
    }
    else if (!ecn)
    {
        // fast increase near zero delay, else proportional increase
        bool fast = false;
        if (delay < kPsPerUs)
        {
            m_fiCount += newly;
            if (m_fiCount > m_cwnd || m_increase)
            {
                m_cwnd += newly * m_fiScale;
                m_increase = true;
                fast = true;
            }
        }
        else
        {
            m_fiCount = 0;
        }
        if (!fast)
        {
            m_increase = false;
            m_incBytes += m_alpha * newly * (m_target - delay);
        }
    }
    else if (delay >= m_target)
    {
        // multiplicative decrease
        m_increase = false;
        m_fiCount = 0;
        if (m_avgDelay > m_target && now - m_lastDec > m_baseRtt)
        {
            m_cwnd *= std::max(1 - m_gamma * (m_avgDelay - m_target) / m_avgDelay, 0.5);
            m_cwnd = std::max(m_cwnd, m_minCwnd);
            m_lastDec = now;
        }
    }
    Bound();
    if (m_received > m_adjustBytes || now - m_lastAdjust > m_adjustPeriod)
    {
        // fulfill adjustment
        m_cwnd += m_incBytes / m_cwnd;
        if (now - m_lastAdjust >= m_adjustPeriod)
        {
            m_cwnd += m_eta;
            m_lastAdjust = now;
        }
        m_incBytes = 0;
        m_received = 0;
    }
    Bound();
}

void
DltraceUetNscc::OnNack(double now, double raw, uint64_t bytes, uint64_t inFlight)
{
    if (raw >= 0)
    {
        UpdateBaseRtt(raw);
    }
    m_ignored += bytes;
    // A trim stands for a queue at the trimming threshold: about a network RTT of delay.
    UpdateDelay(m_baseRtt + m_p.networkRttPs, true);
    m_triggerQa = true;
    if (!QuickAdapt(now, true, true, 0, inFlight))
    {
        m_cwnd -= double(bytes);
        Bound();
    }
}

void
DltraceUetNscc::OnTimeout(uint64_t bytes)
{
    m_cwnd = std::max(m_cwnd - double(bytes), m_minCwnd);
}

// ---------------------------------------------------------------- PDC sender

TypeId
DltraceUetPdc::GetTypeId()
{
    static TypeId tid =
        DltraceTypeId<DltraceUetPdc, Object>("ns3::DltraceUetPdc")
            .AddString("LoadBalancer",
                       "How packets pick their entropy value: oblivious, bitmap, reps or mixed "
                       "(uet-htsim's -load_balancing_algo; default mixed, its default).",
                       "mixed", &DltraceUetPdc::m_lbName)
            .AddUinteger("Entropies",
                         "Entropy values a PDC sprays over (uet-htsim's -paths, default 64).",
                         64, &DltraceUetPdc::m_entropies, 1, 65536)
            .AddTime("MinRto",
                     "Retransmission timeout (s); 0: uet-htsim's 15 us + 6 queues' drain time "
                     "at line rate.",
                     Seconds(0), &DltraceUetPdc::m_minRto, Seconds(0))
            .AddTime("TargetDelay",
                     "NSCC's target queuing delay (s); 0: 0.75 x the network RTT with trimming "
                     "(uet-htsim's -target_q_delay default).",
                     Seconds(0), &DltraceUetPdc::m_targetDelay, Seconds(0))
            .AddUinteger("QaGate",
                         "NSCC quick adapt runs only when less than maxwnd / 2^QaGate was "
                         "acknowledged in its period (uet-htsim's -qa_gate, default 3).",
                         3, &DltraceUetPdc::m_qaGate, 0, 16)
            .AddUinteger("InitialWindow",
                         "Initial window, packets; 0: 1.5 BDP (uet-htsim's -cwnd default).",
                         0, &DltraceUetPdc::m_initialWindow, 0, 1u << 20);
    return tid;
}

DltraceUetPdc::DltraceUetPdc() = default;

void
DltraceUetPdc::DoDispose()
{
    m_rtoEvent.Cancel();
    m_acked = MessageAckedCallback();
    m_wake = Callback<void>();
    m_lb.reset();
    Object::DoDispose();
}

void
DltraceUetPdc::Setup(uint32_t id, uint32_t srcHost, uint32_t dstHost, uint32_t priority, uint64_t flowHash,
                     uint32_t mss, const Fabric& fabric)
{
    m_id = id;
    m_src = srcHost;
    m_dst = dstHost;
    m_priority = priority;
    m_flowHash = flowHash;
    m_mss = mss;
    m_fabric = fabric;
    DltraceUetLoadBalancer::Kind kind;
    if (!DltraceUetLoadBalancer::Parse(m_lbName, &kind))
    {
        NS_FATAL_ERROR("DltraceUetPdc: unknown load balancer '" << m_lbName << "' ("
                                                                << DltraceUetLoadBalancer::Names() << ")");
    }
    Ptr<UniformRandomVariable> rng = CreateObject<UniformRandomVariable>();
    m_lb = std::make_unique<DltraceUetLoadBalancer>(kind, m_entropies, rng);
    const double drainPs = double(fabric.queueBytes) * 6.0 * 8 / fabric.lineRateBps * 1e12;
    m_rto = m_minRto > Seconds(0) ? m_minRto : MicroSeconds(15) + PicoSeconds(int64_t(drainPs));
    DltraceUetNscc::Params p;
    p.rateBps = fabric.lineRateBps;
    p.networkRttPs = double(fabric.networkRtt.GetPicoSeconds());
    p.targetDelayPs = double(m_targetDelay.GetPicoSeconds());
    p.mtu = mss + DltraceRdmaHeader::kUetOverhead;
    p.mss = mss;
    p.qaGate = m_qaGate;
    p.trimming = fabric.trimming;
    m_nscc.Init(p, double(fabric.networkRtt.GetPicoSeconds()), uint64_t(m_initialWindow) * p.mtu);
    if (fabric.rccc)
    {
        m_credit = int64_t(m_nscc.GetCwnd()); // one window may go unasked
    }
}

void
DltraceUetPdc::SetMessageAckedCallback(MessageAckedCallback cb)
{
    m_acked = cb;
}

void
DltraceUetPdc::SetWakeCallback(Callback<void> cb)
{
    m_wake = cb;
}

uint32_t
DltraceUetPdc::PostSend(uint64_t bytes)
{
    NS_ASSERT(bytes > 0);
    const uint32_t packets = uint32_t((bytes + m_mss - 1) / m_mss);
    const uint32_t seq = m_nextMsgSeq++;
    m_messages.push_back(Message{seq, m_endPsn, packets, bytes});
    m_endPsn += packets;
    if (!m_wake.IsNull())
    {
        m_wake();
    }
    return seq;
}

uint32_t
DltraceUetPdc::PayloadOf(uint32_t psn, bool* last, uint32_t* msgSeq) const
{
    auto it = std::upper_bound(m_messages.begin(), m_messages.end(), psn, [](uint32_t p, const Message& m) {
        return p < m.firstPsn;
    });
    NS_ASSERT(it != m_messages.begin());
    const Message& m = *std::prev(it);
    const uint32_t index = psn - m.firstPsn;
    *last = index + 1 == m.packets;
    *msgSeq = m.seq;
    return *last ? uint32_t(m.bytes - uint64_t(index) * m_mss) : m_mss;
}

bool
DltraceUetPdc::HasDataToSend() const
{
    return !m_rtxQueue.empty() || m_nextNew < m_endPsn;
}

uint32_t
DltraceUetPdc::NextPsn() const
{
    return m_rtxQueue.empty() ? m_nextNew : *m_rtxQueue.begin();
}

bool
DltraceUetPdc::WindowAllows() const
{
    if (m_fabric.rccc)
    {
        return m_credit > 0;
    }
    bool last;
    uint32_t seq;
    const uint64_t wire = PayloadOf(NextPsn(), &last, &seq) + DltraceRdmaHeader::kUetOverhead;
    return m_nscc.GetCwnd() >= m_inFlightBytes + wire;
}

Time
DltraceUetPdc::GetNextSendTime() const
{
    return Simulator::Now();
}

uint64_t
DltraceUetPdc::GetBacklogBytes() const
{
    uint64_t bytes = 0;
    for (uint32_t psn : m_rtxQueue)
    {
        bool last;
        uint32_t seq;
        bytes += PayloadOf(psn, &last, &seq) + DltraceRdmaHeader::kUetOverhead;
    }
    if (m_nextNew < m_endPsn)
    {
        const uint64_t packets = m_endPsn - m_nextNew;
        bytes += packets * (m_mss + DltraceRdmaHeader::kUetOverhead); // the last may be short: close enough
    }
    return bytes;
}

Ptr<Packet>
DltraceUetPdc::NextPacket()
{
    const bool resend = !m_rtxQueue.empty();
    const uint32_t psn = NextPsn();
    if (resend)
    {
        m_rtxQueue.erase(m_rtxQueue.begin());
        m_everResent.insert(psn);
        ++m_retransmitted;
    }
    else
    {
        ++m_nextNew;
        ++m_sent;
    }
    DltraceRdmaHeader h;
    h.type = DltraceRdmaHeader::DATA;
    h.SetFlag(DltraceRdmaHeader::UET);
    h.priority = static_cast<uint8_t>(m_priority);
    h.srcHost = m_src;
    h.dstHost = m_dst;
    h.qp = m_id;
    h.psn = psn;
    bool last;
    const uint32_t payload = PayloadOf(psn, &last, &h.msgSeq);
    if (last)
    {
        h.SetFlag(DltraceRdmaHeader::LAST);
    }
    h.entropy = m_lb->Next();
    // The switches hash the entropy value with the PDC's own hash: a packet's path.
    h.flowHash = m_flowHash ^ (uint64_t(h.entropy + 1) * 0x9E3779B97F4A7C15ull);
    h.tsNs = uint64_t(Simulator::Now().GetNanoSeconds());
    const uint32_t wire = payload + DltraceRdmaHeader::kUetOverhead;
    m_inFlightBytes += wire;
    if (m_fabric.rccc)
    {
        m_credit -= wire;
    }
    const uint64_t backlog = GetBacklogBytes();
    if (resend || backlog == 0 || (m_fabric.rccc ? m_credit <= 0 : m_inFlightBytes + wire >= m_nscc.GetCwnd()))
    {
        h.SetFlag(DltraceRdmaHeader::ACK_REQUEST);
    }
    h.sack = m_fabric.rccc ? uint64_t(std::max<int64_t>(0, int64_t(backlog) - std::max<int64_t>(m_credit, 0))) : 0;
    m_inFlight[psn] = SendRecord{Simulator::Now(), wire, h.entropy, resend};
    Ptr<Packet> p = Create<Packet>(payload);
    p->AddHeader(h);
    if (m_rtoDeadline == Time::Max())
    {
        ArmRto();
    }
    return p;
}

uint32_t
DltraceUetPdc::Acknowledge(uint32_t psn)
{
    auto it = m_inFlight.find(psn);
    if (it == m_inFlight.end())
    {
        m_rtxQueue.erase(psn); // acknowledged while waiting to be resent (an earlier copy arrived)
        return 0;
    }
    const uint32_t wire = it->second.wire;
    m_inFlightBytes -= wire;
    m_inFlight.erase(it);
    m_rtxQueue.erase(psn);
    return wire;
}

void
DltraceUetPdc::OnAck(const DltraceRdmaHeader& ack)
{
    const Time now = Simulator::Now();
    double rawRtt = -1;
    auto ref = m_inFlight.find(ack.msgSeq);
    if (ref != m_inFlight.end() && !ref->second.retransmitted)
    {
        rawRtt = double((now - ref->second.sent).GetPicoSeconds());
    }
    uint64_t newly = 0;
    while (m_cumAck < ack.psn)
    {
        newly += Acknowledge(m_cumAck++);
    }
    newly += Acknowledge(ack.msgSeq);
    for (uint32_t i = 0; i < 64; ++i)
    {
        if (ack.sack & (uint64_t(1) << i))
        {
            newly += Acknowledge(ack.psn + i);
        }
    }
    m_bytesAcked += newly;
    StopSpeculating();
    const bool ecn = ack.HasFlag(DltraceRdmaHeader::ECN_CE);
    m_lb->OnFeedback(ack.entropy, ecn ? DltraceUetLoadBalancer::ECN : DltraceUetLoadBalancer::GOOD);
    if (!m_fabric.rccc)
    {
        m_nscc.OnAck(double(now.GetPicoSeconds()), rawRtt, ecn, newly, m_inFlightBytes);
    }
    CompleteMessages();
    m_rtoDeadline = Time::Max();
    if (!m_inFlight.empty())
    {
        ArmRto();
    }
    if (!m_wake.IsNull())
    {
        m_wake();
    }
}

void
DltraceUetPdc::OnNack(const DltraceRdmaHeader& nack)
{
    ++m_nacks;
    StopSpeculating();
    auto it = m_inFlight.find(nack.psn);
    const bool lastHop = nack.HasFlag(DltraceRdmaHeader::LAST_HOP_TRIM);
    m_lb->OnFeedback(nack.entropy,
                     lastHop ? (nack.HasFlag(DltraceRdmaHeader::ECN_CE) ? DltraceUetLoadBalancer::ECN
                                                                         : DltraceUetLoadBalancer::GOOD)
                             : DltraceUetLoadBalancer::NACK);
    if (it == m_inFlight.end())
    {
        return; // already acknowledged, or resent and NACKed twice
    }
    const Time now = Simulator::Now();
    const double rawRtt = double((now - it->second.sent).GetPicoSeconds());
    const uint32_t wire = it->second.wire;
    m_inFlightBytes -= wire;
    m_inFlight.erase(it);
    m_rtxQueue.insert(nack.psn);
    if (!m_fabric.rccc)
    {
        m_nscc.OnNack(double(now.GetPicoSeconds()), rawRtt, wire, m_inFlightBytes);
    }
    if (!m_wake.IsNull())
    {
        m_wake();
    }
}

void
DltraceUetPdc::StopSpeculating()
{
    // RCCC: the unasked window ends with the receiver's first answer; from then on
    // only pulls grant credit (uet-htsim's stopSpeculating).
    if (m_fabric.rccc && m_speculating)
    {
        m_speculating = false;
        m_credit = std::min<int64_t>(m_credit, 0);
    }
}

void
DltraceUetPdc::OnPull(uint64_t bytes)
{
    m_credit += int64_t(bytes);
    if (!m_wake.IsNull())
    {
        m_wake();
    }
}

void
DltraceUetPdc::CompleteMessages()
{
    while (!m_messages.empty() && m_cumAck >= m_messages.front().firstPsn + m_messages.front().packets)
    {
        Message m = m_messages.front();
        m_messages.pop_front();
        if (!m_acked.IsNull())
        {
            m_acked(m.seq, m.bytes);
        }
    }
}

void
DltraceUetPdc::ArmRto()
{
    Time oldest = Time::Max();
    for (const auto& [psn, r] : m_inFlight)
    {
        oldest = std::min(oldest, r.sent);
    }
    if (oldest == Time::Max())
    {
        return;
    }
    m_rtoDeadline = std::max(oldest + m_rto, Simulator::Now());
    const Time queued = Simulator::Now() + Simulator::GetDelayLeft(m_rtoEvent);
    if (!m_rtoEvent.IsRunning() || queued > m_rtoDeadline)
    {
        m_rtoEvent.Cancel();
        m_rtoEvent = Simulator::Schedule(m_rtoDeadline - Simulator::Now(), &DltraceUetPdc::RtoDue, this);
    }
}

void
DltraceUetPdc::RtoDue()
{
    if (m_rtoDeadline == Time::Max())
    {
        return; // disarmed since
    }
    if (Simulator::Now() < m_rtoDeadline)
    {
        m_rtoEvent = Simulator::Schedule(m_rtoDeadline - Simulator::Now(), &DltraceUetPdc::RtoDue, this);
        return;
    }
    Rto();
}

void
DltraceUetPdc::Rto()
{
    m_rtoDeadline = Time::Max();
    // The oldest packet in flight is given up for lost and queued to be resent;
    // the timer restarts from the next oldest (uet-htsim's rtxTimerExpired).
    auto oldest = m_inFlight.end();
    for (auto it = m_inFlight.begin(); it != m_inFlight.end(); ++it)
    {
        if (oldest == m_inFlight.end() || it->second.sent < oldest->second.sent)
        {
            oldest = it;
        }
    }
    if (oldest != m_inFlight.end())
    {
        ++m_timeouts;
        m_lb->OnFeedback(oldest->second.entropy, DltraceUetLoadBalancer::TIMEOUT);
        m_inFlightBytes -= oldest->second.wire;
        if (m_fabric.rccc)
        {
            m_credit += oldest->second.wire; // the lost packet's credit is spent again
        }
        else
        {
            m_nscc.OnTimeout(oldest->second.wire);
        }
        m_rtxQueue.insert(oldest->first);
        m_inFlight.erase(oldest);
    }
    ArmRto();
    if (!m_wake.IsNull())
    {
        m_wake();
    }
}

uint32_t
DltraceUetPdc::GetId() const
{
    return m_id;
}

uint32_t
DltraceUetPdc::GetSrcHost() const
{
    return m_src;
}

uint32_t
DltraceUetPdc::GetDstHost() const
{
    return m_dst;
}

uint32_t
DltraceUetPdc::GetPriority() const
{
    return m_priority;
}

bool
DltraceUetPdc::IsActive() const
{
    return !m_messages.empty();
}

uint64_t
DltraceUetPdc::GetBytesAcked() const
{
    return m_bytesAcked;
}

uint64_t
DltraceUetPdc::GetSentPackets() const
{
    return m_sent;
}

uint64_t
DltraceUetPdc::GetRetransmittedPackets() const
{
    return m_retransmitted;
}

uint64_t
DltraceUetPdc::GetNacks() const
{
    return m_nacks;
}

uint64_t
DltraceUetPdc::GetTimeouts() const
{
    return m_timeouts;
}

uint64_t
DltraceUetPdc::GetCwnd() const
{
    return m_fabric.rccc ? uint64_t(std::max<int64_t>(m_credit, 0)) : m_nscc.GetCwnd();
}

// ---------------------------------------------------------------- receiver

void
DltraceUetReceiver::Setup(uint32_t host, double lineRateBps, bool rccc, SendCallback send)
{
    m_host = host;
    m_rateBps = lineRateBps;
    m_rccc = rccc;
    m_send = send;
}

void
DltraceUetReceiver::SetDeliverCallback(DeliverCallback cb)
{
    m_deliver = cb;
}

void
DltraceUetReceiver::Dispose()
{
    m_pullEvent.Cancel();
    m_send = SendCallback();
    m_deliver = DeliverCallback();
    m_flows.clear();
}

uint64_t
DltraceUetReceiver::GetNacksSent() const
{
    return m_nacks;
}

uint64_t
DltraceUetReceiver::GetTrimmedReceived() const
{
    return m_trimmed;
}

void
DltraceUetReceiver::Control(uint8_t type, const DltraceRdmaHeader& data, uint32_t psn, uint32_t ref, uint64_t sack,
                            bool ecn, uint64_t pull)
{
    DltraceRdmaHeader c;
    c.type = type;
    c.SetFlag(DltraceRdmaHeader::UET);
    if (ecn)
    {
        c.SetFlag(DltraceRdmaHeader::ECN_CE);
    }
    if (data.HasFlag(DltraceRdmaHeader::LAST_HOP_TRIM))
    {
        c.SetFlag(DltraceRdmaHeader::LAST_HOP_TRIM);
    }
    c.priority = data.priority;
    c.srcHost = m_host;
    c.dstHost = data.srcHost;
    c.qp = data.qp;
    c.psn = psn;
    c.msgSeq = ref;
    c.sack = type == DltraceRdmaHeader::PULL ? pull : sack;
    c.entropy = data.entropy;
    c.flowHash = data.flowHash;
    c.tsNs = data.tsNs;
    Ptr<Packet> p = Create<Packet>();
    p->AddHeader(c);
    m_send(p, c.dstHost);
}

void
DltraceUetReceiver::Ack(Flow& f, const DltraceRdmaHeader& data, bool ecn)
{
    uint64_t sack = 0;
    for (auto it = f.ooo.begin(); it != f.ooo.end() && *it < f.expected + 64; ++it)
    {
        sack |= uint64_t(1) << (*it - f.expected);
    }
    f.unacked = 0;
    Control(DltraceRdmaHeader::ACK, data, f.expected, data.psn, sack, ecn, 0);
}

void
DltraceUetReceiver::Receive(Ptr<Packet> packet, const DltraceRdmaHeader& h)
{
    const uint64_t key = (uint64_t(h.srcHost) << 32) | h.qp;
    Flow& f = m_flows[key];
    f.priority = h.priority;
    f.flowHash = h.flowHash;
    const bool ecn = h.HasFlag(DltraceRdmaHeader::ECN_CE);
    const bool duplicate = h.psn < f.expected || f.ooo.count(h.psn) > 0;
    if (m_rccc)
    {
        f.backlog = h.sack;
    }
    if (h.HasFlag(DltraceRdmaHeader::TRIMMED))
    {
        ++m_trimmed;
        if (duplicate)
        {
            Ack(f, h, false);
            return;
        }
        ++m_nacks;
        Control(DltraceRdmaHeader::NACK, h, h.psn, h.psn, 0, ecn, 0);
    }
    else if (duplicate)
    {
        Ack(f, h, ecn);
        return;
    }
    else
    {
        const bool first = !f.started;
        f.started = true;
        f.bytes[h.msgSeq] += packet->GetSize();
        if (h.HasFlag(DltraceRdmaHeader::LAST))
        {
            f.lastPsn[h.psn] = h.msgSeq;
        }
        if (h.psn == f.expected)
        {
            ++f.expected;
            while (!f.ooo.empty() && *f.ooo.begin() == f.expected)
            {
                f.ooo.erase(f.ooo.begin());
                ++f.expected;
            }
        }
        else
        {
            f.ooo.insert(h.psn);
        }
        f.unacked += packet->GetSize() + DltraceRdmaHeader::kUetOverhead;
        // An ACK request is answered at once and again when the holes before it fill (uet-htsim).
        bool requested = h.HasFlag(DltraceRdmaHeader::ACK_REQUEST);
        f.ackRequest = f.ackRequest || requested;
        if (f.ackRequest && f.ooo.empty())
        {
            requested = true;
            f.ackRequest = false;
        }
        if (first || ecn || f.unacked >= kAckBytes || requested || h.HasFlag(DltraceRdmaHeader::LAST))
        {
            Ack(f, h, ecn);
        }
        // Deliver every message whose last PSN is now below the next expected one.
        while (!f.lastPsn.empty() && f.lastPsn.begin()->first < f.expected)
        {
            const uint32_t seq = f.lastPsn.begin()->second;
            f.lastPsn.erase(f.lastPsn.begin());
            const uint64_t bytes = f.bytes[seq];
            f.bytes.erase(seq);
            if (!m_deliver.IsNull())
            {
                m_deliver(h.srcHost, h.qp, seq, bytes);
            }
        }
    }
    if (m_rccc && !m_pullEvent.IsRunning())
    {
        Pull();
    }
}

void
DltraceUetReceiver::Pull()
{
    // Round robin from the flow after the last one pulled for.
    auto it = m_flows.upper_bound(m_pullNext);
    for (size_t n = 0; n < m_flows.size(); ++n, ++it)
    {
        if (it == m_flows.end())
        {
            it = m_flows.begin();
        }
        if (it->second.backlog > 0)
        {
            break;
        }
    }
    if (it == m_flows.end() || it->second.backlog == 0)
    {
        return; // nobody waits: the next arrival restarts the pacer
    }
    Flow& f = it->second;
    m_pullNext = it->first;
    const uint64_t grant = kPullBytes;
    f.backlog -= std::min<uint64_t>(f.backlog, grant);
    DltraceRdmaHeader data;
    data.priority = static_cast<uint8_t>(f.priority);
    data.srcHost = uint32_t(it->first >> 32);
    data.qp = uint32_t(it->first & 0xffffffffu);
    data.flowHash = f.flowHash;
    Control(DltraceRdmaHeader::PULL, data, 0, 0, 0, false, grant);
    // uet-htsim's pull pacer: the granted bytes at 0.99 x line rate.
    const double seconds = double(grant) * 8 / (0.99 * m_rateBps);
    m_pullEvent = Simulator::Schedule(Seconds(seconds), &DltraceUetReceiver::Pull, this);
}

} // namespace ns3
