// SPDX-License-Identifier: GPL-2.0-only
// A GPU's RoCEv2 NIC: its queue pairs served round robin onto its ports
// (a GPU of a multi-GPU host also has its NVLink port), and the receiving side of every QP that sends to it (in-order delivery,
// ACK/NACK, and DCQCN's notification point that turns ECN marks into CNPs).
#ifndef DLTRACE_RDMA_NIC_H
#define DLTRACE_RDMA_NIC_H

#include "dltrace-rdma-queue-pair.h"
#include "dltrace-uet-pdc.h"

#include "ns3/callback.h"
#include "ns3/event-id.h"
#include "ns3/object-factory.h"
#include "ns3/object.h"

#include <cstdint>
#include <memory>
#include <map>
#include <unordered_map>
#include <vector>

namespace ns3
{

class DltraceRdmaNetDevice;
class DltraceRdmaRouting;

/**
 * \ingroup dltrace
 * \brief The RDMA NIC of one host (aggregated to its Node).
 *
 * A node with several links (a GPU with its NVLink link and its NIC ports)
 * sends each QP, and the ACKs, NACKs and CNPs of what it receives, on the
 * first link of the path models::TopologyGraph::NextLink gives (the per-flow
 * ECMP rule the switches route by), so every QP keeps one port. Relays
 * (rail-aligned and PXN paths through another GPU) are not modelled: a GPU
 * node does not forward.
 *
 * Sending: when a port is free the NIC looks at that port's QPs round robin from
 * the one after the last served and sends the first that has data, whose
 * class is not paused, whose window allows and whose pacing time has come;
 * if none can send now it wakes the port when the earliest pacing time comes.
 *
 * Receiving: a packet with the expected PSN is accepted; every AckInterval
 * packets and at the end of every message an ACK carries the last in-order
 * PSN, the packet's send time and its INT records back. A PSN beyond the
 * expected one gets one NACK per gap; a duplicate is dropped. A packet
 * marked CE makes the NIC send a CNP to its QP unless it sent one less than
 * CnpInterval ago (DCQCN's notification point).
 */
class DltraceRdmaNic : public Object
{
  public:
    /// A whole message arrived: source host, its QP, message number, bytes.
    using DeliverCallback = Callback<void, uint32_t, uint32_t, uint32_t, uint64_t>;

    static TypeId GetTypeId();
    DltraceRdmaNic();

    /// This NIC is host HOST and sends through DEVICE (its only port).
    void Setup(uint32_t host, Ptr<DltraceRdmaNetDevice> device);
    /// This NIC is node HOST of ROUTING's graph; its ports come with AddPort().
    void Setup(uint32_t host, std::shared_ptr<DltraceRdmaRouting> routing);
    /// Adds a port: DEVICE on graph link LINK.
    void AddPort(Ptr<DltraceRdmaNetDevice> device, uint32_t link);
    /// Congestion control of new QPs ("" or "none": line rate).
    void SetCongestionControl(const ObjectFactory& factory);
    /// Opens a QP to DST in class PRIORITY on the path FLOW_HASH picks; BASE_RTT for its CC.
    Ptr<DltraceRdmaQueuePair> CreateQueuePair(uint32_t dst, uint32_t priority, uint64_t flowHash, Time baseRtt);
    void SetDeliverCallback(DeliverCallback cb);

    /// The first port (null before Setup).
    Ptr<DltraceRdmaNetDevice> GetDevice() const;
    uint32_t GetPortCount() const;
    uint32_t GetMtu() const;
    uint64_t GetCnpsSent() const;
    uint64_t GetNacksSent() const;
    /// UET: receive UET frames (RCCC: pull for the senders at line rate).
    void EnableUet(bool rccc);
    /// UET: opens a PDC to DST in class PRIORITY; its packets spray around FLOW_HASH.
    Ptr<DltraceUetPdc> CreateUetPdc(uint32_t dst, uint32_t priority, uint64_t flowHash,
                                    const DltraceUetPdc::Fabric& fabric);
    const std::vector<Ptr<DltraceUetPdc>>& GetUetPdcs() const;
    /// UET: NACKs this NIC sent for trimmed headers it received.
    uint64_t GetUetNacksSent() const;

    /// A fast-forward credited BYTES of QPN's (on host SRC) message being received.
    void FastForwardReceiver(uint32_t srcHost, uint32_t qpn, uint64_t bytes);

  protected:
    void DoDispose() override;

  private:
    /// A data packet a receiver took in (OutOfOrder: one that waits for a gap before it).
    struct Placed
    {
        uint32_t bytes;
        uint32_t msgSeq;
        bool last;
    };
    struct Receiver
    {
        uint32_t expected = 0;
        bool nackSent = false;
        bool cnpSent = false;
        Time lastCnp;
        uint64_t messageBytes = 0;
        std::map<uint32_t, Placed> placed; ///< OutOfOrder: PSNs above `expected` that arrived
    };
    /// Takes in the packet of PSN r.expected; true when it is to be acknowledged.
    bool Place(Receiver& r, uint32_t srcHost, uint32_t qpn, const Placed& p);

    /// The port a packet to DST on FLOW_HASH's path leaves by.
    uint32_t PortTo(uint32_t dst, uint64_t flowHash) const;
    Ptr<Packet> Pull(uint32_t port);
    void Wake();
    void Receive(Ptr<DltraceRdmaNetDevice> device, Ptr<Packet> packet);
    void ReceiveData(Ptr<Packet> packet, const DltraceRdmaHeader& h);
    void SendControl(uint8_t type, const DltraceRdmaHeader& data, uint32_t psn, bool withInt);

    // Attributes (their defaults are in GetTypeId())
    uint32_t m_mtu{0};
    uint32_t m_ackInterval{0};
    Time m_cnpInterval;
    bool m_outOfOrder{false};
    uint32_t m_oooNackGap{0};

    struct Port
    {
        Ptr<DltraceRdmaNetDevice> device;
        std::vector<uint32_t> qps; ///< indices into m_qps of the QPs it sends
        uint32_t rr = 0;
        std::vector<uint32_t> pdcs; ///< UET: indices into m_pdcs
        uint32_t pdcRr = 0;
        EventId wakeEvent;
    };

    uint32_t m_host;
    std::shared_ptr<DltraceRdmaRouting> m_routing; ///< null: one port, no choice
    std::vector<Port> m_ports;
    std::unordered_map<uint32_t, uint32_t> m_portOfLink; ///< graph link -> port
    ObjectFactory m_ccFactory;
    bool m_haveCc;
    std::vector<Ptr<DltraceRdmaQueuePair>> m_qps;
    std::vector<Ptr<DltraceUetPdc>> m_pdcs;
    std::unique_ptr<DltraceUetReceiver> m_uet; ///< with EnableUet
    Ptr<Packet> PullUet(Port& port);
    void ReceiveUet(Ptr<Packet> packet, const DltraceRdmaHeader& h);
    std::unordered_map<uint64_t, Receiver> m_receivers;
    DeliverCallback m_deliver;

    uint64_t m_cnpsSent;
    uint64_t m_nacks;
};

} // namespace ns3

#endif /* DLTRACE_RDMA_NIC_H */
