// SPDX-License-Identifier: GPL-2.0-only
// DltraceRdmaSwitchMmu: admission, release, PFC decisions and ECN marking.
#include "dltrace-rdma-switch-mmu.h"

#include "dltrace-attributes.h"

#include "dltrace-rdma-header.h"
#include "dltrace-rdma-net-device.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/log.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceRdmaSwitchMmu");

NS_OBJECT_ENSURE_REGISTERED(DltraceRdmaSwitchMmu);

TypeId
DltraceRdmaSwitchMmu::GetTypeId()
{
    static TypeId tid = DltraceTypeId<DltraceRdmaSwitchMmu, Object>("ns3::DltraceRdmaSwitchMmu")
            .AddUinteger("BufferSize",
                         "Packet buffer of the switch (bytes). Default 12 MB: Broadcom Trident "
                         "II, the switch of the DCQCN testbed (Zhu et al., SIGCOMM 2015).",
                         12000000, &DltraceRdmaSwitchMmu::m_bufferSize, 1)
            .AddDouble("Alpha",
                       "Dynamic threshold factor: a port and class may hold Alpha x the free "
                       "shared pool (Choudhury and Hahne, 1998). Default 1/8, as in the "
                       "public RoCE simulators (HPCC's ns-3 code).",
                       0.125, &DltraceRdmaSwitchMmu::m_alpha, 1e-6, 1e6)
            .AddBoolean("PfcEnabled",
                        "Lossless (PFC, 802.1Qbb) or lossy RoCE (drops counted).",
                        true, &DltraceRdmaSwitchMmu::m_pfcEnabled)
            .AddUinteger("HeadroomBytes",
                         "PFC headroom per ingress port and lossless class (bytes); 0: the "
                         "formula R(2d + t_r) + 3(MTU + 62) + 64 of each port.",
                         0, &DltraceRdmaSwitchMmu::m_headroomBytes)
            .AddUinteger("XonOffset",
                         "A paused class resumes once it holds this much below its XOFF "
                         "threshold (bytes). Default 3 KB, the resume offset of the public "
                         "RoCE simulators.",
                         3072, &DltraceRdmaSwitchMmu::m_xonOffset)
            .AddUinteger("LosslessClasses",
                         "Lossless classes each port reserves headroom for.",
                         1, &DltraceRdmaSwitchMmu::m_losslessClasses, 1, 8)
            .AddTime("PfcResponseTime",
                     "Upstream reaction time the headroom formula assumes (s); keep it "
                     "equal to the devices' PfcResponseTime.",
                     MicroSeconds(1), &DltraceRdmaSwitchMmu::m_responseTime, Seconds(0))
            .AddBoolean("EcnEnabled",
                        "Mark ECN (CE) on data packets, RED-style on the instantaneous "
                        "egress queue of their class.",
                        true, &DltraceRdmaSwitchMmu::m_ecnEnabled)
            .AddUinteger("KMin",
                         "Queue (bytes) where marking starts, at EcnReferenceRate; scaled with "
                         "each port's rate. Default 100 KB at 25 Gb/s: production values "
                         "quoted by HPCC's authors (Li et al., SIGCOMM 2019).",
                         100000, &DltraceRdmaSwitchMmu::m_kMin)
            .AddUinteger("KMax",
                         "Queue (bytes) above which every packet is marked, at "
                         "EcnReferenceRate; scaled with rate. Default 400 KB at 25 Gb/s "
                         "(same source).",
                         400000, &DltraceRdmaSwitchMmu::m_kMax)
            .AddDouble("PMax",
                       "Marking probability at KMax. Default 0.2 (same source).",
                       0.2, &DltraceRdmaSwitchMmu::m_pMax, 0, 1)
            .AddUinteger("EcnReferenceRate",
                         "Port rate (bit/s) at which KMin and KMax apply as given.",
                         25000000000ull, &DltraceRdmaSwitchMmu::m_ecnReferenceRate, 1);
    return tid;
}

DltraceRdmaSwitchMmu::DltraceRdmaSwitchMmu()
    : m_poolSize(0),
      m_poolUsed(0),
      m_drops(0),
      m_marks(0),
      m_peakHeadroom(0),
      m_rng(CreateObject<UniformRandomVariable>())
{
}

uint64_t
DltraceRdmaSwitchMmu::PfcHeadroom(uint64_t rateBps, Time cableDelay, uint32_t mtuPayload, Time responseTime)
{
    const uint64_t frame = mtuPayload + DltraceRdmaHeader::kRoceOverhead;
    // Bytes in flight, rounded up, in integers (R in bit/s, times in ns).
    const uint64_t ns = 2 * cableDelay.GetNanoSeconds() + responseTime.GetNanoSeconds();
    const uint64_t inFlight = (rateBps / 1000 * ns + 7999999) / 8000000;
    return inFlight + 3 * frame + DltraceRdmaHeader::kMinFrame;
}

uint32_t
DltraceRdmaSwitchMmu::AddPort(Ptr<DltraceRdmaNetDevice> device, Time delay)
{
    Port p;
    p.device = device;
    p.rateBps = device->GetDataRate().GetBitRate();
    p.headroom = m_headroomBytes > 0
                     ? m_headroomBytes
                     : PfcHeadroom(p.rateBps, delay, device->GetMtu(), m_responseTime);
    m_ports.push_back(p);
    RecomputePool();
    return static_cast<uint32_t>(m_ports.size() - 1);
}

void
DltraceRdmaSwitchMmu::RecomputePool()
{
    uint64_t reserved = 0;
    if (m_pfcEnabled)
    {
        for (const Port& p : m_ports)
        {
            reserved += p.headroom * m_losslessClasses;
        }
    }
    if (reserved >= m_bufferSize)
    {
        NS_FATAL_ERROR("DltraceRdmaSwitchMmu: BufferSize " << m_bufferSize
                                                           << " B cannot hold the PFC headroom of "
                                                           << m_ports.size() << " ports ("
                                                           << reserved << " B)");
    }
    m_poolSize = m_bufferSize - reserved;
}

uint64_t
DltraceRdmaSwitchMmu::Threshold() const
{
    return static_cast<uint64_t>(m_alpha * static_cast<double>(m_poolSize - m_poolUsed));
}

bool
DltraceRdmaSwitchMmu::Admit(uint32_t inPort, uint32_t outPort, uint32_t priority, uint32_t size)
{
    Port& in = m_ports[inPort];
    const uint64_t threshold = Threshold();
    if (!m_pfcEnabled)
    {
        uint64_t egress = m_ports[outPort].device->GetQueueBytes(priority);
        if (m_poolUsed + size > m_poolSize || egress + size > threshold)
        {
            ++m_drops;
            return false;
        }
        in.shared[priority] += size;
        m_poolUsed += size;
        return true;
    }
    if (in.headroomUsed[priority] == 0 && in.shared[priority] + size <= threshold &&
        m_poolUsed + size <= m_poolSize)
    {
        in.shared[priority] += size;
        m_poolUsed += size;
        return true;
    }
    // Over the threshold: this packet and what is still on its way use the headroom.
    if (!in.paused[priority])
    {
        in.paused[priority] = true;
        in.device->SendPause(priority);
    }
    if (in.headroomUsed[priority] + size > in.headroom)
    {
        ++m_drops;
        return false;
    }
    in.headroomUsed[priority] += size;
    m_peakHeadroom = std::max(m_peakHeadroom, in.headroomUsed[priority]);
    return true;
}

void
DltraceRdmaSwitchMmu::Release(uint32_t inPort, uint32_t priority, uint32_t size)
{
    Port& in = m_ports[inPort];
    uint64_t fromHeadroom = std::min<uint64_t>(in.headroomUsed[priority], size);
    in.headroomUsed[priority] -= fromHeadroom;
    uint64_t fromPool = size - fromHeadroom;
    fromPool = std::min(fromPool, in.shared[priority]);
    in.shared[priority] -= fromPool;
    m_poolUsed -= fromPool;
    if (in.paused[priority] && in.headroomUsed[priority] == 0)
    {
        uint64_t threshold = Threshold();
        if (in.shared[priority] == 0 || in.shared[priority] + m_xonOffset <= threshold)
        {
            in.paused[priority] = false;
            in.device->SendResume(priority);
        }
    }
}

double
DltraceRdmaSwitchMmu::MarkProbability(uint64_t queueBytes, uint64_t rateBps) const
{
    const double scale = static_cast<double>(rateBps) / static_cast<double>(m_ecnReferenceRate);
    const double kMin = m_kMin * scale;
    const double kMax = m_kMax * scale;
    const double q = static_cast<double>(queueBytes);
    if (q <= kMin)
    {
        return 0.0;
    }
    if (q > kMax)
    {
        return 1.0;
    }
    return m_pMax * (q - kMin) / std::max(kMax - kMin, 1.0);
}

bool
DltraceRdmaSwitchMmu::ShouldMarkEcn(uint32_t outPort, uint32_t priority)
{
    if (!m_ecnEnabled)
    {
        return false;
    }
    const Port& out = m_ports[outPort];
    double p = MarkProbability(out.device->GetQueueBytes(priority), out.rateBps);
    if (p <= 0.0 || (p < 1.0 && m_rng->GetValue() >= p))
    {
        return false;
    }
    ++m_marks;
    return true;
}

uint64_t
DltraceRdmaSwitchMmu::GetDrops() const
{
    return m_drops;
}

uint64_t
DltraceRdmaSwitchMmu::GetEcnMarks() const
{
    return m_marks;
}

uint64_t
DltraceRdmaSwitchMmu::GetPeakHeadroomUse() const
{
    return m_peakHeadroom;
}

int64_t
DltraceRdmaSwitchMmu::AssignStreams(int64_t stream)
{
    m_rng->SetStream(stream);
    return 1;
}

} // namespace ns3
