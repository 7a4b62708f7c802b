// SPDX-License-Identifier: GPL-2.0-only
// The small interface every RDMA congestion control implements (on send, on
// ACK, on CNP, its own timers) and the plain one: line rate, no window.
#ifndef DLTRACE_RDMA_CONGESTION_CONTROL_H
#define DLTRACE_RDMA_CONGESTION_CONTROL_H

#include "dltrace-rdma-header.h"

#include "ns3/callback.h"
#include "ns3/nstime.h"
#include "ns3/object.h"

#include <cstdint>

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief What a QP tells its congestion control about one ACK.
 */
struct DltraceRdmaAckInfo
{
    uint32_t ackedPsn = 0;    ///< last PSN the receiver has in order
    uint32_t nextPsn = 0;     ///< the QP's next PSN to send (snd_nxt)
    uint64_t newBytes = 0;    ///< bytes this ACK newly acknowledged
    Time rtt;                 ///< now minus the echoed send time of the acked packet
    const DltraceRdmaHeader* header = nullptr; ///< the ACK (INT hops for HPCC)
};

/**
 * \ingroup dltrace
 * \brief Rate and window of one QP, and how they react (base: line rate, no window).
 *
 * A QP sends while its bytes in flight are below GetWindow() (0: no
 * window), each packet paced at GetRate(). Subclasses differ only where
 * their papers do. Timers run while the QP is active (SetActive), so an
 * idle QP keeps no event scheduled and a simulation ends when its traffic does.
 */
class DltraceRdmaCongestionControl : public Object
{
  public:
    static TypeId GetTypeId();
    DltraceRdmaCongestionControl();

    /// Starts at LINE_RATE (bit/s); BASE_RTT is the QP's unloaded round trip.
    virtual void Start(double lineRateBps, Time baseRtt, uint32_t mtuFrameBytes);
    /// The QP has data or unacknowledged packets (true) or nothing (false).
    virtual void SetActive(bool active);
    virtual void OnSend(uint32_t bytes);
    virtual void OnAck(const DltraceRdmaAckInfo& ack);
    virtual void OnCnp();
    /// Whether switches should stamp INT on this QP's packets.
    virtual bool NeedsInt() const;
    /**
     * How long the rate would hold if nothing changed, its own signals held
     * within TOLERANCE (relative) where it has some: 0 when it is moving
     * (DCQCN below line rate, where every timer raises it; HPCC while U
     * climbs in a QP's first round trips with the rate still flat),
     * Time::Max() when it holds for good. Base: Time::Max().
     */
    virtual Time GetSteadyHorizon(double tolerance) const;
    /// A fast-forward skipped SKIPPED of steady sending, BYTES of frames (timers
    /// that would have fired, byte counters); the base does nothing.
    virtual void FastForward(Time skipped, uint64_t bytes);
    /// How long a fast-forward watches this QP hold steady before a skip (its
    /// SteadyWindow attribute; 0 in the base, which has none: the fast-forward's own).
    Time GetSteadyWindow() const;
    /// One MTU frame's time at line rate (0 before Start).
    Time GetFrameTime() const;

    double GetRate() const;      ///< bit/s
    uint64_t GetWindow() const;  ///< bytes in flight allowed; 0: no window
    uint64_t GetCnpCount() const;
    /// Called when the rate rises or the window opens (the NIC may send sooner).
    void SetRateIncreaseCallback(Callback<void> cb);

  protected:
    void SetRate(double bps);
    void SetWindow(uint64_t bytes);

    double m_lineRate;
    Time m_baseRtt;
    uint32_t m_frameBytes;
    bool m_active;
    uint64_t m_cnps;
    double m_minRate{0};
    Time m_steadyWindow{}; ///< set by a subclass's SteadyWindow attribute

  private:
    double m_rate;
    uint64_t m_window;
    Callback<void> m_increase;
};

} // namespace ns3

#endif /* DLTRACE_RDMA_CONGESTION_CONTROL_H */
