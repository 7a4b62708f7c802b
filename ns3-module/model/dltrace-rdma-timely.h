// SPDX-License-Identifier: GPL-2.0-only
// TIMELY (Mittal et al., "TIMELY: RTT-based Congestion Control for the
// Datacenter", SIGCOMM 2015): rate from the RTT and its gradient.
#ifndef DLTRACE_RDMA_TIMELY_H
#define DLTRACE_RDMA_TIMELY_H

#include "dltrace-rdma-congestion-control.h"

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief TIMELY sender of one QP (the paper's Algorithm 1).
 *
 * Once per SegmentBytes acknowledged (the paper's completion event), with
 * the ACK's RTT sample: rtt_diff = (1 - a) rtt_diff + a (rtt - prev_rtt);
 * below T_low add delta; above T_high multiply by 1 - b (1 - T_high/rtt);
 * else a gradient rtt_diff/minRTT <= 0 adds N delta (N = 5 after five such
 * completions in a row, else 1) and a positive one multiplies by
 * 1 - b gradient. delta is the paper's 10 Mb/s at its 10 Gb/s NICs, scaled
 * with the line rate (DeltaReferenceRate): unscaled, a QP cut to the floor
 * on a 100 Gb/s link climbs back at a tenth of the paper's relative pace.
 */
class DltraceRdmaTimely : public DltraceRdmaCongestionControl
{
  public:
    static TypeId GetTypeId();
    DltraceRdmaTimely();

    void Start(double lineRateBps, Time baseRtt, uint32_t mtuFrameBytes) override;
    void OnAck(const DltraceRdmaAckInfo& ack) override;
    /// Steady only at line rate: below it every ACK under T_low raises the rate.
    Time GetSteadyHorizon(double tolerance) const override;

    /// RTT of the last completion event.
    Time GetLastRtt() const;
    /// The additive step delta at this QP's line rate (bit/s).
    double GetDelta() const;

  private:
    // Attributes (their defaults are in GetTypeId())
    double m_alpha{0};
    double m_beta{0};
    Time m_tLow;
    Time m_tHigh;
    double m_delta{0};
    double m_deltaReferenceRate{0};
    Time m_minRtt;
    uint32_t m_haiThreshold{0};
    uint64_t m_segmentBytes{0};
    bool m_haiBelowTLow{false};

    double m_prevRtt;
    double m_rttDiff;
    uint32_t m_negativeRun;
    uint64_t m_bytesSinceUpdate;
    double m_step; // delta at the line rate
    Time m_lastRtt;
};

} // namespace ns3

#endif /* DLTRACE_RDMA_TIMELY_H */
