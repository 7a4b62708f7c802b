// SPDX-License-Identifier: GPL-2.0-only
// DltraceCanonicalScheduler and DltraceFrameArrival.
#include "dltrace-canonical-scheduler.h"

#include "dltrace-attributes.h"

#include "dltrace-rdma-net-device.h"

#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/simulator.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceCanonicalScheduler");

NS_OBJECT_ENSURE_REGISTERED(DltraceCanonicalScheduler);

DltraceFrameArrival::DltraceFrameArrival(Ptr<DltraceRdmaNetDevice> device,
                                         Ptr<Packet> packet,
                                         Ptr<DltraceRdmaNetDevice> from)
    : m_device(device),
      m_packet(packet),
      m_port((uint64_t(device->GetNode()->GetId()) << 32) | device->GetIfIndex()),
      m_from(from),
      m_fromHeld(from ? from->GetHeldTime() : Time())
{
}

namespace
{
// The arrival Schedule is handing the simulator: Insert knows it by its
// address (cheaper than asking every event its type).
const DltraceFrameArrival* g_scheduling = nullptr;
} // namespace

void
DltraceFrameArrival::Schedule(Ptr<DltraceRdmaNetDevice> device,
                              Ptr<Packet> packet,
                              Time delay,
                              Ptr<DltraceRdmaNetDevice> from)
{
    auto* arrival = new DltraceFrameArrival(device, packet, from);
    g_scheduling = arrival;
    Simulator::ScheduleWithContext(device->GetNode()->GetId(), delay, arrival);
    g_scheduling = nullptr;
}

const DltraceFrameArrival*
DltraceFrameArrival::Scheduling()
{
    return g_scheduling;
}

uint64_t
DltraceFrameArrival::GetPort() const
{
    return m_port;
}

void
DltraceFrameArrival::Notify()
{
    if (m_from)
    {
        // The sender's set is held (a fast-forward): the frame waits with it,
        // or, when a hold began after it left and has ended, arrives as much later.
        if (m_from->IsHeld())
        {
            m_from->HoldArrival(m_device, m_packet);
            return;
        }
        const Time late = m_from->GetHeldTime() - m_fromHeld;
        if (late.IsStrictlyPositive())
        {
            Schedule(m_device, m_packet, late, m_from);
            return;
        }
    }
    m_device->Receive(m_packet);
}

TypeId
DltraceCanonicalScheduler::GetTypeId()
{
    static TypeId tid = DltraceTypeId<DltraceCanonicalScheduler, Scheduler>("ns3::DltraceCanonicalScheduler");
    return tid;
}

DltraceCanonicalScheduler::DltraceCanonicalScheduler() = default;

DltraceCanonicalScheduler::~DltraceCanonicalScheduler() = default;

// A 4-ary heap (half the levels of a binary one: fewer cache lines a
// removal touches), m_heap[0] the next event, children of i at 4i+1..4i+4.
void
DltraceCanonicalScheduler::Insert(const Event& ev)
{
    // An arrival's port is below the flag: node ids and interface indexes are 32 bits.
    const DltraceFrameArrival* arrival = DltraceFrameArrival::Scheduling();
    const uint64_t order = arrival && ev.impl == arrival ? arrival->GetPort() : kOther | ev.key.m_uid;
    const Entry e{ev.key.m_ts, order, ev.impl, ev.key.m_uid, ev.key.m_context};
    m_heap.push_back(e);
    SiftUp(m_heap.size() - 1, e);
}

void
DltraceCanonicalScheduler::SiftUp(size_t i, const Entry& e)
{
    while (i > 0)
    {
        const size_t parent = (i - 1) / 4;
        if (!After()(m_heap[parent], e))
        {
            break;
        }
        m_heap[i] = m_heap[parent];
        i = parent;
    }
    m_heap[i] = e;
}

void
DltraceCanonicalScheduler::SiftDown(size_t i, const Entry& e)
{
    const size_t n = m_heap.size();
    for (;;)
    {
        const size_t first = 4 * i + 1;
        if (first >= n)
        {
            break;
        }
        size_t best = first;
        const size_t last = std::min(first + 4, n);
        for (size_t c = first + 1; c < last; ++c)
        {
            if (After()(m_heap[best], m_heap[c]))
            {
                best = c;
            }
        }
        if (!After()(e, m_heap[best]))
        {
            break;
        }
        m_heap[i] = m_heap[best];
        i = best;
    }
    m_heap[i] = e;
}

bool
DltraceCanonicalScheduler::IsEmpty() const
{
    return m_heap.empty();
}

Scheduler::Event
DltraceCanonicalScheduler::PeekNext() const
{
    NS_ASSERT(!m_heap.empty());
    const Entry& e = m_heap.front();
    return Event{e.impl, EventKey{e.ts, e.uid, e.context}};
}

Scheduler::Event
DltraceCanonicalScheduler::RemoveNext()
{
    const Event ev = PeekNext();
    RemoveAt(0);
    return ev;
}

void
DltraceCanonicalScheduler::Remove(const Event& ev)
{
    auto it = std::find_if(m_heap.begin(), m_heap.end(), [&](const Entry& e) {
        return e.uid == ev.key.m_uid;
    });
    NS_ASSERT(it != m_heap.end());
    RemoveAt(size_t(it - m_heap.begin()));
}

void
DltraceCanonicalScheduler::RemoveAt(size_t i)
{
    const Entry last = m_heap.back();
    m_heap.pop_back();
    if (i == m_heap.size())
    {
        return;
    }
    // The last entry fills the hole: down from there, or up where it is earlier than the hole's parent.
    if (i > 0 && After()(m_heap[(i - 1) / 4], last))
    {
        SiftUp(i, last);
    }
    else
    {
        SiftDown(i, last);
    }
}

} // namespace ns3
