// SPDX-License-Identifier: GPL-2.0-only
// The one header every RDMA fabric frame carries: RoCEv2 data, ACK, NACK and
// CNP packets and 802.1Qbb PFC frames, with HPCC's per-hop INT records.
#ifndef DLTRACE_RDMA_HEADER_H
#define DLTRACE_RDMA_HEADER_H

#include "ns3/header.h"
#include "ns3/packet.h"

#include <array>
#include <cstdint>

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief One INT record a switch stamps on a data packet at egress (HPCC).
 *
 * Full-precision fields (HPCC's paper packs the same four values into 8
 * bytes per hop; we keep 16 so no wrap-around arithmetic hides a bug).
 * txBytes and tsNs are kept modulo 2^32: differences are taken modulo 2^32.
 */
struct DltraceIntHop
{
    uint32_t qlenBytes = 0; ///< egress queue of the port after dequeue, bytes
    uint32_t txBytes = 0;   ///< bytes the port has transmitted, modulo 2^32
    uint32_t tsNs = 0;      ///< time of the stamp, ns modulo 2^32
    uint32_t rateMbps = 0;  ///< the port's line rate, Mb/s
};

/**
 * \ingroup dltrace
 * \brief Header of an RDMA fabric frame.
 *
 * The serialized size is the frame's wire size without payload, so a
 * packet's size is what it occupies on the link: a RoCEv2 data packet is
 * Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4 + FCS 4 = 62 bytes plus
 * payload; ACK, NACK and CNP frames (BTH + AETH or the CNP's 16 reserved
 * bytes) and PFC frames are padded to Ethernet's 64-byte minimum. With INT,
 * 2 bytes plus 16 per hop follow (HPCC). A UET data frame has 64 bytes of
 * headers (uet-htsim's); a trimmed one, an ACK and a NACK are 64 bytes.
 */
class DltraceRdmaHeader : public Header
{
  public:
    /// What the frame is.
    enum Type : uint8_t
    {
        DATA = 0,
        ACK = 1,
        NACK = 2,
        CNP = 3,
        PFC = 4,
        PULL = 5, ///< UET RCCC: the receiver grants sack bytes of credit
    };
    /// Flag bits.
    enum Flag : uint8_t
    {
        ECN_CE = 1,       ///< a switch marked congestion (IP ECN = CE)
        LAST = 2,         ///< last packet of a message
        INT_ENABLED = 4,  ///< switches stamp INT records (HPCC)
        UET = 8,          ///< an Ultra Ethernet transport frame: flowHash is the packet's entropy
        TRIMMED = 16,     ///< UET data whose payload a full switch queue cut off (a header only)
        LAST_HOP_TRIM = 32, ///< UET: trimmed at the port to its destination host
        ACK_REQUEST = 64, ///< UET data: acknowledge at once (the sender's window or backlog ran out)
    };
    static constexpr uint32_t kMaxHops = 8;
    static constexpr uint32_t kRoceOverhead = 62; ///< data frame bytes besides payload
    static constexpr uint32_t kMinFrame = 64;     ///< Ethernet minimum frame
    static constexpr uint32_t kUetOverhead = 64;  ///< UET data frame bytes besides payload (uet-htsim's header)

    static TypeId GetTypeId();
    TypeId GetInstanceTypeId() const override;
    uint32_t GetSerializedSize() const override;
    void Serialize(Buffer::Iterator start) const override;
    uint32_t Deserialize(Buffer::Iterator start) override;
    void Print(std::ostream& os) const override;
    /// PeekHeader's work, from one copy of the frame's first bytes rather
    /// than ns-3's iterator, which reads a byte at a time (every port a
    /// frame crosses peeks it two or three times: a sixth of a run's CPU).
    /// Returns the header's bytes (0 for a packet shorter than its fields).
    uint32_t PeekFrom(const Packet& packet);

    bool HasFlag(Flag f) const
    {
        return (flags & f) != 0;
    }
    void SetFlag(Flag f)
    {
        flags |= f;
    }
    /// Appends a hop record (ignored past kMaxHops).
    void AddHop(const DltraceIntHop& hop);

    uint8_t type = DATA;
    uint8_t priority = 0; ///< traffic class 0..7 (PFC: the class paused)
    uint8_t flags = 0;
    uint8_t nHops = 0;
    uint32_t srcHost = 0;   ///< sending host (ACK/NACK/CNP: the receiver that answers)
    uint32_t dstHost = 0;   ///< destination host
    uint32_t qp = 0;        ///< the sender's queue pair number
    uint32_t psn = 0;       ///< DATA: its PSN; ACK: last in-order PSN (UET: the next expected); NACK: the expected PSN (UET: the trimmed one)
    uint64_t flowHash = 0;  ///< ECMP hash of the QP (one path per QP; UET: of the packet's entropy)
    uint32_t msgSeq = 0;    ///< DATA: the QP's message number; PFC: pause quanta (0 = resume); UET ACK: the PSN acknowledged
    uint32_t entropy = 0;   ///< UET: the entropy value the load balancer chose (echoed in ACK and NACK)
    uint64_t sack = 0;      ///< UET ACK: bit i set = PSN psn + i received; DATA: bytes the sender still needs credit for; PULL: bytes granted
    uint64_t tsNs = 0;      ///< DATA: send time; ACK/NACK: the echoed send time (TIMELY RTT)
    std::array<DltraceIntHop, kMaxHops> hops{};

  private:
    /// The fixed fields from their bytes as Serialize writes them.
    void DecodeFixed(const uint8_t* b);
    /// The INT records from their count on (Serialize's layout).
    void DecodeHops(const uint8_t* b);
};

} // namespace ns3

#endif /* DLTRACE_RDMA_HEADER_H */
