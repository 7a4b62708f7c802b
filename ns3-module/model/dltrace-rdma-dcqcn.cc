// SPDX-License-Identifier: GPL-2.0-only
// DltraceRdmaDcqcn: the reaction point's cut, alpha and increase state machine.
#include "dltrace-rdma-dcqcn.h"

#include "dltrace-attributes.h"
#include "dltrace-timeline.h"

#include "ns3/double.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceRdmaDcqcn");

NS_OBJECT_ENSURE_REGISTERED(DltraceRdmaDcqcn);

TypeId
DltraceRdmaDcqcn::GetTypeId()
{
    static TypeId tid =
        DltraceTypeId<DltraceRdmaDcqcn, DltraceRdmaCongestionControl>("ns3::DltraceRdmaDcqcn")
            .AddDouble("G",
                       "Alpha's gain g. Default 1/256 (DCQCN paper).",
                       1.0 / 256, &DltraceRdmaDcqcn::m_g, 0, 1)
            .AddTime("AlphaTimer",
                     "Alpha decays once per this period without a CNP (s). Default 55 us "
                     "(DCQCN paper).",
                     MicroSeconds(55), &DltraceRdmaDcqcn::m_alphaTimer, NanoSeconds(1))
            .AddTime("RateTimer",
                     "Period of the rate-increase timer (s). Default 55 us (DCQCN paper).",
                     MicroSeconds(55), &DltraceRdmaDcqcn::m_rateTimer, NanoSeconds(1))
            .AddUinteger("ByteCounter",
                         "Bytes sent per byte-counter increase event. Default 10 MB (DCQCN "
                         "paper).",
                         10000000, &DltraceRdmaDcqcn::m_byteCounter, 1)
            .AddUinteger("F",
                         "Fast-recovery steps before additive increase. Default 5 (DCQCN "
                         "paper).",
                         5, &DltraceRdmaDcqcn::m_f)
            .AddDouble("RateAi",
                       "Additive increase R_AI (bit/s). Default 40 Mb/s (DCQCN paper, 40 "
                       "Gb/s links).",
                       40e6, &DltraceRdmaDcqcn::m_rai, 0)
            .AddDouble("RateHai",
                       "Hyper increase R_HAI (bit/s). Default 400 Mb/s: 10 x R_AI (our "
                       "choice; the paper names the step, not its value for this setup).",
                       400e6, &DltraceRdmaDcqcn::m_rhai, 0)
            .AddDouble("InitialAlpha",
                       "Alpha of a new QP. Default 1 (DCQCN paper: start conservative).",
                       1.0, &DltraceRdmaDcqcn::m_initialAlpha, 0, 1)
            .AddTime("SteadyWindow",
                     "How long --fast-forward watches the fabric hold steady before it "
                     "skips, where DCQCN QPs are busy (s; DltraceRdmaFastForward::Window "
                     "overrides it when set). Default 5 us: DCQCN skips only at line rate, "
                     "which holds from a QP's first packet; 5 to 20 us gave the same "
                     "results within 0.01% and 5 us skips the most (docs/results/rdma.md, "
                     "fast-forward).",
                     MicroSeconds(5), &DltraceRdmaDcqcn::m_steadyWindow, Seconds(0));
    return tid;
}

DltraceRdmaDcqcn::DltraceRdmaDcqcn()
    : m_alpha(1.0),
      m_targetRate(0),
      m_timerEvents(0),
      m_byteEvents(0),
      m_bytesSinceEvent(0),
      m_wasActive(false)
{
}

void
DltraceRdmaDcqcn::DoDispose()
{
    m_alphaEvent.Cancel();
    m_rateEvent.Cancel();
    DltraceRdmaCongestionControl::DoDispose();
}

void
DltraceRdmaDcqcn::Start(double lineRateBps, Time baseRtt, uint32_t mtuFrameBytes)
{
    DltraceRdmaCongestionControl::Start(lineRateBps, baseRtt, mtuFrameBytes);
    m_alpha = m_initialAlpha;
    m_targetRate = lineRateBps;
}

void
DltraceRdmaDcqcn::SetActive(bool active)
{
    if (active == m_active)
    {
        return;
    }
    DltraceRdmaCongestionControl::SetActive(active);
    if (!active)
    {
        m_alphaEvent.Cancel();
        m_rateEvent.Cancel();
        m_idleSince = DltraceTimeline::Now();
        return;
    }
    if (m_wasActive)
    {
        // The timers that would have fired while idle: alpha decays in closed
        // form; rate-increase events one by one, until line rate (at most 64).
        Time idle = DltraceTimeline::Now() - m_idleSince;
        double alphaTicks = std::floor(idle.GetSeconds() / m_alphaTimer.GetSeconds());
        m_alpha *= std::pow(1 - m_g, alphaTicks);
        uint64_t rateTicks =
            static_cast<uint64_t>(std::floor(idle.GetSeconds() / m_rateTimer.GetSeconds()));
        for (uint64_t i = 0; i < rateTicks && i < 64 && GetRate() < m_lineRate; ++i)
        {
            ++m_timerEvents;
            Increase();
        }
    }
    m_wasActive = true;
    m_alphaEvent = Simulator::Schedule(m_alphaTimer, &DltraceRdmaDcqcn::AlphaTimer, this);
    m_rateEvent = Simulator::Schedule(m_rateTimer, &DltraceRdmaDcqcn::RateTimer, this);
}

void
DltraceRdmaDcqcn::OnCnp()
{
    DltraceRdmaCongestionControl::OnCnp();
    // Paper order: cut with the current alpha, then raise alpha.
    m_targetRate = GetRate();
    SetRate(GetRate() * (1 - m_alpha / 2));
    m_alpha = (1 - m_g) * m_alpha + m_g;
    m_timerEvents = 0;
    m_byteEvents = 0;
    m_bytesSinceEvent = 0;
    if (m_active)
    {
        m_alphaEvent.Cancel();
        m_rateEvent.Cancel();
        m_alphaEvent = Simulator::Schedule(m_alphaTimer, &DltraceRdmaDcqcn::AlphaTimer, this);
        m_rateEvent = Simulator::Schedule(m_rateTimer, &DltraceRdmaDcqcn::RateTimer, this);
    }
}

Time
DltraceRdmaDcqcn::GetSteadyHorizon(double /*tolerance*/) const
{
    return GetRate() >= m_lineRate ? Time::Max() : Time();
}

void
DltraceRdmaDcqcn::FastForward(Time skipped, uint64_t bytes)
{
    // At line rate an increase changes nothing but the counters; the timers
    // themselves were not run (their events keep their place on ns-3's clock).
    m_alpha *= std::pow(1 - m_g, std::floor(skipped.GetSeconds() / m_alphaTimer.GetSeconds()));
    m_timerEvents += static_cast<uint32_t>(std::floor(skipped.GetSeconds() / m_rateTimer.GetSeconds()));
    OnSend(static_cast<uint32_t>(std::min<uint64_t>(bytes, UINT32_MAX)));
}

void
DltraceRdmaDcqcn::AlphaTimer()
{
    m_alpha = (1 - m_g) * m_alpha;
    m_alphaEvent = Simulator::Schedule(m_alphaTimer, &DltraceRdmaDcqcn::AlphaTimer, this);
}

void
DltraceRdmaDcqcn::RateTimer()
{
    ++m_timerEvents;
    Increase();
    m_rateEvent = Simulator::Schedule(m_rateTimer, &DltraceRdmaDcqcn::RateTimer, this);
}

void
DltraceRdmaDcqcn::OnSend(uint32_t bytes)
{
    m_bytesSinceEvent += bytes;
    while (m_bytesSinceEvent >= m_byteCounter)
    {
        m_bytesSinceEvent -= m_byteCounter;
        ++m_byteEvents;
        Increase();
    }
}

void
DltraceRdmaDcqcn::Increase()
{
    const uint32_t hi = std::max(m_timerEvents, m_byteEvents);
    const uint32_t lo = std::min(m_timerEvents, m_byteEvents);
    if (hi < m_f)
    {
        // fast recovery: towards the target, which stays
    }
    else if (lo > m_f)
    {
        m_targetRate += (lo - m_f) * m_rhai;
    }
    else
    {
        m_targetRate += m_rai;
    }
    m_targetRate = std::min(m_targetRate, m_lineRate);
    SetRate((m_targetRate + GetRate()) / 2);
}

} // namespace ns3
