// SPDX-License-Identifier: GPL-2.0-only
// DltraceSimulatedTransport: Send/SendNotice as one Post, and guarded timers.
#include "dltrace-simulated-transport.h"

#include "dltrace-timeline.h"

#include "ns3/nstime.h"
#include "ns3/simulator.h"

namespace ns3
{

DltraceSimulatedTransport::DltraceSimulatedTransport()
    : m_alive(std::make_shared<bool>(true))
{
}

DltraceSimulatedTransport::~DltraceSimulatedTransport()
{
    *m_alive = false;
}

void
DltraceSimulatedTransport::Send(int32_t peer,
                                uint16_t channel,
                                uint64_t tag,
                                uint64_t bytes,
                                std::function<void()> on_sent)
{
    Post({peer, channel, tag, bytes, false}, std::move(on_sent));
}

void
DltraceSimulatedTransport::SendNotice(int32_t peer,
                                      uint16_t channel,
                                      uint64_t tag,
                                      uint64_t bytes,
                                      std::function<void()> on_sent)
{
    Post({peer, channel, tag, bytes, true}, std::move(on_sent));
}

bool
DltraceSimulatedTransport::IsRunning() const
{
    return true;
}

void
DltraceSimulatedTransport::StartTimer(uint64_t duration_ns, std::function<void()> cb)
{
    std::shared_ptr<bool> alive = m_alive;
    DltraceTimeline::Schedule(NanoSeconds(int64_t(duration_ns)), [this, alive, cb]() {
        if (*alive && IsRunning())
        {
            cb();
        }
    });
}

uint64_t
DltraceSimulatedTransport::NowNs() const
{
    return uint64_t(DltraceTimeline::Now().GetNanoSeconds());
}

} // namespace ns3
