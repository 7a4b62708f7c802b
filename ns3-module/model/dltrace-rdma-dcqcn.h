// SPDX-License-Identifier: GPL-2.0-only
// DCQCN's reaction point (Zhu et al., "Congestion Control for Large-Scale
// RDMA Deployments", SIGCOMM 2015): rate cut by alpha on a CNP, fast
// recovery, additive and hyper increase driven by a timer and a byte counter.
#ifndef DLTRACE_RDMA_DCQCN_H
#define DLTRACE_RDMA_DCQCN_H

#include "dltrace-rdma-congestion-control.h"

#include "ns3/event-id.h"

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief DCQCN reaction point of one QP.
 *
 * On a CNP, as the paper's algorithm orders it: R_T = R_C,
 * R_C = R_C (1 - alpha/2), then alpha = (1 - g) alpha + g (the cut uses the
 * alpha from before this CNP); the rate-increase counters restart. Every
 * AlphaTimer without a CNP: alpha = (1 - g) alpha. Every RateTimer and
 * every ByteCounter bytes sent is an increase event: fewer than F events
 * of both kinds since the cut: fast recovery R_C = (R_T + R_C)/2; more
 * than F of both: hyper increase R_T += i R_HAI (i = events beyond F);
 * else additive R_T += R_AI, then R_C = (R_T + R_C)/2. While the QP is
 * idle its timers stop; when it becomes active again the timer events it
 * missed are applied at once (the byte counter did not advance).
 */
class DltraceRdmaDcqcn : public DltraceRdmaCongestionControl
{
  public:
    static TypeId GetTypeId();
    DltraceRdmaDcqcn();

    void Start(double lineRateBps, Time baseRtt, uint32_t mtuFrameBytes) override;
    void SetActive(bool active) override;
    void OnSend(uint32_t bytes) override;
    void OnCnp() override;
    /// Steady only at line rate: below it every timer raises the rate.
    Time GetSteadyHorizon(double tolerance) const override;
    /// Alpha decays and the timer and byte counters count as over SKIPPED.
    void FastForward(Time skipped, uint64_t bytes) override;

  protected:
    void DoDispose() override;

  private:
    void AlphaTimer();
    void RateTimer();
    void Increase();

    // Attributes (their defaults are in GetTypeId())
    double m_g{0};
    Time m_alphaTimer;
    Time m_rateTimer;
    uint64_t m_byteCounter{0};
    uint32_t m_f{0};
    double m_rai{0};
    double m_rhai{0};
    double m_initialAlpha{0};

    double m_alpha;
    double m_targetRate;
    uint32_t m_timerEvents;
    uint32_t m_byteEvents;
    uint64_t m_bytesSinceEvent;
    EventId m_alphaEvent;
    EventId m_rateEvent;
    Time m_idleSince;
    bool m_wasActive;
};

} // namespace ns3

#endif /* DLTRACE_RDMA_DCQCN_H */
