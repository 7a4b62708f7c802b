// DltraceRdmaSwitchMmu: admission, release, PFC decisions and ECN marking.
#include "dltrace-rdma-switch-mmu.h"

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
    static TypeId tid =
        TypeId("ns3::DltraceRdmaSwitchMmu")
            .SetParent<Object>()
            .SetGroupName("Dltrace")
            .AddConstructor<DltraceRdmaSwitchMmu>()
            .AddAttribute("BufferSize",
                          "Packet buffer of the switch (bytes). Default 12 MB: Broadcom Trident "
                          "II, the switch of the DCQCN testbed (Zhu et al., SIGCOMM 2015).",
                          UintegerValue(12000000),
                          MakeUintegerAccessor(&DltraceRdmaSwitchMmu::m_bufferSize),
                          MakeUintegerChecker<uint64_t>(1))
            .AddAttribute("Alpha",
                          "Dynamic threshold factor: a port and class may hold Alpha x the free "
                          "shared pool (Choudhury and Hahne, 1998). Default 1/8, as in the "
                          "public RoCE simulators (HPCC's ns-3 code).",
                          DoubleValue(0.125),
                          MakeDoubleAccessor(&DltraceRdmaSwitchMmu::m_alpha),
                          MakeDoubleChecker<double>(1e-6, 1e6))
            .AddAttribute("PfcEnabled",
                          "Lossless (PFC, 802.1Qbb) or lossy RoCE (drops counted).",
                          BooleanValue(true),
                          MakeBooleanAccessor(&DltraceRdmaSwitchMmu::m_pfcEnabled),
                          MakeBooleanChecker())
            .AddAttribute("HeadroomBytes",
                          "PFC headroom per ingress port and lossless class (bytes); 0: the "
                          "formula R(2d + t_r) + 3(MTU + 62) + 64 of each port.",
                          UintegerValue(0),
                          MakeUintegerAccessor(&DltraceRdmaSwitchMmu::m_headroomBytes),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("XonOffset",
                          "A paused class resumes once it holds this much below its XOFF "
                          "threshold (bytes). Default 3 KB, the resume offset of the public "
                          "RoCE simulators.",
                          UintegerValue(3072),
                          MakeUintegerAccessor(&DltraceRdmaSwitchMmu::m_xonOffset),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("LosslessClasses",
                          "Lossless classes each port reserves headroom for.",
                          UintegerValue(1),
                          MakeUintegerAccessor(&DltraceRdmaSwitchMmu::m_losslessClasses),
                          MakeUintegerChecker<uint32_t>(1, 8))
            .AddAttribute("PfcResponseTime",
                          "Upstream reaction time the headroom formula assumes (s); keep it "
                          "equal to the devices' PfcResponseTime.",
                          TimeValue(MicroSeconds(1)),
                          MakeTimeAccessor(&DltraceRdmaSwitchMmu::m_responseTime),
                          MakeTimeChecker(Seconds(0)))
            .AddAttribute("EcnEnabled",
                          "Mark ECN (CE) on data packets, RED-style on the instantaneous "
                          "egress queue of their class.",
                          BooleanValue(true),
                          MakeBooleanAccessor(&DltraceRdmaSwitchMmu::m_ecnEnabled),
                          MakeBooleanChecker())
            .AddAttribute("KMin",
                          "Queue (bytes) where marking starts, at EcnReferenceRate; scaled with "
                          "each port's rate. Default 100 KB at 25 Gb/s: production values "
                          "quoted by HPCC's authors (Li et al., SIGCOMM 2019).",
                          UintegerValue(100000),
                          MakeUintegerAccessor(&DltraceRdmaSwitchMmu::m_kMin),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("KMax",
                          "Queue (bytes) above which every packet is marked, at "
                          "EcnReferenceRate; scaled with rate. Default 400 KB at 25 Gb/s "
                          "(same source).",
                          UintegerValue(400000),
                          MakeUintegerAccessor(&DltraceRdmaSwitchMmu::m_kMax),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("PMax",
                          "Marking probability at KMax. Default 0.2 (same source).",
                          DoubleValue(0.2),
                          MakeDoubleAccessor(&DltraceRdmaSwitchMmu::m_pMax),
                          MakeDoubleChecker<double>(0, 1))
            .AddAttribute("EcnReferenceRate",
                          "Port rate (bit/s) at which KMin and KMax apply as given.",
                          UintegerValue(25000000000ull),
                          MakeUintegerAccessor(&DltraceRdmaSwitchMmu::m_ecnReferenceRate),
                          MakeUintegerChecker<uint64_t>(1));
    return tid;
}

DltraceRdmaSwitchMmu::DltraceRdmaSwitchMmu()
    : m_bufferSize(12000000),
      m_alpha(0.125),
      m_pfcEnabled(true),
      m_headroomBytes(0),
      m_xonOffset(3072),
      m_losslessClasses(1),
      m_ecnEnabled(true),
      m_kMin(100000),
      m_kMax(400000),
      m_pMax(0.2),
      m_ecnReferenceRate(25000000000ull),
      m_poolSize(0),
      m_poolUsed(0),
      m_drops(0),
      m_marks(0),
      m_headroomAdmits(0),
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
    ++m_headroomAdmits;
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
DltraceRdmaSwitchMmu::GetHeadroom(uint32_t port) const
{
    return m_ports[port].headroom;
}

uint64_t
DltraceRdmaSwitchMmu::GetPoolSize() const
{
    return m_poolSize;
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
DltraceRdmaSwitchMmu::GetHeadroomAdmits() const
{
    return m_headroomAdmits;
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
