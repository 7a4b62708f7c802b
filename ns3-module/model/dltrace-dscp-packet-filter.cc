// SPDX-License-Identifier: GPL-2.0-only
// DltraceDscpPacketFilter: the IPv4 header's class selector picks the band.
#include "dltrace-dscp-packet-filter.h"

#include "dltrace-attributes.h"

#include "ns3/ipv4-queue-disc-item.h"
#include "ns3/log.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceDscpPacketFilter");

NS_OBJECT_ENSURE_REGISTERED(DltraceDscpPacketFilter);

TypeId
DltraceDscpPacketFilter::GetTypeId()
{
    static TypeId tid =
        DltraceTypeId<DltraceDscpPacketFilter, Ipv4PacketFilter>("ns3::DltraceDscpPacketFilter");
    return tid;
}

DltraceDscpPacketFilter::DltraceDscpPacketFilter() = default;

int32_t
DltraceDscpPacketFilter::DoClassify(Ptr<QueueDiscItem> item) const
{
    Ptr<Ipv4QueueDiscItem> ipv4 = DynamicCast<Ipv4QueueDiscItem>(item);
    if (!ipv4)
    {
        return PacketFilter::PF_NO_MATCH;
    }
    const uint8_t classSelector = ipv4->GetHeader().GetTos() >> 5;
    return 7 - classSelector;
}

} // namespace ns3
