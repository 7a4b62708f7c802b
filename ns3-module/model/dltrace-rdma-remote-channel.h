// SPDX-License-Identifier: GPL-2.0-only
// A cable of the RDMA fabric whose two ends are simulated by different MPI
// processes (`dltrace simulate --partitions N` on ns-3's distributed simulator).
#ifndef DLTRACE_RDMA_REMOTE_CHANNEL_H
#define DLTRACE_RDMA_REMOTE_CHANNEL_H

#include "dltrace-rdma-channel.h"

#include "ns3/tag.h"

#include "ns3/callback.h"

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief The RDMA cable across a partition cut, as ns-3's
 * PointToPointRemoteChannel is for point-to-point links.
 *
 * Every frame (data, ACK, NACK, CNP, PFC pause and resume) that a device of
 * this process sends goes to the peer's process with
 * MpiInterface::SendPacket(packet, arrival time, peer node, peer ifIndex);
 * there ns-3's MPI receiver hands it to the peer device's Receive() through
 * the MpiReceiver that Connect() aggregated to it. The arrival time is the
 * sequential channel's: transmission time plus Delay, and Delay is what the
 * distributed simulators take as the lookahead of the cut.
 *
 * The crossing callbacks let the fabric carry what is not in the frame (the
 * message a data packet belongs to) in a packet tag: the send callback may
 * tag a copy of the frame before it is serialized, the receive callback sees
 * the frame before the device does.
 */
/**
 * \ingroup dltrace
 * \brief What is left of a frame's way when it reaches another partition:
 * one time step (it goes that much early, so that its arrival is queued
 * before its time step starts; see DltraceCanonicalScheduler).
 */
class DltraceFrameDelayTag : public Tag
{
  public:
    static TypeId GetTypeId();
    TypeId GetInstanceTypeId() const override;
    uint32_t GetSerializedSize() const override;
    void Serialize(TagBuffer buffer) const override;
    void Deserialize(TagBuffer buffer) override;
    void Print(std::ostream& os) const override;

    int64_t steps = 0; ///< ns-3 time steps
};

class DltraceRdmaRemoteChannel : public DltraceRdmaChannel
{
  public:
    /// Sees (and may tag) a frame that crosses the cut.
    using CrossingCallback = Callback<void, Ptr<Packet>>;

    static TypeId GetTypeId();
    DltraceRdmaRemoteChannel();

    /// True when this build has ns-3's mpi module (otherwise Transmit aborts).
    static bool Supported();

    /**
     * Makes the devices of this process that end this cable receive from the
     * other process: aggregates an MpiReceiver to each (call after both Attach).
     */
    void Connect();
    /// SEND sees each frame leaving this process, RECEIVE each frame arriving.
    void SetCrossingCallbacks(CrossingCallback send, CrossingCallback receive);

    void Transmit(Ptr<Packet> packet, Ptr<DltraceRdmaNetDevice> src, Time txTime) override;

  private:
    void ReceiveRemote(Ptr<DltraceRdmaNetDevice> device, Ptr<Packet> packet);

    CrossingCallback m_onSend;
    CrossingCallback m_onReceive;
};

} // namespace ns3

#endif /* DLTRACE_RDMA_REMOTE_CHANNEL_H */
