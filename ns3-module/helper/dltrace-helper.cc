// SPDX-License-Identifier: GPL-2.0-only
// DltraceHelper: one DltraceApplication per endpoint on the mapped node.
#include "dltrace-helper.h"

#include "ns3/dltrace-application.h"
#include "ns3/dltrace-flow-ecmp-routing.h"
#include "ns3/dltrace-rdma-nic.h"
#include "ns3/ipv4.h"
#include "ns3/log.h"
#include "ns3/pointer.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include "dltrace/executor/schedule_tools.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceHelper");

DltraceHelper::DltraceHelper(Ptr<DltraceJob> job)
    : m_job(job)
{
    m_factory.SetTypeId(DltraceApplication::GetTypeId());
}

void
DltraceHelper::SetAttribute(const std::string& name, const AttributeValue& value)
{
    m_factory.Set(name, value);
}

ApplicationContainer
DltraceHelper::Install(const NodeContainer& hosts)
{
    std::vector<Ptr<Node>> nodes;
    for (uint32_t i = 0; i < hosts.GetN() && i < m_job->GetEndpointCount(); ++i)
    {
        nodes.push_back(hosts.Get(i));
    }
    return Install(nodes);
}

ApplicationContainer
DltraceHelper::Install(const std::vector<Ptr<Node>>& nodes)
{
    const uint32_t n = m_job->GetEndpointCount();
    NS_ABORT_MSG_IF(nodes.size() != n,
                    "DltraceHelper: the job has " << n << " endpoints, " << nodes.size()
                                                  << " nodes were given");
    ApplicationContainer apps;
    for (uint32_t e = 0; e < n; ++e)
    {
        Ptr<Ipv4> ipv4 = nodes[e]->GetObject<Ipv4>();
        if (!ipv4 && nodes[e]->GetObject<DltraceRdmaNic>())
        {
            continue; // an RDMA host: endpoints are reached by host number
        }
        NS_ABORT_MSG_IF(!ipv4 || ipv4->GetNInterfaces() < 2,
                        "DltraceHelper: node " << nodes[e]->GetId()
                                               << " has no IPv4 address (install the Internet "
                                                  "stack and assign addresses first)");
        m_job->SetEndpointAddress(e, ipv4->GetAddress(1, 0).GetLocal());
    }
    AssignSourcePorts(nodes);
    for (uint32_t e = 0; e < n; ++e)
    {
        // A partitioned run (ns-3's distributed simulator) builds every node
        // in every process; an endpoint runs only in its node's partition.
        if (nodes[e]->GetSystemId() != Simulator::GetSystemId())
        {
            continue;
        }
        Ptr<DltraceApplication> app = m_factory.Create<DltraceApplication>();
        app->SetAttribute("Job", PointerValue(m_job));
        app->SetAttribute("Endpoint", UintegerValue(e));
        nodes[e]->AddApplication(app);
        apps.Add(app);
    }
    return apps;
}

void
DltraceHelper::AssignSourcePorts(const std::vector<Ptr<Node>>& nodes)
{
    // Every connection's source port, for every endpoint and in the same
    // order in every process, so that the ECMP hash (job and channel of a
    // connection, DltraceEcmpPaths) is known at every switch: in a
    // partitioned run also for connections opened in another partition.
    auto paths = DltraceEcmpPaths::Current();
    if (!paths)
    {
        return; // no flow-hash ECMP: ports do not choose paths
    }
    for (uint32_t e = 0; e < nodes.size(); ++e)
    {
        if (!nodes[e]->GetObject<Ipv4>())
        {
            continue;
        }
        for (const auto& [peer, lanes] : m_job->GetLanes(e))
        {
            if (peer <= int32_t(e))
            {
                continue; // the lower endpoint of a pair connects
            }
            const InetSocketAddress to(m_job->GetEndpointAddress(uint32_t(peer)),
                                       m_job->GetEndpointPort(uint32_t(peer)));
            for (size_t lane = 0; lane < lanes.size(); ++lane)
            {
                const uint16_t port = paths->NextSourcePort(nodes[e]->GetId());
                if (lane == 0)
                {
                    m_job->SetSourcePort(e, peer, port);
                }
                paths->AddConnection(InetSocketAddress(m_job->GetEndpointAddress(e), port),
                                     to,
                                     m_job->GetIndex(),
                                     lanes[lane]);
            }
        }
    }
}

} // namespace ns3
