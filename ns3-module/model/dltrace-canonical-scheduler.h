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
    /// DEVICE receives PACKET after DELAY (in DEVICE's node context).
    static void Schedule(Ptr<DltraceRdmaNetDevice> device, Ptr<Packet> packet, Time delay);
    /// Its place among the arrivals of one time step: the receiving port's (unique to it).
    uint64_t GetPort() const;

  protected:
    void Notify() override;

  private:
    DltraceFrameArrival(Ptr<DltraceRdmaNetDevice> device, Ptr<Packet> packet);
    Ptr<DltraceRdmaNetDevice> m_device;
    Ptr<Packet> m_packet;
    uint64_t m_port;
};

/**
 * \ingroup dltrace
 * \brief A binary heap ordered by time, then every other event before the
 * frame arrivals (DltraceFrameArrival), those by port, then the others by
 * when they were queued (ns-3's order).
 *
 * ns-3's schedulers break ties by the order events were queued. One
 * process queues a frame's arrival when the frame starts; a partition
 * receiving it from another queues it when the MPI message is handled (at
 * the end of a lookahead window, or as it happens to arrive), so among the
 * events of its time step it could run in another place, and the runs
 * part by a frame's time or more. Ordered by port, no arrival's place
 * depends on when it was queued; every other event is queued by the
 * events before it, which (by the same argument) run in the same order.
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
    struct Entry
    {
        uint64_t ts;
        uint64_t rank; ///< 0: not an arrival; 1 + port: an arrival
        uint32_t uid;
        Event event;
    };
    /// Whether A runs after B (the heap's order, its top the first to run).
    static bool After(const Entry& a, const Entry& b);

    std::vector<Entry> m_heap;
};

} // namespace ns3

#endif /* DLTRACE_CANONICAL_SCHEDULER_H */
