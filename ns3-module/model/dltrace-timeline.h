// SPDX-License-Identifier: GPL-2.0-only
// The simulated time a run reports: ns-3's clock plus what fast-forward
// skipped, and the events anchored to it (job timers, samples, the stop time).
#ifndef DLTRACE_TIMELINE_H
#define DLTRACE_TIMELINE_H

#include "ns3/event-id.h"
#include "ns3/nstime.h"

#include <cstdint>
#include <functional>

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief The run's clock when parts of it are fast-forwarded.
 *
 * A fast-forward (DltraceRdmaFastForward) moves the network's state ahead
 * by crediting what a steady stretch would have carried, without running
 * it: ns-3's clock does not move, so every event of the packet machinery
 * (frames on the wire, pacing, timers of queue pairs) stays where it was
 * relative to the others. What happens at a time of the run's own (a job's
 * compute step ending, a monitor's sample, the stop time) is anchored here:
 * after a skip of D it runs D sooner on ns-3's clock, at the same time on
 * this one. Everything a run reports (message and step times, samples,
 * the simulated time) reads Now().
 *
 * Without skips Now() is Simulator::Now() and Schedule is Simulator::Schedule
 * (same event order). One run at a time per process; Reset() starts a run.
 */
class DltraceTimeline
{
  public:
    /// Simulator::Now() plus everything skipped.
    static Time Now();
    /// Simulated time skipped so far.
    static Time GetSkipped();
    /// Runs FN DELAY from Now() on this clock, whatever is skipped meanwhile.
    static void Schedule(Time delay, std::function<void()> fn);
    /// The earliest time (on this clock) an anchored event is due; Time::Max() when none.
    static Time NextAnchored();
    /// Skips DELTA (>= 0, at most NextAnchored() - Now()): anchored events move DELTA sooner.
    static void Skip(Time delta);
    /// Forgets pending anchored events and skipped time (a new run).
    static void Reset();
};

} // namespace ns3

#endif /* DLTRACE_TIMELINE_H */
