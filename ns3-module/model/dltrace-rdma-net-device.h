// SPDX-License-Identifier: GPL-2.0-only
// The RDMA fabric's port: per-priority egress queues, a control queue served
// first, strict-priority or weighted-round-robin service, and 802.1Qbb PFC
// (pause and resume per priority, in both directions).
#ifndef DLTRACE_RDMA_NET_DEVICE_H
#define DLTRACE_RDMA_NET_DEVICE_H

#include "ns3/data-rate.h"
#include "ns3/event-id.h"
#include "ns3/mac48-address.h"
#include "ns3/net-device.h"
#include "ns3/nstime.h"
#include "ns3/packet.h"
#include "ns3/traced-callback.h"

#include <array>
#include <cstdint>
#include <deque>
#include <string>

namespace ns3
{

class DltraceRdmaChannel;

/**
 * \ingroup dltrace
 * \brief DataRate::CalculateBytesTxTime, remembered: it divides in 128 bits
 * (a twentieth of an RDMA run's time), and frames come in a few sizes at a
 * few rates, so the last four answers are kept.
 */
class DltraceTxTimeCache
{
  public:
    /// The time BYTES take at BPS bit/s.
    Time Get(uint64_t bps, uint32_t bytes)
    {
        for (const Entry& e : m_entries)
        {
            if (e.bps == bps && e.bytes == bytes)
            {
                return e.time;
            }
        }
        Entry& e = m_entries[m_next];
        m_next = (m_next + 1) % m_entries.size();
        e = Entry{bps, bytes, DataRate(bps).CalculateBytesTxTime(bytes)};
        return e.time;
    }

  private:
    struct Entry
    {
        uint64_t bps = 0;
        uint32_t bytes = 0;
        Time time;
    };
    std::array<Entry, 4> m_entries{};
    size_t m_next = 0;
};

/**
 * \ingroup dltrace
 * \brief A RoCEv2 port of a host NIC or a switch.
 *
 * Data waits in one FIFO per priority (0..7); ACK, NACK, CNP and PFC frames
 * wait in a control queue that is served first and never paused. A switch
 * fills the data queues (EnqueueData) and is told of every dequeue (buffer
 * release, INT stamping); a host NIC leaves them empty and hands the next
 * packet over when asked (SetPullCallback), which is where its QP
 * round robin and pacing live.
 *
 * PFC: SendPause() sends an XOFF frame for a priority (quanta PauseQuanta,
 * each 512 bit times) and repeats it every half quanta while the pause
 * lasts; SendResume() sends quanta 0. A received XOFF stops that priority's
 * service PfcResponseTime later, until a resume or the quanta run out; a
 * frame already on the wire finishes.
 */
class DltraceRdmaNetDevice : public NetDevice
{
  public:
    static constexpr uint32_t kClasses = 8;

    /// How data classes share the port.
    enum Scheduler
    {
        STRICT_PRIORITY, ///< higher class first (7 before 0)
        WEIGHTED_ROUND_ROBIN, ///< deficit round robin, quantum Weight x Mtu frame
    };

    /// PFC counters of one priority on this port.
    struct PfcCounters
    {
        uint64_t pausesSent = 0;      ///< XOFF frames sent (refreshes included)
        uint64_t resumesSent = 0;     ///< XON frames sent
        uint64_t pausesReceived = 0;  ///< XOFF frames received
        uint64_t resumesReceived = 0; ///< XON frames received
        Time pausedTime;              ///< how long this port's egress was paused
    };

    /// Next data packet of a host NIC, or null (nothing eligible now).
    using PullCallback = Callback<Ptr<Packet>>;
    /// A data packet leaves queue PRIORITY; it came in on port IN_PORT.
    using DequeueCallback = Callback<void, Ptr<Packet>, uint32_t, uint32_t>;
    /// A non-PFC frame arrived.
    using RdmaReceiveCallback = Callback<void, Ptr<DltraceRdmaNetDevice>, Ptr<Packet>>;

    static TypeId GetTypeId();
    DltraceRdmaNetDevice();
    ~DltraceRdmaNetDevice() override;

    bool Attach(Ptr<DltraceRdmaChannel> channel);
    DataRate GetDataRate() const;
    /// Parses "w0,w1,..." (up to 8 weights 1..1000, the rest 1); false on a bad list.
    static bool ParseWeights(const std::string& text, std::array<uint32_t, kClasses>* weights);
    /// WrrWeights attribute: "w0,...,w7".
    void SetWrrWeights(std::string text);
    std::string GetWrrWeights() const;

    /// Queues a data packet in class PRIORITY (IN_PORT is handed back at dequeue).
    void EnqueueData(Ptr<Packet> packet, uint32_t priority, uint32_t inPort);
    /// Queues an ACK, NACK or CNP ahead of all data.
    void EnqueueControl(Ptr<Packet> packet);
    /// Takes the last packet out of data queue PRIORITY (null when empty); its ingress port in IN_PORT (UET trimming).
    Ptr<Packet> RemoveLastData(uint32_t priority, uint32_t* inPort);
    /// Starts a transmission if the port is idle and something is eligible.
    void TriggerTransmit();
    /// Counts a packet the switch dropped for this port (MacTxDrop).
    void NotifyDrop(Ptr<const Packet> packet);

    void SetPullCallback(PullCallback cb);
    void SetDequeueCallback(DequeueCallback cb);
    void SetRdmaReceiveCallback(RdmaReceiveCallback cb);

    /// Asks the peer to stop sending PRIORITY (XOFF, refreshed until SendResume).
    void SendPause(uint32_t priority);
    /// Lets the peer send PRIORITY again (XON).
    void SendResume(uint32_t priority);
    /// Whether this port's own PRIORITY is paused by the peer now.
    bool IsPaused(uint32_t priority) const;

    uint64_t GetQueueBytes(uint32_t priority) const;
    uint64_t GetQueueBytes() const;
    /// Highest total data-queue occupancy seen, bytes.
    uint64_t GetPeakQueueBytes() const;
    /// Bytes this port put on the wire (all frames).
    uint64_t GetTxBytes() const;
    /**
     * What a packet of class PRIORITY competes with, for INT: with strict
     * priority the data queued, and the bytes sent, in its class and above
     * (control frames included in the bytes sent); with round robin all of it.
     */
    uint64_t GetQueueBytesFrom(uint32_t priority) const;
    uint64_t GetTxBytesFrom(uint32_t priority) const;
    uint64_t GetDrops() const;
    /// PFC counters of PRIORITY; paused time includes a pause still running.
    PfcCounters GetPfcCounters(uint32_t priority) const;

    /// From the channel: a frame's last bit arrived.
    void Receive(Ptr<Packet> packet);

    /**
     * Fast-forward of a steady set of links (DltraceRdmaFastForward): while
     * held, this port sends nothing, and its frame on the wire, its frames
     * on their way to the peer and its transmission under way wait with it;
     * Release() lets them go on, each as much later as the hold lasted.
     */
    void Hold();
    void Release();
    bool IsHeld() const;
    /// How long this port has been held in all (holds ended).
    Time GetHeldTime() const;
    /// While held: keeps FRAME, due at the peer TO now, for Release.
    void HoldArrival(Ptr<DltraceRdmaNetDevice> to, Ptr<Packet> frame);
    /// Counts BYTES sent during a hold, as INT reports bytes sent (HPCC's U stays right).
    void CreditTxBytes(uint64_t bytes);
    /// Called when something comes to a held port (a frame queued, a PFC frame
    /// sent or received): the hold must end before it is handled.
    void SetHeldDisturbedCallback(Callback<void, Ptr<DltraceRdmaNetDevice>> cb);

    // NetDevice
    void SetIfIndex(const uint32_t index) override;
    uint32_t GetIfIndex() const override;
    Ptr<Channel> GetChannel() const override;
    void SetAddress(Address address) override;
    Address GetAddress() const override;
    bool SetMtu(const uint16_t mtu) override;
    uint16_t GetMtu() const override;
    bool IsLinkUp() const override;
    void AddLinkChangeCallback(Callback<void> callback) override;
    bool IsBroadcast() const override;
    Address GetBroadcast() const override;
    bool IsMulticast() const override;
    Address GetMulticast(Ipv4Address multicastGroup) const override;
    Address GetMulticast(Ipv6Address addr) const override;
    bool IsBridge() const override;
    bool IsPointToPoint() const override;
    bool Send(Ptr<Packet> packet, const Address& dest, uint16_t protocolNumber) override;
    bool SendFrom(Ptr<Packet> packet,
                  const Address& source,
                  const Address& dest,
                  uint16_t protocolNumber) override;
    Ptr<Node> GetNode() const override;
    void SetNode(Ptr<Node> node) override;
    bool NeedsArp() const override;
    void SetReceiveCallback(NetDevice::ReceiveCallback cb) override;
    void SetPromiscReceiveCallback(PromiscReceiveCallback cb) override;
    bool SupportsSendFrom() const override;

  protected:
    void DoDispose() override;

  private:
    struct Entry
    {
        Ptr<Packet> packet;
        uint32_t inPort;
    };

    Ptr<Packet> DequeueData();
    void TransmitStart(Ptr<Packet> packet);
    void TransmitComplete(Ptr<Packet> packet);
    void SendPfcFrame(uint32_t priority, uint16_t quanta);
    void RefreshPause(uint32_t priority);
    void ApplyPfc(uint32_t priority, uint16_t quanta);
    void PauseExpired(uint32_t priority);
    Time QuantaTime(uint16_t quanta) const;
    /// Something comes to this port: a hold ends first (SetHeldDisturbedCallback).
    void Disturb();

    // Attributes (their defaults are in GetTypeId())
    DataRate m_rate;
    uint16_t m_mtu{0};
    Time m_pfcResponseTime;
    uint16_t m_pauseQuanta{0};
    Scheduler m_scheduler{};
    std::array<uint32_t, kClasses> m_weights{}; ///< WrrWeights, through its setter

    Ptr<Node> m_node;
    Ptr<DltraceRdmaChannel> m_channel;
    DltraceTxTimeCache m_txTimes;
    uint32_t m_ifIndex;
    Mac48Address m_address;
    bool m_txBusy;

    std::deque<Ptr<Packet>> m_control;
    std::array<std::deque<Entry>, kClasses> m_queues;
    std::array<uint64_t, kClasses> m_queueBytes;
    uint64_t m_totalQueueBytes;
    uint64_t m_peakQueueBytes;
    std::array<int64_t, kClasses> m_deficit;
    uint32_t m_drrIndex;

    // PFC: what we asked the peer (xoff) and what the peer asked us (paused).
    std::array<bool, kClasses> m_xoffSent;
    std::array<EventId, kClasses> m_refreshEvent;
    std::array<bool, kClasses> m_paused;
    std::array<Time, kClasses> m_pausedSince;
    std::array<EventId, kClasses> m_expiryEvent;
    std::array<PfcCounters, kClasses> m_pfc;

    uint64_t m_txBytes;
    std::array<uint64_t, kClasses> m_classTxBytes; ///< data bytes dequeued per class
    uint64_t m_controlTxBytes;
    uint64_t m_creditedTxBytes; ///< sent during holds (CreditTxBytes)
    uint64_t m_drops;

    /// A frame that reached the peer while this port was held, OFFSET into the hold.
    struct HeldFrame
    {
        Ptr<DltraceRdmaNetDevice> to;
        Ptr<Packet> frame;
        Time offset;
    };
    bool m_held;
    Time m_heldAt;
    Time m_heldTime;    ///< holds ended, in all
    Time m_txHeldTime;  ///< m_heldTime when the frame on the wire started
    std::vector<HeldFrame> m_heldFrames;
    Ptr<Packet> m_heldTx; ///< the frame whose transmission ended during the hold
    Time m_heldTxOffset;
    Callback<void, Ptr<DltraceRdmaNetDevice>> m_heldDisturbed;
    PullCallback m_pull;
    DequeueCallback m_dequeue;
    RdmaReceiveCallback m_rdmaRx;
    NetDevice::ReceiveCallback m_rxCallback;

    TracedCallback<Ptr<const Packet>> m_phyTxEndTrace;
    TracedCallback<Ptr<const Packet>> m_macTxDropTrace;
    TracedCallback<uint32_t, bool> m_pfcTxTrace;
};

} // namespace ns3

#endif /* DLTRACE_RDMA_NET_DEVICE_H */
