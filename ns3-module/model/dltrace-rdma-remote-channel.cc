// SPDX-License-Identifier: GPL-2.0-only
// DltraceRdmaRemoteChannel: frames to the peer's MPI process, and the
// MpiReceivers that deliver them there (only with ns-3's mpi module).
#include "dltrace-rdma-remote-channel.h"

#include "dltrace-attributes.h"
#include "dltrace-canonical-scheduler.h"

#include "dltrace-rdma-net-device.h"

#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/simulator.h"

#include <algorithm>

#ifdef DLTRACE_NS3_MPI
#include "ns3/mpi-interface.h"
#include "ns3/mpi-receiver.h"
#endif

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceRdmaRemoteChannel");

NS_OBJECT_ENSURE_REGISTERED(DltraceRdmaRemoteChannel);
NS_OBJECT_ENSURE_REGISTERED(DltraceFrameDelayTag);

TypeId
DltraceFrameDelayTag::GetTypeId()
{
    static TypeId tid = DltraceTypeId<DltraceFrameDelayTag, Tag>("ns3::DltraceFrameDelayTag");
    return tid;
}

TypeId
DltraceFrameDelayTag::GetInstanceTypeId() const
{
    return GetTypeId();
}

uint32_t
DltraceFrameDelayTag::GetSerializedSize() const
{
    return sizeof(steps);
}

void
DltraceFrameDelayTag::Serialize(TagBuffer buffer) const
{
    buffer.WriteU64(uint64_t(steps));
}

void
DltraceFrameDelayTag::Deserialize(TagBuffer buffer)
{
    steps = int64_t(buffer.ReadU64());
}

void
DltraceFrameDelayTag::Print(std::ostream& os) const
{
    os << "delay=" << steps;
}

TypeId
DltraceRdmaRemoteChannel::GetTypeId()
{
    static TypeId tid =
        DltraceTypeId<DltraceRdmaRemoteChannel, DltraceRdmaChannel>("ns3::DltraceRdmaRemoteChannel");
    return tid;
}

DltraceRdmaRemoteChannel::DltraceRdmaRemoteChannel() = default;

bool
DltraceRdmaRemoteChannel::Supported()
{
#ifdef DLTRACE_NS3_MPI
    return true;
#else
    return false;
#endif
}

void
DltraceRdmaRemoteChannel::SetCrossingCallbacks(CrossingCallback send, CrossingCallback receive)
{
    m_onSend = send;
    m_onReceive = receive;
}

void
DltraceRdmaRemoteChannel::Connect()
{
#ifdef DLTRACE_NS3_MPI
    for (std::size_t i = 0; i < GetNDevices(); ++i)
    {
        Ptr<DltraceRdmaNetDevice> device = DynamicCast<DltraceRdmaNetDevice>(GetDevice(i));
        if (!device || device->GetNode()->GetSystemId() != Simulator::GetSystemId() ||
            device->GetObject<MpiReceiver>())
        {
            continue;
        }
        Ptr<MpiReceiver> receiver = CreateObject<MpiReceiver>();
        receiver->SetReceiveCallback(
            MakeCallback(&DltraceRdmaRemoteChannel::ReceiveRemote, this).Bind(device));
        device->AggregateObject(receiver);
    }
#endif
}

void
DltraceRdmaRemoteChannel::ReceiveRemote(Ptr<DltraceRdmaNetDevice> device, Ptr<Packet> packet)
{
    if (!m_onReceive.IsNull())
    {
        m_onReceive(packet);
    }
    // A transmission time before it arrives: queued now as a
    // DltraceFrameArrival, it takes its place among its time step's events
    // as in one process, whenever its MPI message came.
    DltraceFrameDelayTag delay;
    packet->RemovePacketTag(delay);
    DltraceFrameArrival::Schedule(device, packet, TimeStep(delay.steps));
}

void
DltraceRdmaRemoteChannel::Transmit(Ptr<Packet> packet, Ptr<DltraceRdmaNetDevice> src, Time txTime)
{
    Ptr<DltraceRdmaNetDevice> peer = GetPeer(src);
    if (!peer)
    {
        return;
    }
    if (peer->GetNode()->GetSystemId() == src->GetNode()->GetSystemId())
    {
        DltraceRdmaChannel::Transmit(packet, src, txTime);
        return;
    }
#ifdef DLTRACE_NS3_MPI
    // The frame is serialized now; a copy keeps the sender's packet untouched by tags.
    Ptr<Packet> frame = packet->Copy();
    if (!m_onSend.IsNull())
    {
        m_onSend(frame);
    }
    // It reaches the other process one time step before it arrives (not
    // more than its transmission time: still past the lookahead, the cable's
    // delay), and arrives then (ReceiveRemote).
    const Time early = std::min(txTime, TimeStep(1));
    DltraceFrameDelayTag delay;
    delay.steps = early.GetTimeStep();
    frame->AddPacketTag(delay);
    MpiInterface::SendPacket(frame,
                             Simulator::Now() + txTime + GetDelay() - early,
                             peer->GetNode()->GetId(),
                             peer->GetIfIndex());
#else
    NS_FATAL_ERROR("DltraceRdmaRemoteChannel: node " << peer->GetNode()->GetId() << " is in partition "
                                                     << peer->GetNode()->GetSystemId()
                                                     << ", but this ns-3 has no mpi module");
#endif
}

} // namespace ns3
