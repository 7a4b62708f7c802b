// SPDX-License-Identifier: GPL-2.0-only
// Classifies IPv4 packets into a PrioQueueDisc's bands by DSCP class
// selector, so the TCP transport's job priorities act at the switches.
#ifndef DLTRACE_DSCP_PACKET_FILTER_H
#define DLTRACE_DSCP_PACKET_FILTER_H

#include "ns3/ipv4-packet-filter.h"

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief DSCP class selector CSn (TOS bits 7-5 = n) to band 7 - n of an
 * 8-band PrioQueueDisc (band 0 is served first), so class 7 goes first.
 *
 * The TCP transport sets a job's sockets to TOS = priority << 5 (CS<priority>).
 */
class DltraceDscpPacketFilter : public Ipv4PacketFilter
{
  public:
    static TypeId GetTypeId();
    DltraceDscpPacketFilter();

  private:
    int32_t DoClassify(Ptr<QueueDiscItem> item) const override;
};

} // namespace ns3

#endif /* DLTRACE_DSCP_PACKET_FILTER_H */
