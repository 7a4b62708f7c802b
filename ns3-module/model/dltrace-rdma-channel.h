// SPDX-License-Identifier: GPL-2.0-only
// A full-duplex point-to-point cable between two RDMA net devices: a frame
// arrives at the peer after its transmission time plus the propagation delay.
#ifndef DLTRACE_RDMA_CHANNEL_H
#define DLTRACE_RDMA_CHANNEL_H

#include "ns3/channel.h"
#include "ns3/nstime.h"
#include "ns3/packet.h"

namespace ns3
{

class DltraceRdmaNetDevice;

/**
 * \ingroup dltrace
 * \brief The cable of the RDMA fabric (two devices, one delay).
 */
class DltraceRdmaChannel : public Channel
{
  public:
    static TypeId GetTypeId();
    DltraceRdmaChannel();

    /// Connects DEVICE to one end (at most two).
    void Attach(Ptr<DltraceRdmaNetDevice> device);
    /// Delivers PACKET to the device at the other end of SRC after TX_TIME + Delay.
    virtual void Transmit(Ptr<Packet> packet, Ptr<DltraceRdmaNetDevice> src, Time txTime);
    /// The Delay attribute: propagation delay, one way.
    Time GetDelay() const;
    /// The device at the other end from DEVICE.
    Ptr<DltraceRdmaNetDevice> GetPeer(Ptr<const DltraceRdmaNetDevice> device) const;

    std::size_t GetNDevices() const override;
    Ptr<NetDevice> GetDevice(std::size_t i) const override;

  private:
    Time m_delay;
    Ptr<DltraceRdmaNetDevice> m_devices[2];
    uint32_t m_count;
};

} // namespace ns3

#endif /* DLTRACE_RDMA_CHANNEL_H */
