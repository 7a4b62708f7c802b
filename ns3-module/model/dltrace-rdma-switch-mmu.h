// SPDX-License-Identifier: GPL-2.0-only
// A shared-buffer switch's memory manager: ingress accounting with dynamic
// thresholds, PFC headroom per port and the XOFF/XON decisions, lossy drops,
// and RED-style ECN marking on egress queues.
#ifndef DLTRACE_RDMA_SWITCH_MMU_H
#define DLTRACE_RDMA_SWITCH_MMU_H

#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/random-variable-stream.h"

#include <array>
#include <cstdint>
#include <vector>

namespace ns3
{

class DltraceRdmaNetDevice;

/**
 * \ingroup dltrace
 * \brief Buffer accounting of one switch (Choudhury-Hahne dynamic thresholds).
 *
 * The buffer is a shared pool plus, with PFC, a headroom reserved per
 * ingress port and lossless class. A data packet from port i in class c is
 * admitted to the pool while the bytes i,c holds stay within
 * Alpha x (free pool); the first packet that does not fit goes to i's
 * headroom and makes the switch pause i,c (XOFF). When i,c has no headroom
 * in use and holds at most the threshold minus XonOffset, it resumes (XON).
 * A packet that fits neither is dropped (with the formula's headroom this
 * does not happen). Without PFC the same threshold applies to each egress
 * queue, and a packet over it is dropped.
 *
 * Headroom per port (HeadroomBytes 0: this formula, bytes, R in bytes/s):
 *   H = R (2 d + t_r) + 3 F + P
 * d the cable delay, t_r the upstream's PFC response time, F the largest
 * frame (MTU + 62), P the 64-byte PFC frame: the packet that crossed the
 * threshold (F), the frame our port may be sending before the XOFF (F), the
 * XOFF itself (P), its flight and the upstream's reaction (R d + R t_r), the
 * upstream's frame in progress (F) and the data on the cable (R d).
 */
class DltraceRdmaSwitchMmu : public Object
{
  public:
    static TypeId GetTypeId();
    DltraceRdmaSwitchMmu();

    /// The formula above, bytes.
    static uint64_t PfcHeadroom(uint64_t rateBps, Time cableDelay, uint32_t mtuPayload, Time responseTime);

    /// Adds port DEVICE (index = call order) on a cable of DELAY.
    uint32_t AddPort(Ptr<DltraceRdmaNetDevice> device, Time delay);
    /// Admits SIZE bytes arriving on IN_PORT for OUT_PORT in class PRIORITY; false: dropped.
    bool Admit(uint32_t inPort, uint32_t outPort, uint32_t priority, uint32_t size);
    /// SIZE bytes that came in on IN_PORT in class PRIORITY left the switch.
    void Release(uint32_t inPort, uint32_t priority, uint32_t size);
    /// RED-style marking decision for a packet joining OUT_PORT's class PRIORITY queue.
    bool ShouldMarkEcn(uint32_t outPort, uint32_t priority);
    /// Marking probability at queue length QUEUE_BYTES on a port of RATE_BPS.
    double MarkProbability(uint64_t queueBytes, uint64_t rateBps) const;

    uint64_t GetDrops() const;
    uint64_t GetEcnMarks() const;
    /// Highest headroom use of any port and class, bytes.
    uint64_t GetPeakHeadroomUse() const;
    int64_t AssignStreams(int64_t stream);

  private:
    static constexpr uint32_t kClasses = 8;
    struct Port
    {
        Ptr<DltraceRdmaNetDevice> device;
        uint64_t rateBps = 0;
        uint64_t headroom = 0;
        std::array<uint64_t, kClasses> shared{};   ///< pool bytes held, per class
        std::array<uint64_t, kClasses> headroomUsed{};
        std::array<bool, kClasses> paused{};
    };

    uint64_t Threshold() const;
    void RecomputePool();

    // Attributes (their defaults are in GetTypeId())
    uint64_t m_bufferSize{0};
    double m_alpha{0};
    bool m_pfcEnabled{false};
    uint64_t m_headroomBytes{0};
    uint32_t m_xonOffset{0};
    uint32_t m_losslessClasses{0};
    Time m_responseTime;
    bool m_ecnEnabled{false};
    uint64_t m_kMin{0};
    uint64_t m_kMax{0};
    double m_pMax{0};
    uint64_t m_ecnReferenceRate{0};

    std::vector<Port> m_ports;
    uint64_t m_poolSize;
    uint64_t m_poolUsed;
    uint64_t m_drops;
    uint64_t m_marks;
    uint64_t m_peakHeadroom;
    Ptr<UniformRandomVariable> m_rng;
};

} // namespace ns3

#endif /* DLTRACE_RDMA_SWITCH_MMU_H */
