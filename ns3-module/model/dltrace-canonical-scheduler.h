// SPDX-License-Identifier: GPL-2.0-only
// An event queue whose order among events of one time step does not depend
// on when a frame's arrival was queued, so that a run in partitions (where
// a frame from another process is queued when its MPI message is handled)
// processes the same events in the same order as one process.
#ifndef DLTRACE_CANONICAL_SCHEDULER_H
#define DLTRACE_CANONICAL_SCHEDULER_H

#include "ns3/event-impl.h"
#include "ns3/nstime.h"
#include "ns3/packet.h"
#include "ns3/ptr.h"
#include "ns3/scheduler.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ns3
{

class DltraceRdmaNetDevice;

/**
 * \ingroup dltrace
 * \brief A frame reaching a device of the RDMA fabric: the event the
 * DltraceCanonicalScheduler orders by port rather than by when it was queued.
 */
class DltraceFrameArrival : public EventImpl
{
  public:
    /**
     * DEVICE receives PACKET after DELAY (in DEVICE's node context). FROM,
     * the port that sent it (none for a frame from another partition): a
     * hold of FROM (DltraceRdmaNetDevice::Hold) keeps it or makes it later.
     */
    static void Schedule(Ptr<DltraceRdmaNetDevice> device,
                         Ptr<Packet> packet,
                         Time delay,
                         Ptr<DltraceRdmaNetDevice> from = nullptr);
    /// Its place among the arrivals of one time step: the receiving port's (unique to it).
    uint64_t GetPort() const;
    /// The arrival being scheduled now (Schedule, for the scheduler's Insert), or null.
    static const DltraceFrameArrival* Scheduling();

  protected:
    void Notify() override;

  private:
    DltraceFrameArrival(Ptr<DltraceRdmaNetDevice> device, Ptr<Packet> packet, Ptr<DltraceRdmaNetDevice> from);
    Ptr<DltraceRdmaNetDevice> m_device;
    Ptr<Packet> m_packet;
    uint64_t m_port;
    Ptr<DltraceRdmaNetDevice> m_from;
    Time m_fromHeld; ///< m_from's held time when this was scheduled
};

/**
 * \ingroup dltrace
 * \brief A 4-ary heap ordered by time; within a time step the frame
 * arrivals (DltraceFrameArrival) first, by port, then every other event in
 * the order queued (ns-3's order).
 *
 * ns-3's schedulers break ties by the order events were queued. One
 * process queues a frame's arrival when the frame starts; a partition
 * receiving it from another queues it when the MPI message is handled (at
 * the end of a lookahead window, or as it happens to arrive), so among the
 * events of its time step it could run in another place, and the runs
 * part by a frame's time or more. Ordered by port, no arrival's place
 * depends on when it was queued, as long as it is queued before its time
 * step starts (DltraceRdmaRemoteChannel hands a frame to the other process
 * a time step early for that); every other event is queued by the
 * events before it, which (by the same argument) run in the same order.
 * Arrivals first is the order a frame usually had in ns-3's heap too (it
 * was queued a propagation delay ahead): HPCC's ring iteration comes out
 * the same to the nanosecond, where arrivals last made it 1% shorter.
 */
class DltraceCanonicalScheduler : public Scheduler
{
  public:
    static TypeId GetTypeId();
    DltraceCanonicalScheduler();
    ~DltraceCanonicalScheduler() override;

    void Insert(const Event& ev) override;
    bool IsEmpty() const override;
    Event PeekNext() const override;
    Event RemoveNext() override;
    void Remove(const Event& ev) override;

  private:
    /// An event in 32 bytes (ns-3's Event and the order within its time step would take 40).
    struct Entry
    {
        uint64_t ts;
        uint64_t order; ///< within ts: an arrival's port, or kOther | the uid
        EventImpl* impl;
        uint32_t uid;
        uint32_t context;
    };
    static constexpr uint64_t kOther = uint64_t(1) << 63;
    /// Whether A runs after B.
    struct After
    {
        bool operator()(const Entry& a, const Entry& b) const
        {
            return a.ts != b.ts ? a.ts > b.ts : a.order > b.order;
        }
    };

    /// Puts E at I or above it (I is a hole).
    void SiftUp(size_t i, const Entry& e);
    /// Puts E at I or below it (I is a hole).
    void SiftDown(size_t i, const Entry& e);
    void RemoveAt(size_t i);

    std::vector<Entry> m_heap;
};

} // namespace ns3

#endif /* DLTRACE_CANONICAL_SCHEDULER_H */
