// SPDX-License-Identifier: GPL-2.0-only
// HPCC (Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019):
// a window from the INT records on each ACK, aiming at utilisation eta.
#ifndef DLTRACE_RDMA_HPCC_H
#define DLTRACE_RDMA_HPCC_H

#include "dltrace-rdma-congestion-control.h"

#include <array>

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief HPCC sender of one QP (the paper's Algorithm 1).
 *
 * Per ACK, for each hop: u = min(qlen, previous qlen)/(B T) + txRate/B;
 * the most loaded hop sets U = (1 - tau/T) U + (tau/T) u (tau the time
 * between its two INT stamps, at most T). If U >= eta or incStage >=
 * maxStage: W = Wc/(U/eta) + W_AI, else W = Wc + W_AI, at most line
 * rate x T (capped before it becomes Wc, as in HPCC's public simulator). Wc (the reference
 * window) and incStage change only on the first ACK of each round trip
 * (an ACK beyond the snd_nxt of the previous update); the rate is W/T.
 * T is the QP's base RTT; the first window is line rate x T.
 */
class DltraceRdmaHpcc : public DltraceRdmaCongestionControl
{
  public:
    static TypeId GetTypeId();
    DltraceRdmaHpcc();

    void Start(double lineRateBps, Time baseRtt, uint32_t mtuFrameBytes) override;
    void OnAck(const DltraceRdmaAckInfo& ack) override;
    bool NeedsInt() const override;
    /**
     * 0 unless U held within TOLERANCE over the last kUHistory round trips
     * (each step opens with a transient: in a QP's first round trips U
     * climbs while the rate is still flat, a cut comes, the rate dips and
     * recovers). With U held: below its largest window (line rate x base
     * RTT), for good; at it, for good where the reference window's fixed
     * point W_AI / (1 - Eta/U) is above the cap (or U below Eta), else 0:
     * Wc is at the cap too, and the next update cuts it.
     */
    Time GetSteadyHorizon(double tolerance) const override;
    static constexpr uint32_t kUHistory = 4;

  private:
    double MeasureInflight(const DltraceRdmaHeader& ack);
    double ComputeWindow(double u, bool updateReference);

    // Attributes (their defaults are in GetTypeId())
    double m_eta{0};
    uint32_t m_maxStage{0};
    double m_rateAi{0};

    double m_u;
    std::array<double, kUHistory> m_uAtUpdate{}; ///< U at the last reference updates (ring)
    uint32_t m_updates{0};
    double m_wc;
    double m_wAi;
    uint32_t m_incStage;
    uint32_t m_lastUpdateSeq;
    bool m_haveHops;
    uint32_t m_nHops;
    std::array<DltraceIntHop, DltraceRdmaHeader::kMaxHops> m_hops;
};

} // namespace ns3

#endif /* DLTRACE_RDMA_HPCC_H */
