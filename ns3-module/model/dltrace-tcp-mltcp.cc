// SPDX-License-Identifier: GPL-2.0-only
// MLTCP variants of TcpNewReno and TcpDctcp, and their binding to a job's
// progress on the sockets the dltrace transport opens.
#include "dltrace-tcp-mltcp.h"

#include "dltrace-attributes.h"

#include "ns3/boolean.h"
#include "ns3/double.h"
#include "ns3/log.h"
#include "ns3/object-factory.h"
#include "ns3/tcp-l4-protocol.h"
#include "ns3/tcp-socket-base.h"
#include "ns3/type-id.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceTcpMltcp");

NS_OBJECT_ENSURE_REGISTERED(TcpMltcpNewReno);
NS_OBJECT_ENSURE_REGISTERED(TcpMltcpDctcp);

void
DltraceMltcp::BindProgress(std::shared_ptr<dltrace::models::JobProgress> progress, int32_t endpoint)
{
    m_progress = std::move(progress);
    m_endpoint = endpoint;
}

double
DltraceMltcp::GetGain() const
{
    if (!m_progress)
    {
        return 1.0;
    }
    const dltrace::models::MltcpFunction f{m_slope, m_intercept};
    return f(m_progress->Ratio(m_endpoint,
                               m_perEndpoint ? dltrace::models::MltcpScope::kEndpoint
                                             : dltrace::models::MltcpScope::kJob));
}

void
DltraceBindMltcp(Ptr<Socket> socket, std::shared_ptr<dltrace::models::JobProgress> progress, int32_t endpoint)
{
    Ptr<TcpSocketBase> tcp = DynamicCast<TcpSocketBase>(socket);
    Ptr<TcpL4Protocol> l4 = socket->GetNode()->GetObject<TcpL4Protocol>();
    if (!tcp || !l4 || !progress)
    {
        return;
    }
    TypeIdValue type;
    l4->GetAttribute("SocketType", type);
    ObjectFactory factory;
    factory.SetTypeId(type.Get());
    Ptr<TcpCongestionOps> ops = factory.Create<TcpCongestionOps>();
    auto* mltcp = dynamic_cast<DltraceMltcp*>(PeekPointer(ops));
    if (!mltcp)
    {
        return; // not an MLTCP variant: the socket keeps its own instance
    }
    mltcp->BindProgress(std::move(progress), endpoint);
    tcp->SetCongestionControlAlgorithm(ops);
}

template <class C, class P>
TypeId
DltraceMltcp::MltcpTypeId(const std::string& name)
{
    return DltraceTypeId<C, P>(name)
        .AddDouble("Slope",
                   "S of F(r) = S * r + I, r the fraction of the iteration's bytes sent.",
                   dltrace::models::MltcpFunction{}.slope, &DltraceMltcp::m_slope, 0.0)
        .AddDouble("Intercept",
                   "I of F(r) = S * r + I (F = I at an iteration's first byte).",
                   dltrace::models::MltcpFunction{}.intercept, &DltraceMltcp::m_intercept, 0.0)
        .AddBoolean("PerEndpoint",
                    "r counts the sending endpoint's bytes (as the paper's per-flow count; "
                    "false: the whole job's).",
                    true, &DltraceMltcp::m_perEndpoint);
}

TypeId
TcpMltcpNewReno::GetTypeId()
{
    static TypeId tid = MltcpTypeId<TcpMltcpNewReno, TcpNewReno>("ns3::TcpMltcpNewReno");
    return tid;
}

TypeId
TcpMltcpDctcp::GetTypeId()
{
    static TypeId tid = MltcpTypeId<TcpMltcpDctcp, TcpDctcp>("ns3::TcpMltcpDctcp");
    return tid;
}

void
TcpMltcpNewReno::CongestionAvoidance(Ptr<TcpSocketState> tcb, uint32_t segmentsAcked)
{
    // TcpNewReno's increase (MSS^2 / cwnd per ACK, at least one byte), times F.
    if (segmentsAcked > 0)
    {
        double adder = GetGain() * double(tcb->m_segmentSize) * tcb->m_segmentSize / tcb->m_cWnd.Get();
        adder = std::max(1.0, adder);
        tcb->m_cWnd += static_cast<uint32_t>(adder);
        NS_LOG_INFO("MLTCP NewReno: cwnd " << tcb->m_cWnd << " (+" << adder << ")");
    }
}

void
TcpMltcpDctcp::CongestionAvoidance(Ptr<TcpSocketState> tcb, uint32_t segmentsAcked)
{
    // Linux Reno's counting (one MSS per cwnd segments acked) of F * acked.
    m_credit += GetGain() * segmentsAcked;
    const auto whole = static_cast<uint32_t>(m_credit);
    m_credit -= whole;
    if (whole > 0)
    {
        TcpDctcp::CongestionAvoidance(tcb, whole);
    }
}

} // namespace ns3
