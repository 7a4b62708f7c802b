// SPDX-License-Identifier: GPL-2.0-only
// DltraceRdmaTimely: TIMELY's gradient-based rate update per completion event.
#include "dltrace-rdma-timely.h"

#include "dltrace-attributes.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/log.h"
#include "ns3/uinteger.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceRdmaTimely");

NS_OBJECT_ENSURE_REGISTERED(DltraceRdmaTimely);

TypeId
DltraceRdmaTimely::GetTypeId()
{
    static TypeId tid =
        DltraceTypeId<DltraceRdmaTimely, DltraceRdmaCongestionControl>("ns3::DltraceRdmaTimely")
            .AddTime("SteadyWindow",
                     "How long --fast-forward watches the fabric hold steady before it "
                     "skips, where TIMELY QPs are busy (s; DltraceRdmaFastForward::Window "
                     "overrides it when set). Default 20 us, the fast-forward's first "
                     "default, not measured for TIMELY on its own.",
                     MicroSeconds(20), &DltraceRdmaTimely::m_steadyWindow, Seconds(0))
            .AddDouble("Alpha",
                       "EWMA weight of a new RTT difference. Default 0.875 (TIMELY paper).",
                       0.875, &DltraceRdmaTimely::m_alpha, 0, 1)
            .AddDouble("Beta",
                       "Multiplicative decrease factor. Default 0.8 (TIMELY paper).",
                       0.8, &DltraceRdmaTimely::m_beta, 0, 1)
            .AddTime("TLow",
                     "Below this RTT the rate only grows (s). Default 50 us (TIMELY paper).",
                     MicroSeconds(50), &DltraceRdmaTimely::m_tLow, Seconds(0))
            .AddTime("THigh",
                     "Above this RTT the rate is cut (s). Default 500 us (TIMELY paper).",
                     MicroSeconds(500), &DltraceRdmaTimely::m_tHigh, Seconds(0))
            .AddDouble("Delta",
                       "Additive increment delta (bit/s) at DeltaReferenceRate, scaled with "
                       "the QP's line rate. Default 10 Mb/s (TIMELY paper, 10 Gb/s NICs).",
                       10e6, &DltraceRdmaTimely::m_delta, 0)
            .AddDouble("DeltaReferenceRate",
                       "Line rate (bit/s) at which Delta applies as given; at other rates "
                       "delta is Delta x line rate / this, as the HPCC authors' ns-3 TIMELY "
                       "sets it (10 Mb/s per 10 Gb/s). 0: Delta at every rate. Default 10 "
                       "Gb/s, the paper's NICs.",
                       10e9, &DltraceRdmaTimely::m_deltaReferenceRate, 0)
            .AddTime("MinRtt",
                     "minRTT normalising the gradient (s). Default 20 us (TIMELY paper).",
                     MicroSeconds(20), &DltraceRdmaTimely::m_minRtt, NanoSeconds(1))
            .AddUinteger("HaiThreshold",
                         "Completions with a non-positive gradient in a row before hyperactive "
                         "increase (N = 5). Default 5 (TIMELY paper).",
                         5, &DltraceRdmaTimely::m_haiThreshold, 1)
            .AddUinteger("SegmentBytes",
                         "Bytes acknowledged per completion event (rate update). Default 16 "
                         "KB, the low end of the paper's 16-64 KB segments.",
                         16384, &DltraceRdmaTimely::m_segmentBytes, 1)
            .AddBoolean("HaiBelowTLow",
                        "Count increases below T_low towards hyperactive increase too, as "
                        "the HPCC authors' ns-3 TIMELY does (rdma-hw.cc, UpdateRateTimely). "
                        "Default false: Algorithm 1, where below T_low the rate adds delta "
                        "and the HAI count restarts.",
                        false, &DltraceRdmaTimely::m_haiBelowTLow);
    return tid;
}

DltraceRdmaTimely::DltraceRdmaTimely()
    : m_prevRtt(0),
      m_rttDiff(0),
      m_negativeRun(0),
      m_bytesSinceUpdate(0),
      m_step(0)
{
}

void
DltraceRdmaTimely::Start(double lineRateBps, Time baseRtt, uint32_t mtuFrameBytes)
{
    DltraceRdmaCongestionControl::Start(lineRateBps, baseRtt, mtuFrameBytes);
    m_prevRtt = 0;
    m_rttDiff = 0;
    m_negativeRun = 0;
    m_bytesSinceUpdate = 0;
    m_step = m_deltaReferenceRate > 0 ? m_delta * lineRateBps / m_deltaReferenceRate : m_delta;
}

double
DltraceRdmaTimely::GetDelta() const
{
    return m_step;
}

Time
DltraceRdmaTimely::GetSteadyHorizon(double /*tolerance*/) const
{
    return GetRate() >= m_lineRate ? Time::Max() : Time();
}

Time
DltraceRdmaTimely::GetLastRtt() const
{
    return m_lastRtt;
}

void
DltraceRdmaTimely::OnAck(const DltraceRdmaAckInfo& ack)
{
    m_bytesSinceUpdate += ack.newBytes;
    if (m_bytesSinceUpdate < m_segmentBytes || ack.rtt.IsZero())
    {
        return;
    }
    m_bytesSinceUpdate = 0;
    m_lastRtt = ack.rtt;
    const double rtt = ack.rtt.GetSeconds();
    if (m_prevRtt == 0)
    {
        m_prevRtt = rtt;
        return;
    }
    const double newDiff = rtt - m_prevRtt;
    m_prevRtt = rtt;
    m_rttDiff = (1 - m_alpha) * m_rttDiff + m_alpha * newDiff;
    const double gradient = m_rttDiff / m_minRtt.GetSeconds();
    const double rate = GetRate();
    // N = 5 (hyperactive increase) after HaiThreshold increases in a row.
    auto increase = [&]() {
        SetRate(rate + (m_negativeRun >= m_haiThreshold ? 5 : 1) * m_step);
    };
    if (rtt < m_tLow.GetSeconds())
    {
        // Algorithm 1 adds delta and restarts the count; the HPCC authors' code counts on.
        m_negativeRun = m_haiBelowTLow ? m_negativeRun + 1 : 0;
        increase();
        return;
    }
    if (rtt > m_tHigh.GetSeconds())
    {
        m_negativeRun = 0;
        SetRate(rate * (1 - m_beta * (1 - m_tHigh.GetSeconds() / rtt)));
        return;
    }
    if (gradient <= 0)
    {
        ++m_negativeRun;
        increase();
    }
    else
    {
        m_negativeRun = 0;
        SetRate(rate * (1 - m_beta * gradient));
    }
}

} // namespace ns3
