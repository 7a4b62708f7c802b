// A host's RoCEv2 NIC: its queue pairs served round robin onto one port,
// and the receiving side of every QP that sends to it (in-order delivery,
// ACK/NACK, and DCQCN's notification point that turns ECN marks into CNPs).
#ifndef DLTRACE_RDMA_NIC_H
#define DLTRACE_RDMA_NIC_H

#include "dltrace-rdma-queue-pair.h"

#include "ns3/callback.h"
#include "ns3/event-id.h"
#include "ns3/object-factory.h"
#include "ns3/object.h"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace ns3
{

class DltraceRdmaNetDevice;

/**
 * \ingroup dltrace
 * \brief The RDMA NIC of one host (aggregated to its Node).
 *
 * Sending: when the port is free the NIC looks at its QPs round robin from
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

    /// This NIC is host HOST and sends through DEVICE.
    void Setup(uint32_t host, Ptr<DltraceRdmaNetDevice> device);
    /// Congestion control of new QPs ("" or "none": line rate).
    void SetCongestionControl(const ObjectFactory& factory);
    /// Opens a QP to DST in class PRIORITY on the path FLOW_HASH picks; BASE_RTT for its CC.
    Ptr<DltraceRdmaQueuePair> CreateQueuePair(uint32_t dst, uint32_t priority, uint64_t flowHash, Time baseRtt);
    void SetDeliverCallback(DeliverCallback cb);

    Ptr<DltraceRdmaNetDevice> GetDevice() const;
    uint32_t GetMtu() const;
    uint64_t GetCnpsSent() const;
    uint64_t GetNacksSent() const;

  protected:
    void DoDispose() override;

  private:
    struct Receiver
    {
        uint32_t expected = 0;
        bool nackSent = false;
        bool cnpSent = false;
        Time lastCnp;
        uint64_t messageBytes = 0;
    };

    Ptr<Packet> Pull();
    void Wake();
    void Receive(Ptr<DltraceRdmaNetDevice> device, Ptr<Packet> packet);
    void ReceiveData(Ptr<Packet> packet, const DltraceRdmaHeader& h);
    void SendControl(uint8_t type, const DltraceRdmaHeader& data, uint32_t psn, bool withInt);

    // Attributes (their defaults are in GetTypeId())
    uint32_t m_mtu{0};
    uint32_t m_ackInterval{0};
    Time m_cnpInterval;

    uint32_t m_host;
    Ptr<DltraceRdmaNetDevice> m_device;
    ObjectFactory m_ccFactory;
    bool m_haveCc;
    std::vector<Ptr<DltraceRdmaQueuePair>> m_qps;
    uint32_t m_rr;
    EventId m_wakeEvent;
    std::unordered_map<uint64_t, Receiver> m_receivers;
    DeliverCallback m_deliver;

    uint64_t m_cnpsSent;
    uint64_t m_nacks;
};

} // namespace ns3

#endif /* DLTRACE_RDMA_NIC_H */
