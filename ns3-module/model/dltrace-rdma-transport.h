// SPDX-License-Identifier: GPL-2.0-only
// The schedule engine's Transport on the RDMA fabric: each (job, endpoint,
// peer, channel) that would get a TCP connection gets a queue pair, each
// message is one RDMA send, and every message's timing is recorded.
#ifndef DLTRACE_RDMA_TRANSPORT_H
#define DLTRACE_RDMA_TRANSPORT_H

#include "ns3/dltrace-rdma-queue-pair.h"
#include "ns3/dltrace-uet-pdc.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/packet.h"
#include "ns3/tag.h"

#include "ns3/dltrace-simulated-transport.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace ns3
{

class DltraceRdmaHelper;
class DltraceRdmaTransport;

/**
 * \ingroup dltrace
 * \brief The jobs' side of an RDMA fabric: endpoints on hosts, their QPs and messages.
 *
 * A QP is opened on first use for (job, endpoint, peer, channel), in the
 * job's traffic class, on the path models::FlowHash gives the same pair
 * and channel (the TCP transport's path). A message of 0 bytes, and a
 * notice (a same-host step the model times), travels as a 1-byte send.
 */
class DltraceRdmaNetwork : public Object
{
  public:
    /// One message: who, how much, when posted, delivered and acknowledged.
    struct MessageRecord
    {
        uint32_t job;
        int32_t src;
        int32_t dst;
        uint16_t channel;
        uint32_t priority;
        uint64_t bytes;
        Time posted;
        Time delivered; ///< zero until delivered
        Time ideal;     ///< completion time on an empty network
    };
    /// A partitioned run: a message from a host of another partition, delivered here (its
    /// MessageRecord is the sender's partition's; a route's messages arrive in order).
    struct RemoteDelivery
    {
        uint32_t job;
        int32_t src;
        int32_t dst;
        uint16_t channel;
        Time delivered;
    };
    /// One QP (or, on a UET fabric, one PDC): endpoints, counters.
    struct QpRecord
    {
        uint32_t job;
        int32_t src;
        int32_t dst;
        uint16_t channel;
        Ptr<DltraceRdmaQueuePair> qp; ///< null on a UET fabric
        Ptr<DltraceUetPdc> pdc;       ///< UET only
    };

    static TypeId GetTypeId();
    DltraceRdmaNetwork();

    /// The fabric the jobs run on (must outlive this object's use).
    void SetFabric(DltraceRdmaHelper* fabric);
    /// Job JOB's endpoint E runs on host HOSTS[E]; its traffic is in class PRIORITY.
    void AddJob(uint32_t job, std::vector<uint32_t> hosts, uint32_t priority);
    void Register(uint32_t job, int32_t endpoint, DltraceRdmaTransport* transport);
    void Unregister(uint32_t job, int32_t endpoint);
    /// Posts a message on LANE (DltraceJob::GetLane: its channel, and the
    /// RailMode that routes it); ON_SENT runs when it is acknowledged (a
    /// relayed one: when the relay has it).
    void Post(uint32_t job,
              int32_t src,
              const DltraceMessage& message,
              std::function<void()> onSent,
              uint16_t lane);

    const std::vector<MessageRecord>& GetMessages() const;
    const std::vector<QpRecord>& GetQueuePairs() const;
    /// Partitioned run: what arrived here from other partitions, in arrival order.
    const std::vector<RemoteDelivery>& GetRemoteDeliveries() const;
    /// Messages delivered so far.
    uint64_t GetDeliveredCount() const;
    /// Called after every Post (a fast-forward watching the network wakes up).
    void SetPostCallback(Callback<void> cb);
    /// Called with the index of the QP (in GetQueuePairs()) a message is about
    /// to be posted on (a fast-forward ends the holds it would cross).
    void SetBeforePostCallback(Callback<void, size_t> cb);

    /**
     * A partitioned run: host H is simulated here when SYSTEM_ID[H] is this
     * process's. A message to a host of another partition is named in a
     * DltraceRdmaMessageTag on its data packets as they cross the cut
     * (TagCrossing on the sending side, NoteCrossing on the receiving side),
     * since only the sender's process saw it posted.
     */
    void EnablePartitions(const std::vector<uint32_t>& systemId, uint32_t self);
    /// A frame leaves this process: a data packet of a message posted here gets its tag.
    void TagCrossing(Ptr<Packet> frame);
    /// A frame arrives from another process: a data packet for a host here names its message.
    void NoteCrossing(Ptr<Packet> frame);

  protected:
    void DoDispose() override;

  private:
    struct Pending
    {
        uint64_t tag;
        uint64_t bytes;
        bool notice;
        size_t record;
        uint64_t relay; ///< its Relay in m_relays, or kNoRelay
    };
    static constexpr uint64_t kNoRelay = UINT64_MAX;
    /// A message NCCL relays through another GPU (PXN, or a rail-aligned
    /// ring's hop to the GPU on its channel's rail): store and forward, each
    /// stage (NVLink to the relay, the network between the rails' NICs,
    /// NVLink from the relay) a send on a queue pair of its own, the
    /// network stage on the path models::ConnectionPath gives the TCP
    /// transport and the flow simulator.
    struct Relay
    {
        uint32_t job;
        int32_t src;
        int32_t dst;
        uint16_t channel;
        std::vector<size_t> stages; ///< routes, in order
        size_t stage;               ///< the one carrying it now
    };
    struct Route
    {
        size_t qpRecord;
        std::deque<Pending> inFlight; ///< posted, not yet delivered (in order); to another partition: not yet acknowledged
        std::deque<std::function<void()>> unacked; ///< posted, not yet acknowledged
        bool remote = false;     ///< to a host of another partition
        uint32_t firstSeq = 0;   ///< remote: the QP message number of inFlight.front()
    };
    /// What the receiving partition needs of a message from another one.
    struct Incoming
    {
        uint32_t job;
        int32_t src;
        int32_t dst;
        uint16_t channel;
        uint64_t tag;
        uint64_t bytes;
        bool notice;
    };

    Route& GetRoute(uint32_t job, int32_t src, int32_t dst, uint16_t channel);
    /// The route of STAGE of (JOB, SRC, DST, CHANNEL)'s relayed messages:
    /// from graph node FROM to TO, on the ECMP path of HASH.
    size_t GetStageRoute(uint32_t job,
                         int32_t src,
                         int32_t dst,
                         uint16_t channel,
                         uint8_t stage,
                         uint32_t from,
                         uint32_t to,
                         uint64_t hash);
    /// A QP from graph node FROM to TO for (JOB, SRC, DST, CHANNEL); its route's index.
    size_t NewRoute(uint32_t job, int32_t src, int32_t dst, uint16_t channel, uint32_t from, uint32_t to, uint64_t hash);
    /// Sends PENDING on ROUTE (ON_SENT when it is acknowledged).
    void Send(size_t route, const Pending& pending, uint64_t wireBytes, std::function<void()> onSent);
    void Delivered(uint32_t dstHost, uint32_t srcHost, uint32_t qpn, uint32_t msgSeq, uint64_t bytes);
    /// HOST's NIC hands what it delivers to Delivered (once per host).
    void HookDelivery(uint32_t host);
    void Acked(size_t route, uint32_t msgSeq, uint64_t bytes);
    Time IdealTime(uint32_t srcHost, uint32_t dstHost, uint64_t flowHash, uint64_t bytes) const;

    DltraceRdmaHelper* m_fabric;
    std::vector<std::vector<uint32_t>> m_hosts; ///< per job: host per endpoint
    std::vector<uint32_t> m_priority;           ///< per job
    std::map<std::pair<uint32_t, int32_t>, DltraceRdmaTransport*> m_transports;
    std::map<std::tuple<uint32_t, int32_t, int32_t, uint16_t>, size_t> m_routeIndex;
    std::map<std::tuple<uint32_t, int32_t, int32_t, uint16_t, uint8_t>, size_t> m_stageIndex;
    std::unordered_map<uint64_t, Relay> m_relays; ///< relayed messages on their way, by id
    uint64_t m_nextRelay = 0;
    std::vector<Route> m_routes;
    std::unordered_map<uint64_t, size_t> m_routeOfQp; ///< (src host << 32 | qpn) -> route
    std::vector<bool> m_deliverHooked;                ///< per host
    std::vector<MessageRecord> m_messages;
    std::vector<RemoteDelivery> m_remoteDeliveries;
    std::vector<QpRecord> m_qps;
    uint64_t m_delivered;
    Callback<void> m_posted;
    Callback<void, size_t> m_beforePost;
    std::vector<bool> m_localHost; ///< partitioned run: per host, simulated here (empty: all)
    /// Messages from other partitions, by (source host, QP number, the QP's message number).
    std::map<std::tuple<uint32_t, uint32_t, uint32_t>, Incoming> m_incoming;
};

/**
 * \ingroup dltrace
 * \brief The message a data packet belongs to, carried across a partition
 * cut (serialized with the packet by ns-3's MPI interface).
 */
class DltraceRdmaMessageTag : public Tag
{
  public:
    static TypeId GetTypeId();
    TypeId GetInstanceTypeId() const override;
    uint32_t GetSerializedSize() const override;
    void Serialize(TagBuffer buffer) const override;
    void Deserialize(TagBuffer buffer) override;
    void Print(std::ostream& os) const override;

    uint32_t job = 0;
    int32_t src = 0;
    int32_t dst = 0;
    uint16_t channel = 0;
    uint64_t tag = 0;
    uint64_t bytes = 0;
    uint8_t notice = 0;
};

/**
 * \ingroup dltrace
 * \brief One endpoint's transport on the RDMA fabric.
 */
class DltraceRdmaTransport : public DltraceSimulatedTransport
{
  public:
    DltraceRdmaTransport(Ptr<DltraceRdmaNetwork> network, uint32_t job, int32_t self);
    ~DltraceRdmaTransport() override;

    /// From the network: a whole message (or notice) from PEER arrived.
    void Arrived(const DltraceMessage& message);
    /// LANES(peer, channel, tag): the lane of a message (DltraceJob::GetLane); without it, its channel.
    void SetLanes(std::function<uint16_t(int32_t, uint16_t, uint64_t)> lanes);

  protected:
    void Post(const DltraceMessage& message, std::function<void()> onSent) override;

  private:
    Ptr<DltraceRdmaNetwork> m_network;
    uint32_t m_job;
    int32_t m_self;
    std::function<uint16_t(int32_t, uint16_t, uint64_t)> m_lanes;
};

} // namespace ns3

#endif /* DLTRACE_RDMA_TRANSPORT_H */
