// SPDX-License-Identifier: GPL-2.0-only
// DltraceRdmaHeader: fixed fields, zero padding to the RoCEv2 (or minimum
// Ethernet) frame size, then the INT records when the packet carries them.
#include "dltrace-rdma-header.h"

#include "dltrace-attributes.h"

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(DltraceRdmaHeader);

namespace
{
// Bytes of the fixed fields written by Serialize.
constexpr uint32_t kFixedFields = 4 + 4 * 6 + 8 + 8 + 8;
} // namespace

TypeId
DltraceRdmaHeader::GetTypeId()
{
    static TypeId tid = DltraceTypeId<DltraceRdmaHeader, Header>("ns3::DltraceRdmaHeader");
    return tid;
}

TypeId
DltraceRdmaHeader::GetInstanceTypeId() const
{
    return GetTypeId();
}

// Frame bytes besides payload and INT records.
static uint32_t
BaseSize(uint8_t type, uint8_t flags)
{
    if (type != DltraceRdmaHeader::DATA || (flags & DltraceRdmaHeader::TRIMMED))
    {
        return DltraceRdmaHeader::kMinFrame;
    }
    return (flags & DltraceRdmaHeader::UET) ? DltraceRdmaHeader::kUetOverhead
                                            : DltraceRdmaHeader::kRoceOverhead;
}

uint32_t
DltraceRdmaHeader::GetSerializedSize() const
{
    uint32_t base = BaseSize(type, flags);
    if (flags & INT_ENABLED)
    {
        base += 2 + 16 * nHops;
    }
    return base;
}

void
DltraceRdmaHeader::AddHop(const DltraceIntHop& hop)
{
    if (nHops < kMaxHops)
    {
        hops[nHops++] = hop;
    }
}

void
DltraceRdmaHeader::Serialize(Buffer::Iterator i) const
{
    i.WriteU8(type);
    i.WriteU8(priority);
    i.WriteU8(flags);
    i.WriteU8(nHops);
    i.WriteHtonU32(srcHost);
    i.WriteHtonU32(dstHost);
    i.WriteHtonU32(qp);
    i.WriteHtonU32(psn);
    i.WriteHtonU64(flowHash);
    i.WriteHtonU32(msgSeq);
    i.WriteHtonU64(tsNs);
    i.WriteHtonU32(entropy);
    i.WriteHtonU64(sack);
    uint32_t base = BaseSize(type, flags);
    i.WriteU8(0, base - kFixedFields);
    if (flags & INT_ENABLED)
    {
        i.WriteHtonU16(nHops);
        for (uint32_t h = 0; h < nHops; ++h)
        {
            i.WriteHtonU32(hops[h].qlenBytes);
            i.WriteHtonU32(hops[h].txBytes);
            i.WriteHtonU32(hops[h].tsNs);
            i.WriteHtonU32(hops[h].rateMbps);
        }
    }
}

uint32_t
DltraceRdmaHeader::Deserialize(Buffer::Iterator start)
{
    Buffer::Iterator i = start;
    type = i.ReadU8();
    priority = i.ReadU8();
    flags = i.ReadU8();
    nHops = i.ReadU8();
    srcHost = i.ReadNtohU32();
    dstHost = i.ReadNtohU32();
    qp = i.ReadNtohU32();
    psn = i.ReadNtohU32();
    flowHash = i.ReadNtohU64();
    msgSeq = i.ReadNtohU32();
    tsNs = i.ReadNtohU64();
    entropy = i.ReadNtohU32();
    sack = i.ReadNtohU64();
    uint32_t base = BaseSize(type, flags);
    i.Next(base - kFixedFields);
    if (flags & INT_ENABLED)
    {
        nHops = static_cast<uint8_t>(i.ReadNtohU16());
        for (uint32_t h = 0; h < nHops && h < kMaxHops; ++h)
        {
            hops[h].qlenBytes = i.ReadNtohU32();
            hops[h].txBytes = i.ReadNtohU32();
            hops[h].tsNs = i.ReadNtohU32();
            hops[h].rateMbps = i.ReadNtohU32();
        }
    }
    return i.GetDistanceFrom(start);
}

void
DltraceRdmaHeader::Print(std::ostream& os) const
{
    static const char* const kNames[] = {"DATA", "ACK", "NACK", "CNP", "PFC", "PULL"};
    os << (type <= PULL ? kNames[type] : "?") << " prio=" << unsigned(priority) << " " << srcHost
       << "->" << dstHost << " qp=" << qp << " psn=" << psn;
    if (flags & ECN_CE)
    {
        os << " CE";
    }
}

} // namespace ns3
