// SPDX-License-Identifier: GPL-2.0-only
// DltraceTimeline: the reported clock (ns-3's plus skipped time) and its
// anchored events, rescheduled sooner by each skip.
#include "dltrace-timeline.h"

#include "ns3/log.h"
#include "ns3/simulator.h"

#include <map>
#include <utility>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceTimeline");

namespace
{

struct Anchored
{
    EventId event;
    std::function<void()> fn;
};

struct State
{
    Time skipped;
    uint64_t next = 0;
    /// (due time on the timeline, order of scheduling) -> the event
    std::map<std::pair<int64_t, uint64_t>, Anchored> pending;
};

State&
GetState()
{
    static State state;
    return state;
}

void
Fire(std::pair<int64_t, uint64_t> key)
{
    State& s = GetState();
    auto it = s.pending.find(key);
    if (it == s.pending.end())
    {
        return;
    }
    std::function<void()> fn = std::move(it->second.fn);
    s.pending.erase(it);
    fn();
}

} // namespace

Time
DltraceTimeline::Now()
{
    return Simulator::Now() + GetState().skipped;
}

Time
DltraceTimeline::GetSkipped()
{
    return GetState().skipped;
}

void
DltraceTimeline::Schedule(Time delay, std::function<void()> fn)
{
    State& s = GetState();
    const std::pair<int64_t, uint64_t> key{(Now() + delay).GetTimeStep(), s.next++};
    EventId event = Simulator::Schedule(delay, &Fire, key);
    s.pending.emplace(key, Anchored{event, std::move(fn)});
}

Time
DltraceTimeline::NextAnchored()
{
    const State& s = GetState();
    return s.pending.empty() ? Time::Max() : TimeStep(s.pending.begin()->first.first);
}

void
DltraceTimeline::Skip(Time delta)
{
    State& s = GetState();
    if (delta.IsNegative() || Now() + delta > NextAnchored())
    {
        NS_FATAL_ERROR("DltraceTimeline: a skip of " << delta << " at " << Now()
                                                     << " passes an event due at " << NextAnchored());
    }
    s.skipped += delta;
    // In order of due time, then of scheduling: same-time events keep their order.
    for (auto& [key, anchored] : s.pending)
    {
        anchored.event.Cancel();
        anchored.event = Simulator::Schedule(TimeStep(key.first) - Now(), &Fire, key);
    }
}

void
DltraceTimeline::Reset()
{
    State& s = GetState();
    for (auto& [key, anchored] : s.pending)
    {
        anchored.event.Cancel();
    }
    s.pending.clear();
    s.skipped = Time();
    s.next = 0;
}

} // namespace ns3
