// SPDX-License-Identifier: GPL-2.0-only
// DltraceRdmaCongestionControl: the interface's defaults (no congestion control).
#include "dltrace-rdma-congestion-control.h"

#include "dltrace-attributes.h"

#include "ns3/double.h"
#include "ns3/log.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceRdmaCongestionControl");

NS_OBJECT_ENSURE_REGISTERED(DltraceRdmaCongestionControl);

TypeId
DltraceRdmaCongestionControl::GetTypeId()
{
    static TypeId tid =
        DltraceTypeId<DltraceRdmaCongestionControl, Object>("ns3::DltraceRdmaCongestionControl")
            .AddDouble("MinRate",
                       "Lowest rate a QP is cut to (bit/s). Default 100 Mb/s, the floor of "
                       "the public DCQCN implementations.",
                       100e6, &DltraceRdmaCongestionControl::m_minRate, 1);
    return tid;
}

DltraceRdmaCongestionControl::DltraceRdmaCongestionControl()
    : m_lineRate(0),
      m_frameBytes(0),
      m_active(false),
      m_cnps(0),
      m_rate(0),
      m_window(0)
{
}

void
DltraceRdmaCongestionControl::Start(double lineRateBps, Time baseRtt, uint32_t mtuFrameBytes)
{
    m_lineRate = lineRateBps;
    m_baseRtt = baseRtt;
    m_frameBytes = mtuFrameBytes;
    m_rate = lineRateBps;
}

void
DltraceRdmaCongestionControl::SetActive(bool active)
{
    m_active = active;
}

void
DltraceRdmaCongestionControl::OnSend(uint32_t /*bytes*/)
{
}

void
DltraceRdmaCongestionControl::OnAck(const DltraceRdmaAckInfo& /*ack*/)
{
}

void
DltraceRdmaCongestionControl::OnCnp()
{
    ++m_cnps;
}

bool
DltraceRdmaCongestionControl::NeedsInt() const
{
    return false;
}

double
DltraceRdmaCongestionControl::GetRate() const
{
    return m_rate;
}

uint64_t
DltraceRdmaCongestionControl::GetWindow() const
{
    return m_window;
}

uint64_t
DltraceRdmaCongestionControl::GetCnpCount() const
{
    return m_cnps;
}

void
DltraceRdmaCongestionControl::SetRateIncreaseCallback(Callback<void> cb)
{
    m_increase = cb;
}

void
DltraceRdmaCongestionControl::SetRate(double bps)
{
    double old = m_rate;
    m_rate = std::clamp(bps, std::min(m_minRate, m_lineRate), m_lineRate);
    if (m_rate > old && !m_increase.IsNull())
    {
        m_increase();
    }
}

void
DltraceRdmaCongestionControl::SetWindow(uint64_t bytes)
{
    uint64_t old = m_window;
    // Never below one frame: a QP with nothing in flight can always send.
    m_window = std::max<uint64_t>(bytes, m_frameBytes);
    if (m_window > old && !m_increase.IsNull())
    {
        m_increase();
    }
}

Time
DltraceRdmaCongestionControl::GetSteadyHorizon(double /*tolerance*/) const
{
    return Time::Max();
}

void
DltraceRdmaCongestionControl::FastForward(Time /*skipped*/, uint64_t /*bytes*/)
{
}

Time
DltraceRdmaCongestionControl::GetSteadyWindow() const
{
    return m_steadyWindow;
}

Time
DltraceRdmaCongestionControl::GetFrameTime() const
{
    return m_lineRate > 0 ? Seconds(m_frameBytes * 8.0 / m_lineRate) : Time();
}

} // namespace ns3
