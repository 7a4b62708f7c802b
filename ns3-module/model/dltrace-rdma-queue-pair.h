// SPDX-License-Identifier: GPL-2.0-only
// The sending half of a reliable-connection queue pair: messages cut into
// MTU packets with PSNs, paced at the congestion control's rate, held to
// its window, acknowledged cumulatively, and recovered by go-back-N (or by
// selective repeat towards a receiver that places out of order).
#ifndef DLTRACE_RDMA_QUEUE_PAIR_H
#define DLTRACE_RDMA_QUEUE_PAIR_H

#include "dltrace-rdma-congestion-control.h"
#include "dltrace-rdma-net-device.h"

#include "ns3/callback.h"
#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/packet.h"

#include <cstdint>
#include <deque>

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief One RC queue pair's sender (its receiver state lives in DltraceRdmaNic).
 *
 * Each message is its own run of PSNs; its last packet carries the LAST
 * flag and may be short. A NACK (the receiver saw a gap) or no progress
 * for RetransmitTimeout rewinds snd_nxt to the first unacknowledged PSN
 * (go-back-N).
 */
class DltraceRdmaQueuePair : public Object
{
  public:
    /// Message MSG_SEQ of BYTES is acknowledged in full.
    using MessageAckedCallback = Callback<void, uint32_t, uint64_t>;

    static TypeId GetTypeId();
    DltraceRdmaQueuePair();

    /// Identity and path: QP number on host SRC towards DST in class PRIORITY.
    void Setup(uint32_t qpn,
               uint32_t srcHost,
               uint32_t dstHost,
               uint32_t priority,
               uint64_t flowHash,
               uint32_t mtu,
               Ptr<DltraceRdmaCongestionControl> cc,
               double lineRateBps,
               Time baseRtt);
    void SetMessageAckedCallback(MessageAckedCallback cb);
    /// Called when the QP may be able to send (new data, ACK, rate up).
    void SetWakeCallback(Callback<void> cb);
    /// Selective repeat (the receiver places out of order): a NACK or a
    /// timeout resends the one missing PSN instead of going back N.
    void SetSelectiveRepeat(bool selective);

    /// Queues a message of BYTES (> 0); returns its sequence number.
    uint32_t PostSend(uint64_t bytes);
    /// Whether packets remain to be sent (new or to resend).
    bool HasDataToSend() const;
    /// Whether the window allows another packet now.
    bool WindowAllows() const;
    /// Earliest time pacing lets the next packet go.
    Time GetNextSendTime() const;
    /// Builds the next packet (HasDataToSend() and WindowAllows() must hold).
    Ptr<Packet> NextPacket();

    void OnAck(const DltraceRdmaHeader& ack);
    void OnNack(const DltraceRdmaHeader& nack);
    void OnCnp();

    uint32_t GetQpn() const;
    uint32_t GetSrcHost() const;
    uint32_t GetDstHost() const;
    uint32_t GetPriority() const;
    Ptr<DltraceRdmaCongestionControl> GetCongestionControl() const;
    uint64_t GetBytesAcked() const;
    /// Packets acknowledged so far (snd_una).
    uint32_t GetAckedPackets() const;
    uint64_t GetRetransmittedPackets() const;
    uint64_t GetTimeouts() const;
    uint64_t GetCnps() const;

    /// Whether the QP has data posted that is not yet acknowledged.
    bool IsActive() const;
    /// Packets sent and not yet acknowledged.
    uint32_t GetPacketsInFlight() const;
    /**
     * Packets a fast-forward may credit now: those of the message being sent
     * that are not sent yet, its last one excepted, when every packet in
     * flight is of that message and none is being resent; else 0.
     */
    uint32_t GetSkippablePackets() const;
    /**
     * Credits PACKETS (at most GetSkippablePackets()) of the message being
     * sent as sent and acknowledged during a fast-forward of SKIPPED: they
     * leave its run of PSNs, so the packets in flight and the next to send
     * keep theirs, and its last packet comes PACKETS sooner.
     */
    void FastForward(uint32_t packets, Time skipped);
    /// Packets sent so far, resends not counted (credited ones included).
    uint64_t GetSentPackets() const;
    /// Packets credited by fast-forwards so far.
    uint64_t GetSkippedPackets() const;
    /// When the newest packet sent for the first time left (ns-3's clock).
    Time GetLastSendTime() const;
    /// Messages posted so far, and those of them not yet acknowledged.
    uint32_t GetPostedMessages() const;
    uint32_t GetOpenMessages() const;
    uint64_t GetFlowHash() const;
    /**
     * A fast-forward holds this QP's set of links (DltraceRdmaFastForward):
     * its retransmission timer stops; the NIC sends nothing of it meanwhile.
     */
    void Hold();
    /**
     * The hold ended after HELD: pacing moves on by it, an ACK of a packet
     * sent before it reports its round trip without it, the timer restarts.
     */
    void Release(Time held);

  protected:
    void DoDispose() override;

  private:
    struct Message
    {
        uint32_t seq;
        uint32_t firstPsn;
        uint32_t packets;
        uint64_t bytes;
        uint32_t skipped; ///< packets credited by fast-forwards (not in its PSNs)
    };

    uint32_t PayloadOf(uint32_t psn, bool* last, uint32_t* msgSeq) const;
    void Acknowledge(uint32_t ackedPsn, Time echoedTs, const DltraceRdmaHeader* header);
    void UpdateActive();
    void RestartTimer();
    void Timeout();
    /// Selective repeat: queues PSN for resending (once).
    void Resend(uint32_t psn);

    // Attributes (their defaults are in GetTypeId())
    Time m_rto;

    uint32_t m_qpn;
    uint32_t m_src;
    uint32_t m_dst;
    uint32_t m_priority;
    uint64_t m_flowHash;
    uint32_t m_mtu;
    Ptr<DltraceRdmaCongestionControl> m_cc;

    std::deque<Message> m_messages; ///< not yet fully acknowledged
    uint32_t m_nextMsgSeq;
    uint32_t m_endPsn;  ///< one past the last PSN posted
    uint32_t m_nextPsn; ///< snd_nxt
    uint32_t m_unaPsn;  ///< first PSN not acknowledged
    uint32_t m_highPsn; ///< highest PSN ever sent + 1 (retransmissions below it)
    uint64_t m_inflightBytes;
    bool m_selective{false};
    std::deque<uint32_t> m_resend; ///< selective repeat: PSNs to resend, before new ones
    Time m_nextSend;
    DltraceTxTimeCache m_txTimes; ///< pacing: a packet's time at the rate
    Time m_lastSend; ///< when m_highPsn last grew
    EventId m_rtoEvent;
    Time m_rtoDeadline; ///< the timeout is due then (RestartTimer)
    Time m_heldAt;  ///< the last hold's start (Hold)
    Time m_heldFor; ///< and its length (Release)

    uint64_t m_bytesAcked;
    uint64_t m_retransmitted;
    uint64_t m_timeouts;
    uint64_t m_skipped;
    MessageAckedCallback m_acked;
    Callback<void> m_wake;
};

} // namespace ns3

#endif /* DLTRACE_RDMA_QUEUE_PAIR_H */
