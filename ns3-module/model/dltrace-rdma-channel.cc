// SPDX-License-Identifier: GPL-2.0-only
// DltraceRdmaChannel: schedules each frame's arrival in the peer's node context.
#include "dltrace-rdma-channel.h"

#include "dltrace-attributes.h"
#include "dltrace-canonical-scheduler.h"

#include "dltrace-rdma-net-device.h"

#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/simulator.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceRdmaChannel");

NS_OBJECT_ENSURE_REGISTERED(DltraceRdmaChannel);

TypeId
DltraceRdmaChannel::GetTypeId()
{
    static TypeId tid = DltraceTypeId<DltraceRdmaChannel, Channel>("ns3::DltraceRdmaChannel")
            .AddTime("Delay",
                     "Propagation delay of the cable, one way (s). Default 1 us: about 200 m "
                     "of fibre, the topology helpers' default link delay.",
                     MicroSeconds(1), &DltraceRdmaChannel::m_delay, Seconds(0));
    return tid;
}

DltraceRdmaChannel::DltraceRdmaChannel()
    : m_count(0)
{
}

void
DltraceRdmaChannel::Attach(Ptr<DltraceRdmaNetDevice> device)
{
    if (m_count >= 2)
    {
        NS_FATAL_ERROR("DltraceRdmaChannel: a cable has two ends; a third device was attached");
    }
    m_devices[m_count++] = device;
}

Ptr<DltraceRdmaNetDevice>
DltraceRdmaChannel::GetPeer(Ptr<const DltraceRdmaNetDevice> device) const
{
    return m_devices[0] == device ? m_devices[1] : m_devices[0];
}

void
DltraceRdmaChannel::Transmit(Ptr<Packet> packet, Ptr<DltraceRdmaNetDevice> src, Time txTime)
{
    Ptr<DltraceRdmaNetDevice> peer = GetPeer(src);
    if (!peer)
    {
        return;
    }
    DltraceFrameArrival::Schedule(peer, packet, txTime + m_delay, src);
}

Time
DltraceRdmaChannel::GetDelay() const
{
    return m_delay;
}

std::size_t
DltraceRdmaChannel::GetNDevices() const
{
    return m_count;
}

Ptr<NetDevice>
DltraceRdmaChannel::GetDevice(std::size_t i) const
{
    return i < m_count ? Ptr<NetDevice>(m_devices[i]) : nullptr;
}

} // namespace ns3
