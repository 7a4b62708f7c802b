// SPDX-License-Identifier: GPL-2.0-only
// DltraceCanonicalScheduler and DltraceFrameArrival.
#include "dltrace-canonical-scheduler.h"

#include "dltrace-rdma-net-device.h"

#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <typeinfo>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceCanonicalScheduler");

NS_OBJECT_ENSURE_REGISTERED(DltraceCanonicalScheduler);

DltraceFrameArrival::DltraceFrameArrival(Ptr<DltraceRdmaNetDevice> device, Ptr<Packet> packet)
    : m_device(device),
      m_packet(packet),
      m_port((uint64_t(device->GetNode()->GetId()) << 32) | device->GetIfIndex())
{
}

void
DltraceFrameArrival::Schedule(Ptr<DltraceRdmaNetDevice> device, Ptr<Packet> packet, Time delay)
{
    Simulator::ScheduleWithContext(device->GetNode()->GetId(), delay, new DltraceFrameArrival(device, packet));
}

uint64_t
DltraceFrameArrival::GetPort() const
{
    return m_port;
}

void
DltraceFrameArrival::Notify()
{
    m_device->Receive(m_packet);
}

TypeId
DltraceCanonicalScheduler::GetTypeId()
{
    static TypeId tid = TypeId("ns3::DltraceCanonicalScheduler")
                            .SetParent<Scheduler>()
                            .SetGroupName("Dltrace")
                            .AddConstructor<DltraceCanonicalScheduler>();
    return tid;
}

DltraceCanonicalScheduler::DltraceCanonicalScheduler() = default;

DltraceCanonicalScheduler::~DltraceCanonicalScheduler() = default;

bool
DltraceCanonicalScheduler::After(const Entry& a, const Entry& b)
{
    if (a.ts != b.ts)
    {
        return a.ts > b.ts;
    }
    if (a.rank != b.rank)
    {
        return a.rank > b.rank;
    }
    return a.uid > b.uid;
}

void
DltraceCanonicalScheduler::Insert(const Event& ev)
{
    uint64_t rank = 0;
    if (typeid(*ev.impl) == typeid(DltraceFrameArrival))
    {
        rank = 1 + static_cast<const DltraceFrameArrival*>(ev.impl)->GetPort();
    }
    m_heap.push_back(Entry{ev.key.m_ts, rank, ev.key.m_uid, ev});
    std::push_heap(m_heap.begin(), m_heap.end(), After);
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
    return m_heap.front().event;
}

Scheduler::Event
DltraceCanonicalScheduler::RemoveNext()
{
    NS_ASSERT(!m_heap.empty());
    std::pop_heap(m_heap.begin(), m_heap.end(), After);
    const Event ev = m_heap.back().event;
    m_heap.pop_back();
    return ev;
}

void
DltraceCanonicalScheduler::Remove(const Event& ev)
{
    auto it = std::find_if(m_heap.begin(), m_heap.end(), [&](const Entry& e) {
        return e.uid == ev.key.m_uid;
    });
    NS_ASSERT(it != m_heap.end());
    *it = m_heap.back();
    m_heap.pop_back();
    std::make_heap(m_heap.begin(), m_heap.end(), After);
}

} // namespace ns3
