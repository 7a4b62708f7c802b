// SPDX-License-Identifier: GPL-2.0-only
// DltraceNetworkHelper: TCP defaults and congestion control by name, the
// Internet stack with per-flow ECMP, switch and host queue discs, addresses.
#include "dltrace-network-helper.h"

#include "ns3/dltrace-attributes.h"

#include "ns3/boolean.h"
#include "ns3/dltrace-dscp-packet-filter.h"
#include "ns3/config.h"
#include "ns3/dltrace-flow-ecmp-routing.h"
#include "ns3/double.h"
#include "ns3/internet-stack-helper.h"
#include "ns3/ipv4-address-helper.h"
#include "ns3/ipv4-global-routing-helper.h"
#include "ns3/ipv4-list-routing-helper.h"
#include "ns3/ipv4-static-routing-helper.h"
#include "ns3/log.h"
#include "ns3/queue-disc.h"
#include "ns3/string.h"
#include "ns3/tcp-congestion-ops.h"
#include "ns3/tcp-dctcp.h"
#include "ns3/traffic-control-helper.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <vector>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceNetworkHelper");

NS_OBJECT_ENSURE_REGISTERED(DltraceNetworkHelper);

namespace
{

std::string
Lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

// One counter of the queue discs' statistics, summed over QUEUES.
uint64_t
SumStats(const QueueDiscContainer& queues, uint32_t QueueDisc::Stats::*counter)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < queues.GetN(); ++i)
    {
        n += queues.Get(i)->GetStats().*counter;
    }
    return n;
}

} // namespace

bool
DltraceFindCongestionControl(const std::string& name, TypeId* tid, std::string* error)
{
    const TypeId base = TcpCongestionOps::GetTypeId();
    std::vector<std::string> names;
    std::string want = Lower(name);
    want.erase(std::remove(want.begin(), want.end(), '-'), want.end()); // mltcp-newreno
    for (uint32_t i = 0; i < TypeId::GetRegisteredN(); ++i)
    {
        TypeId t = TypeId::GetRegistered(i);
        if (t == base || !t.IsChildOf(base) || !t.HasConstructor())
        {
            continue;
        }
        const std::string full = t.GetName();        // ns3::TcpCubic
        const std::string shortName = full.substr(5); // TcpCubic
        names.push_back(shortName);
        const std::string l = Lower(shortName);
        if (want == Lower(full) || want == l || (l.rfind("tcp", 0) == 0 && want == l.substr(3)))
        {
            *tid = t;
            return true;
        }
    }
    std::sort(names.begin(), names.end());
    std::string list;
    for (const auto& n : names)
    {
        list += (list.empty() ? "" : ", ") + n;
    }
    *error = "unknown TCP congestion control '" + name + "' (one of " + list + ")";
    return false;
}

TypeId
DltraceNetworkHelper::GetTypeId()
{
    static TypeId tid = DltraceTypeId<DltraceNetworkHelper, Object>("ns3::DltraceNetworkHelper")
            .AddString("CongestionControl",
                       "TCP congestion control: any TcpCongestionOps TypeId, full "
                       "(ns3::TcpDctcp), short (TcpDctcp) or without Tcp (dctcp, cubic), any case.",
                       "TcpNewReno", &DltraceNetworkHelper::m_congestionControl)
            .AddUinteger("SegmentSize",
                         "TCP MSS in bytes; ConfigureTcp() accepts 64 to 65000.",
                         1448, &DltraceNetworkHelper::m_segmentSize)
            .AddUinteger("SndBufSize",
                         "TCP send buffer in bytes (0: kDltraceDefaultSndBuf, 256 KiB).",
                         0, &DltraceNetworkHelper::m_sndBufBytes)
            .AddUinteger("RcvBufSize",
                         "TCP receive buffer in bytes (0: kDltraceDefaultRcvBuf, 256 KiB).",
                         0, &DltraceNetworkHelper::m_rcvBufBytes)
            .AddTime("MinRto",
                     "TCP minimum retransmission timeout; the delayed-ACK timeout is a fifth "
                     "of it (Linux's 40 ms against 200 ms).",
                     MilliSeconds(10), &DltraceNetworkHelper::m_minRto)
            .AddString("Recovery",
                       "Loss recovery: classic (RFC 6582) or prr. ns-3.37's PRR can leave a "
                       "flow retransmitting every RTO without progress after heavy loss at "
                       "a shared FIFO (seen in the module's two-job test), so classic is "
                       "the default.",
                       "classic", &DltraceNetworkHelper::m_recovery)
            .AddString("QueueDisc",
                       "Switch egress queue disc: auto (red-ecn for TcpDctcp, else fifo), "
                       "fifo, red, red-ecn, codel, fq-codel, pie or pfifo-fast.",
                       "auto", &DltraceNetworkHelper::m_queueDisc)
            .AddUinteger("QueuePackets",
                         "Switch egress queue limit in packets (red and red-ecn: at least 4 K).",
                         1000, &DltraceNetworkHelper::m_queuePackets)
            .AddUinteger("EcnThreshold",
                         "red and red-ecn threshold K in packets (0: 65 at 10 Gbit/s, the "
                         "DCTCP paper's setting, scaled with the host link rate, at least 20).",
                         0, &DltraceNetworkHelper::m_ecnThresholdPackets)
            .AddBoolean("Priorities",
                        "Jobs carry traffic classes (--job ...:priority=N, sockets marked "
                        "DSCP CS<N>): switch ports serve 8 FIFO bands by strict priority "
                        "(PrioQueueDisc, classified by DltraceDscpPacketFilter); needs the "
                        "fifo queue (or auto without ECN).",
                        false, &DltraceNetworkHelper::m_priorities);
    return tid;
}

DltraceNetworkHelper::DltraceNetworkHelper()
    : m_ecnK(0)
{
}

DltraceNetworkHelper::~DltraceNetworkHelper() = default;

void
DltraceNetworkHelper::DoDispose()
{
    m_switchQueues = QueueDiscContainer();
    m_hostQueues = QueueDiscContainer();
    DltraceEcmpPaths::SetCurrent(nullptr);
    Object::DoDispose();
}

bool
DltraceNetworkHelper::ConfigureTcp(std::string* error)
{
    if (!DltraceFindCongestionControl(m_congestionControl, &m_cc, error))
    {
        return false;
    }
    if (m_segmentSize < 64 || m_segmentSize > 65000)
    {
        *error = "segment size " + std::to_string(m_segmentSize) +
                 " is out of range (64 to 65000 bytes)";
        return false;
    }
    const uint32_t snd = m_sndBufBytes ? m_sndBufBytes : kDltraceDefaultSndBuf;
    const uint32_t rcv = m_rcvBufBytes ? m_rcvBufBytes : kDltraceDefaultRcvBuf;
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(m_cc));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(m_segmentSize));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(snd));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(rcv));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(m_minRto));
    // The delayed-ACK timer stays well under the minimum RTO, at Linux's ratio
    // (40 ms against 200 ms). ns-3's default of 200 ms against a 10 ms minimum
    // RTO makes every flight of one segment time out: the receiver holds its
    // ACK for a second segment that never comes, the sender retransmits after
    // 10 ms and restarts from a window of one, and the connection then moves
    // one segment per RTO (a 2 MB message in 13.8 s, nothing dropped).
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(m_minRto / 5));
    const std::string recovery = Lower(m_recovery);
    if (recovery != "classic" && recovery != "prr")
    {
        *error = "unknown loss recovery '" + m_recovery + "' (classic or prr)";
        return false;
    }
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                       TypeIdValue(TypeId::LookupByName(recovery == "prr" ? "ns3::TcpPrrRecovery"
                                                                          : "ns3::TcpClassicRecovery")));
    if (m_cc.GetName() == "ns3::TcpBbr")
    {
        // BBR paces its sending; ns-3 leaves pacing off unless asked.
        Config::SetDefault("ns3::TcpSocketState::EnablePacing", BooleanValue(true));
    }
    return true;
}

bool
DltraceNetworkHelper::Install(const DltraceTopologyHelper& topology, std::string* error)
{
    NodeContainer all(topology.GetHosts(), topology.GetSwitches());
    Ipv4ListRoutingHelper list;
    Ipv4StaticRoutingHelper staticRouting;
    DltraceFlowEcmpRoutingHelper ecmp;
    list.Add(staticRouting, 0);
    list.Add(ecmp, -10);
    InternetStackHelper stack;
    stack.SetRoutingHelper(list);
    stack.Install(all);
    if (!InstallQueues(topology, error))
    {
        return false;
    }
    Ipv4AddressHelper address;
    address.SetBase("10.0.0.0", "255.255.255.252");
    for (const auto& link : topology.GetLinks())
    {
        NetDeviceContainer pair(link.a, link.b);
        address.Assign(pair);
        address.NewNetwork();
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();
    // dltrace connections take the paths the flow engine gives them.
    const dltrace::models::TopologyGraph& graph = topology.GetGraph();
    auto paths = std::make_shared<DltraceEcmpPaths>(graph);
    const auto& links = topology.GetLinks();
    for (uint32_t i = 0; i < links.size(); ++i)
    {
        const uint32_t ends[2] = {graph.links[i].a, graph.links[i].b};
        for (int side = 0; side < 2; ++side)
        {
            Ptr<NetDevice> dev = side == 0 ? links[i].a : links[i].b;
            Ptr<Ipv4> ipv4 = dev->GetNode()->GetObject<Ipv4>();
            const int32_t interface = ipv4->GetInterfaceForDevice(dev);
            paths->AddInterface(dev->GetNode()->GetId(),
                                ends[side],
                                i,
                                uint32_t(interface),
                                ipv4->GetAddress(uint32_t(interface), 0).GetLocal());
            if (!graph.IsSwitch(ends[side]))
            {
                paths->AddHostAddress(ipv4->GetAddress(uint32_t(interface), 0).GetLocal(), ends[side]);
            }
        }
    }
    DltraceEcmpPaths::SetCurrent(paths);
    return true;
}

bool
DltraceNetworkHelper::InstallQueues(const DltraceTopologyHelper& topology, std::string* error)
{
    std::string kind = Lower(m_queueDisc);
    // DCTCP and what extends it (TcpMltcpDctcp) need ECN-marking queues.
    const bool dctcp = m_cc == TcpDctcp::GetTypeId() || m_cc.IsChildOf(TcpDctcp::GetTypeId());
    if (kind == "auto")
    {
        kind = dctcp ? "red-ecn" : "fifo";
    }
    const std::string limit = std::to_string(m_queuePackets) + "p";
    // DCTCP's marking threshold: K = 65 packets at 10 Gbit/s (the DCTCP
    // paper's setting), scaled with the host link rate (every host link has
    // the topology's rate), at least 20.
    uint64_t hostRateBps = 0;
    for (const auto& link : topology.GetLinks())
    {
        if (link.hostLink)
        {
            hostRateBps = link.rateBps;
            break;
        }
    }
    m_ecnK = m_ecnThresholdPackets
                 ? m_ecnThresholdPackets
                 : std::max<uint32_t>(20, uint32_t(std::llround(65.0 * hostRateBps / 1e10)));
    TrafficControlHelper sw;
    if (m_priorities && kind != "fifo")
    {
        *error = "job priorities over TCP use strict-priority FIFO bands at the switches; "
                 "queue '" + kind + "' cannot be one (use --queue fifo, or --transport rdma)";
        return false;
    }
    if (kind == "fifo" && m_priorities)
    {
        const uint16_t handle = sw.SetRootQueueDisc("ns3::PrioQueueDisc");
        // By TypeId, so the filter is linked in from the static library.
        sw.AddPacketFilter(handle, DltraceDscpPacketFilter::GetTypeId().GetName());
        TrafficControlHelper::ClassIdList classes =
            sw.AddQueueDiscClasses(handle, 8, "ns3::QueueDiscClass");
        sw.AddChildQueueDiscs(handle,
                              classes,
                              "ns3::FifoQueueDisc",
                              "MaxSize",
                              QueueSizeValue(QueueSize(limit)));
    }
    else if (kind == "fifo")
    {
        sw.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", QueueSizeValue(QueueSize(limit)));
    }
    else if (kind == "red" || kind == "red-ecn")
    {
        const bool ecn = kind == "red-ecn";
        const double k = double(m_ecnK);
        sw.SetRootQueueDisc("ns3::RedQueueDisc",
                            "MaxSize",
                            QueueSizeValue(QueueSize(
                                std::to_string(std::max<uint32_t>(m_queuePackets, 4 * m_ecnK)) + "p")),
                            "UseEcn",
                            BooleanValue(ecn),
                            "UseHardDrop",
                            BooleanValue(!ecn),
                            "MeanPktSize",
                            UintegerValue(m_segmentSize + 52),
                            "QW",
                            DoubleValue(ecn ? 1.0 : 0.002),
                            "MinTh",
                            DoubleValue(k),
                            "MaxTh",
                            DoubleValue(ecn ? k + 1 : 3 * k),
                            "LInterm",
                            DoubleValue(ecn ? 1.0 : 50.0));
        if (ecn && !dctcp)
        {
            NS_LOG_WARN("red-ecn marks only ECN-capable traffic; " << m_cc.GetName()
                                                                   << " does not set ECT");
        }
    }
    else if (kind == "codel")
    {
        sw.SetRootQueueDisc("ns3::CoDelQueueDisc", "MaxSize", QueueSizeValue(QueueSize(limit)));
    }
    else if (kind == "fq-codel")
    {
        sw.SetRootQueueDisc("ns3::FqCoDelQueueDisc", "MaxSize", QueueSizeValue(QueueSize(limit)));
    }
    else if (kind == "pie")
    {
        sw.SetRootQueueDisc("ns3::PieQueueDisc", "MaxSize", QueueSizeValue(QueueSize(limit)));
    }
    else if (kind == "pfifo-fast")
    {
        sw.SetRootQueueDisc("ns3::PfifoFastQueueDisc", "MaxSize", QueueSizeValue(QueueSize(limit)));
    }
    else
    {
        *error = "unknown queue discipline '" + m_queueDisc +
                 "' (auto, fifo, red, red-ecn, codel, fq-codel, pie, pfifo-fast)";
        return false;
    }
    m_queueKind = kind;
    // Hosts: per-flow fair queueing, as Linux's default fq_codel does, so a
    // host's ACKs do not wait behind its own bulk data (a shared FIFO there
    // stretches every RTT by the send buffer and slows a ring by ~4%).
    TrafficControlHelper host;
    host.SetRootQueueDisc("ns3::FqCoDelQueueDisc", "MaxSize", QueueSizeValue(QueueSize("100000p")));
    for (const auto& link : topology.GetLinks())
    {
        for (Ptr<NetDevice> dev : {link.a, link.b})
        {
            if (topology.IsSwitch(dev->GetNode()))
            {
                m_switchQueues.Add(sw.Install(dev));
            }
            else
            {
                m_hostQueues.Add(host.Install(dev));
            }
        }
    }
    return true;
}

TypeId
DltraceNetworkHelper::GetCongestionControl() const
{
    return m_cc;
}

std::string
DltraceNetworkHelper::GetQueueDiscDescription() const
{
    if (m_queueKind == "red-ecn" || m_queueKind == "red")
    {
        return m_queueKind + " (K=" + std::to_string(m_ecnK) + "p)";
    }
    return m_queueKind + " (" + std::to_string(m_queuePackets) + "p)";
}

uint64_t
DltraceNetworkHelper::GetEcnMarks() const
{
    return SumStats(m_switchQueues, &QueueDisc::Stats::nTotalMarkedPackets);
}

uint64_t
DltraceNetworkHelper::GetSwitchQueueDrops() const
{
    return SumStats(m_switchQueues, &QueueDisc::Stats::nTotalDroppedPackets);
}

uint64_t
DltraceNetworkHelper::GetHostQueueDrops() const
{
    return SumStats(m_hostQueues, &QueueDisc::Stats::nTotalDroppedPackets);
}

} // namespace ns3
