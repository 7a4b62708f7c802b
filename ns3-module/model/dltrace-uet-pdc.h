// SPDX-License-Identifier: GPL-2.0-only
// The Ultra Ethernet transport (UET) on the RDMA fabric: a packet delivery context per
// connection that sprays packets over entropy values, its NSCC and RCCC, and the receiver.
#ifndef DLTRACE_UET_PDC_H
#define DLTRACE_UET_PDC_H

#include "dltrace-rdma-header.h"

#include "ns3/callback.h"
#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/packet.h"
#include "ns3/random-variable-stream.h"

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief Picks each packet's entropy value (uet-htsim's uec_mp.cpp).
 *
 * oblivious: a round robin over the N entropy values in an order XOR-ed by a
 * fresh random value each round; bitmap: the same, skipping values that came
 * back with ECN (penalty 1), a NACK (4) or a timeout (15, the cap), one
 * penalty point forgiven per skip; reps: values that came back clean are
 * reused first in arrival order, otherwise a random one (REPS without its
 * freezing mode); mixed (the reference's default): reps' recycled values,
 * else bitmap's choice.
 */
class DltraceUetLoadBalancer
{
  public:
    enum Kind
    {
        OBLIVIOUS,
        BITMAP,
        REPS,
        MIXED,
    };
    enum Feedback
    {
        GOOD,
        ECN,
        NACK,
        TIMEOUT,
    };
    /// The load balancer called NAME; false for another name.
    static bool Parse(const std::string& name, Kind* kind);
    /// "oblivious, bitmap, reps, mixed"
    static std::string Names();

    DltraceUetLoadBalancer(Kind kind, uint32_t entropies, Ptr<UniformRandomVariable> rng);
    uint32_t Next();
    void OnFeedback(uint32_t entropy, Feedback feedback);

  private:
    uint32_t Random(uint32_t n);
    uint32_t NextRoundRobin(bool skipPenalised);

    Kind m_kind;
    uint32_t m_entropies;
    Ptr<UniformRandomVariable> m_rng;
    uint32_t m_index{0};
    uint32_t m_xor{0};
    std::vector<uint8_t> m_penalty;
    std::deque<uint32_t> m_clean; ///< reps: values that came back clean, oldest first
};

/**
 * \ingroup dltrace
 * \brief NSCC, UET's sender-based congestion control (uet-htsim's uec.cpp).
 *
 * A window of bytes between one MTU and 1.5 BDP. Every ACK gives a queuing
 * delay (RTT minus base RTT) and an ECN echo: no ECN and a delay below the
 * target: proportional increase (fast increase near zero delay); no ECN
 * above it: fair increase; ECN above the target: multiplicative decrease
 * (at most once per base RTT, by gamma (avg delay - target) / avg delay,
 * at most half); increases are applied once 8 MTUs were acknowledged or a
 * network RTT passed, plus eta each network RTT. A NACK, or a delay above 4
 * targets, triggers quick adapt: at most once per base RTT + target, the
 * window becomes the bytes acknowledged in that period. The constants scale
 * with the network's BDP against the reference's 100 Gb/s x 12 us.
 */
class DltraceUetNscc
{
  public:
    /// The fabric's constants (uet-htsim's initNsccParams).
    struct Params
    {
        double rateBps = 0;        ///< the sender's line rate
        double networkRttPs = 0;   ///< the fabric's largest unloaded RTT
        double targetDelayPs = 0;  ///< 0: 0.75 network RTT with trimming, 1 RTT without
        uint32_t mtu = 0;          ///< full data frame, bytes
        uint32_t mss = 0;          ///< payload per frame
        uint32_t qaGate = 3;       ///< quick adapt only below maxwnd / 2^qaGate achieved
        bool trimming = true;
    };
    void Init(const Params& params, double baseRttPs, uint64_t initialCwnd);
    /// An ACK for NEWLY bytes, its RTT sample RAW_RTT_PS (< 0: none), ECN echoed.
    void OnAck(double nowPs, double rawRttPs, bool ecn, uint64_t newly, uint64_t inFlight);
    /// A NACK for BYTES (a trimmed packet) with RTT sample RAW_RTT_PS (< 0: none).
    void OnNack(double nowPs, double rawRttPs, uint64_t bytes, uint64_t inFlight);
    /// A packet of BYTES is given up for lost (retransmission timeout).
    void OnTimeout(uint64_t bytes);
    uint64_t GetCwnd() const;
    double GetBaseRttPs() const;

  private:
    bool QuickAdapt(double nowPs, bool loss, bool skip, double delay, uint64_t inFlight);
    void UpdateBaseRtt(double rawRttPs);
    void UpdateDelay(double rawRttPs, bool skip);
    void Bound();

    Params m_p;
    double m_alpha{0}, m_fi{0}, m_eta{0}, m_fiScale{0}, m_target{0}, m_qaThreshold{0};
    double m_adjustPeriod{0};
    double m_adjustBytes{0};
    double m_gamma{0.8};
    double m_delayAlpha{0.0125};
    double m_cwnd{0}, m_maxWnd{0}, m_minCwnd{0}, m_baseRtt{0}, m_bdp{0};
    double m_avgDelay{0};
    double m_incBytes{0};
    double m_achieved{0}, m_received{0}, m_ignored{0}, m_toIgnore{0};
    double m_qaEnd{0}, m_lastDec{0}, m_lastAdjust{0}, m_fiCount{0};
    bool m_triggerQa{false};
    bool m_increase{false};
};

/**
 * \ingroup dltrace
 * \brief The sending side of one UET packet delivery context (job, source, destination, channel).
 *
 * Messages are cut into packets of Mss payload bytes with consecutive PSNs;
 * each packet takes an entropy value from the load balancer, which the
 * switches hash into their ECMP choice (the packet's flowHash). NSCC holds
 * the bytes in flight to its window; RCCC (receiver credit) sends one
 * window of bytes unasked (until the first ACK or NACK), then only what the
 * receiver's pulls grant.
 * ACKs carry the next expected PSN, the PSN acknowledged and a 64-bit SACK
 * bitmap; a NACK (the receiver got a trimmed header) queues its PSN for
 * retransmission at once; packets unacknowledged for the RTO are resent.
 */
class DltraceUetPdc : public Object
{
  public:
    /// Message MSG_SEQ of BYTES is acknowledged in full.
    using MessageAckedCallback = Callback<void, uint32_t, uint64_t>;

    /// What the fabric tells every PDC (from DltraceRdmaHelper).
    struct Fabric
    {
        double lineRateBps = 0;
        Time networkRtt;     ///< the fabric's largest unloaded RTT (NSCC's first base RTT, as uet-htsim's)
        uint64_t queueBytes = 0; ///< the switches' data queue limit
        bool trimming = true;
        bool rccc = false;   ///< receiver credit instead of NSCC
    };

    static TypeId GetTypeId();
    DltraceUetPdc();

    void Setup(uint32_t id, uint32_t srcHost, uint32_t dstHost, uint32_t priority, uint64_t flowHash, uint32_t mss,
               const Fabric& fabric);
    void SetMessageAckedCallback(MessageAckedCallback cb);
    void SetWakeCallback(Callback<void> cb);
    uint32_t PostSend(uint64_t bytes);
    bool HasDataToSend() const;
    bool WindowAllows() const;
    Time GetNextSendTime() const;
    Ptr<Packet> NextPacket();
    void OnAck(const DltraceRdmaHeader& ack);
    void OnNack(const DltraceRdmaHeader& nack);
    /// RCCC: the receiver grants BYTES more.
    void OnPull(uint64_t bytes);

    uint32_t GetId() const;
    uint32_t GetSrcHost() const;
    uint32_t GetDstHost() const;
    uint32_t GetPriority() const;
    bool IsActive() const;
    /// Bytes the sender still has to send (new or again): what RCCC's receiver pulls for.
    uint64_t GetBacklogBytes() const;
    uint64_t GetBytesAcked() const;
    uint64_t GetSentPackets() const;
    uint64_t GetRetransmittedPackets() const;
    uint64_t GetNacks() const;
    uint64_t GetTimeouts() const;
    uint64_t GetCwnd() const;

  protected:
    void DoDispose() override;

  private:
    struct Message
    {
        uint32_t seq;
        uint32_t firstPsn;
        uint32_t packets;
        uint64_t bytes;
    };
    struct SendRecord
    {
        Time sent;
        uint32_t wire;
        uint32_t entropy;
        bool retransmitted;
    };
    uint32_t PayloadOf(uint32_t psn, bool* last, uint32_t* msgSeq) const;
    uint32_t NextPsn() const;
    /// Takes PSN's record out of flight; returns its wire bytes (0: not in flight).
    uint32_t Acknowledge(uint32_t psn);
    void CompleteMessages();
    void StopSpeculating();
    /// Sets the retransmission deadline from the oldest packet in flight.
    void ArmRto();
    /// The timer's event: early (the deadline moved since it was queued) it waits again.
    void RtoDue();
    void Rto();

    // Attributes (their defaults are in GetTypeId())
    std::string m_lbName;
    uint32_t m_entropies{0};
    Time m_minRto;
    Time m_targetDelay;
    uint32_t m_qaGate{0};
    uint32_t m_initialWindow{0};

    uint32_t m_id{0};
    uint32_t m_src{0};
    uint32_t m_dst{0};
    uint32_t m_priority{0};
    uint64_t m_flowHash{0};
    uint32_t m_mss{0};
    Fabric m_fabric;
    Time m_rto;
    std::unique_ptr<DltraceUetLoadBalancer> m_lb;
    DltraceUetNscc m_nscc;
    std::deque<Message> m_messages; ///< not yet fully acknowledged
    uint32_t m_nextMsgSeq{0};
    uint32_t m_endPsn{0};  ///< one past the last PSN posted
    uint32_t m_nextNew{0}; ///< next PSN never sent
    uint32_t m_cumAck{0};  ///< every PSN below is acknowledged
    std::map<uint32_t, SendRecord> m_inFlight;
    std::set<uint32_t> m_rtxQueue;
    std::set<uint32_t> m_everResent;
    uint64_t m_inFlightBytes{0};
    int64_t m_credit{0}; ///< RCCC: bytes granted and not yet spent
    bool m_speculating{true}; ///< RCCC: still in the unasked first window
    // One event waits for the deadline the ACKs move (ACKs would otherwise
    // each cancel one and queue another, and cancelled events stay in ns-3's
    // queue until their time); Time::Max(): no timer armed.
    EventId m_rtoEvent;
    Time m_rtoDeadline{Time::Max()};
    uint64_t m_bytesAcked{0};
    uint64_t m_sent{0};
    uint64_t m_retransmitted{0};
    uint64_t m_nacks{0};
    uint64_t m_timeouts{0};
    MessageAckedCallback m_acked;
    Callback<void> m_wake;
};

/**
 * \ingroup dltrace
 * \brief The receiving side of every UET PDC that sends to one NIC (owned by DltraceRdmaNic).
 *
 * Accepts packets in any order; a message is delivered when every PSN up
 * to its last arrived. It acknowledges the first packet, every 16 KB
 * received, every ECN-marked packet, every duplicate and every packet the
 * sender asked an ACK for; a trimmed header gets a NACK at once. RCCC: a
 * pacer pulls for the senders with data left, round robin, Credit bytes at
 * a time at PullRate x line rate.
 */
class DltraceUetReceiver
{
  public:
    /// Sends a control frame back (the NIC enqueues it).
    using SendCallback = Callback<void, Ptr<Packet>, uint32_t>;
    /// A whole message arrived: source host, its PDC, message number, bytes.
    using DeliverCallback = Callback<void, uint32_t, uint32_t, uint32_t, uint64_t>;

    static constexpr uint64_t kAckBytes = 16384; ///< uet-htsim's SACK threshold
    static constexpr uint32_t kPullBytes = 4 * 4086; ///< uet-htsim: 4 MSS per pull

    void Setup(uint32_t host, double lineRateBps, bool rccc, SendCallback send);
    void SetDeliverCallback(DeliverCallback cb);
    void Receive(Ptr<Packet> packet, const DltraceRdmaHeader& h);
    uint64_t GetNacksSent() const;
    uint64_t GetTrimmedReceived() const;
    void Dispose();

  private:
    struct Flow
    {
        uint32_t expected = 0;
        std::set<uint32_t> ooo;
        std::map<uint32_t, uint64_t> bytes;   ///< per message: payload received
        std::map<uint32_t, uint32_t> lastPsn; ///< last PSN -> message
        uint64_t unacked = 0;
        bool started = false;
        bool ackRequest = false; ///< an ACK was asked for while holes remained
        uint64_t backlog = 0; ///< RCCC: what the sender said it has left
        uint32_t priority = 0;
        uint64_t flowHash = 0;
    };
    void Ack(Flow& f, const DltraceRdmaHeader& data, bool ecn);
    void Control(uint8_t type, const DltraceRdmaHeader& data, uint32_t psn, uint32_t ref, uint64_t sack, bool ecn,
                 uint64_t pull);
    void Pull();

    uint32_t m_host{0};
    double m_rateBps{0};
    bool m_rccc{false};
    SendCallback m_send;
    DeliverCallback m_deliver;
    std::map<uint64_t, Flow> m_flows; ///< (src host << 32 | pdc)
    uint64_t m_nacks{0};
    uint64_t m_trimmed{0};
    EventId m_pullEvent;
    uint64_t m_pullNext{0}; ///< round robin position (a key of m_flows)
};

} // namespace ns3

#endif /* DLTRACE_UET_PDC_H */
