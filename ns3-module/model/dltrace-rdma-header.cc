// SPDX-License-Identifier: GPL-2.0-only
// DltraceRdmaHeader: fixed fields, zero padding to the RoCEv2 (or minimum
// Ethernet) frame size, then the INT records when the packet carries them.
#include "dltrace-rdma-header.h"

#include "dltrace-attributes.h"

#include <algorithm>
#include <cstring>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED(DltraceRdmaHeader);

namespace
{
// Bytes of the fixed fields written by Serialize.
constexpr uint32_t kFixedFields = 4 + 4 * 6 + 8 + 8 + 8;
// PeekFrom's first copy holds the fixed fields, and the INT records start
// at most kMinFrame bytes in.
static_assert(kFixedFields <= DltraceRdmaHeader::kMinFrame &&
                  DltraceRdmaHeader::kRoceOverhead <= DltraceRdmaHeader::kMinFrame &&
                  DltraceRdmaHeader::kUetOverhead <= DltraceRdmaHeader::kMinFrame,
              "the fixed fields and padding fit the first copy");

// Big-endian numbers at P (Serialize's WriteHtonU*).
uint16_t
LoadBe16(const uint8_t* p)
{
    return static_cast<uint16_t>((p[0] << 8) | p[1]);
}

uint32_t
LoadBe32(const uint8_t* p)
{
    uint32_t v;
    std::memcpy(&v, p, sizeof(v));
    return __builtin_bswap32(v);
}

uint64_t
LoadBe64(const uint8_t* p)
{
    uint64_t v;
    std::memcpy(&v, p, sizeof(v));
    return __builtin_bswap64(v);
}

void
StoreBe16(uint8_t* p, uint16_t v)
{
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}

void
StoreBe32(uint8_t* p, uint32_t v)
{
    v = __builtin_bswap32(v);
    std::memcpy(p, &v, sizeof(v));
}

void
StoreBe64(uint8_t* p, uint64_t v)
{
    v = __builtin_bswap64(v);
    std::memcpy(p, &v, sizeof(v));
}
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
    // Built in one array and written with one copy (ns-3's iterator writes
    // a number a byte at a time): the fixed fields, zeros to the frame's
    // base size, then the INT records.
    uint8_t b[kMinFrame + 2 + 16 * kMaxHops] = {};
    b[0] = type;
    b[1] = priority;
    b[2] = flags;
    b[3] = nHops;
    StoreBe32(b + 4, srcHost);
    StoreBe32(b + 8, dstHost);
    StoreBe32(b + 12, qp);
    StoreBe32(b + 16, psn);
    StoreBe64(b + 20, flowHash);
    StoreBe32(b + 28, msgSeq);
    StoreBe64(b + 32, tsNs);
    StoreBe32(b + 40, entropy);
    StoreBe64(b + 44, sack);
    uint32_t size = BaseSize(type, flags);
    if (flags & INT_ENABLED)
    {
        StoreBe16(b + size, nHops);
        for (uint32_t h = 0; h < nHops; ++h)
        {
            uint8_t* r = b + size + 2 + 16 * h;
            StoreBe32(r, hops[h].qlenBytes);
            StoreBe32(r + 4, hops[h].txBytes);
            StoreBe32(r + 8, hops[h].tsNs);
            StoreBe32(r + 12, hops[h].rateMbps);
        }
        size += 2 + 16 * nHops;
    }
    i.Write(b, size);
}

void
DltraceRdmaHeader::DecodeFixed(const uint8_t* b)
{
    type = b[0];
    priority = b[1];
    flags = b[2];
    nHops = b[3];
    srcHost = LoadBe32(b + 4);
    dstHost = LoadBe32(b + 8);
    qp = LoadBe32(b + 12);
    psn = LoadBe32(b + 16);
    flowHash = LoadBe64(b + 20);
    msgSeq = LoadBe32(b + 28);
    tsNs = LoadBe64(b + 32);
    entropy = LoadBe32(b + 40);
    sack = LoadBe64(b + 44);
}

void
DltraceRdmaHeader::DecodeHops(const uint8_t* b)
{
    nHops = static_cast<uint8_t>(LoadBe16(b));
    for (uint32_t h = 0; h < nHops && h < kMaxHops; ++h)
    {
        const uint8_t* r = b + 2 + 16 * h;
        hops[h].qlenBytes = LoadBe32(r);
        hops[h].txBytes = LoadBe32(r + 4);
        hops[h].tsNs = LoadBe32(r + 8);
        hops[h].rateMbps = LoadBe32(r + 12);
    }
}

uint32_t
DltraceRdmaHeader::Deserialize(Buffer::Iterator start)
{
    Buffer::Iterator i = start;
    uint8_t b[2 + 16 * kMaxHops];
    i.Read(b, kFixedFields);
    DecodeFixed(b);
    i.Next(BaseSize(type, flags) - kFixedFields);
    if (flags & INT_ENABLED)
    {
        i.Read(b, 2);
        i.Read(b + 2, 16 * std::min<uint32_t>(LoadBe16(b), kMaxHops));
        DecodeHops(b);
    }
    return i.GetDistanceFrom(start);
}

uint32_t
DltraceRdmaHeader::PeekFrom(const Packet& packet)
{
    uint8_t b[kMinFrame + 2 + 16 * kMaxHops];
    const uint32_t size = packet.GetSize();
    if (size < kFixedFields)
    {
        return 0; // no header (PeekHeader would read past the end)
    }
    packet.CopyData(b, std::min(size, kMinFrame));
    DecodeFixed(b);
    if (flags & INT_ENABLED)
    {
        const uint32_t base = BaseSize(type, flags);
        packet.CopyData(b, std::min<uint32_t>(size, sizeof(b)));
        DecodeHops(b + base);
    }
    return GetSerializedSize();
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
