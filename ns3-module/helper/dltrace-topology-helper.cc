// SPDX-License-Identifier: GPL-2.0-only
// ns-3 nodes and point-to-point links for a topology that models/ defines
// (models::BuildTopology); the spec parser and the graph live there.
#include "dltrace-topology-helper.h"

#include "ns3/data-rate.h"
#include "ns3/log.h"
#include "ns3/point-to-point-helper.h"
#include "ns3/queue-size.h"
#include "ns3/string.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceTopologyHelper");

bool
DltraceTopologyConfig::Parse(const std::string& text,
                             uint32_t hostsNeeded,
                             DltraceTopologyConfig* out,
                             std::string* error)
{
    return dltrace::models::ParseTopology(text, hostsNeeded, out, error);
}

Ptr<Node>
DltraceTopologyHelper::NewSwitch(const std::string& name, uint32_t systemId)
{
    Ptr<Node> node = CreateObject<Node>(systemId);
    m_switches.Add(node);
    m_switchNames.push_back(name);
    return node;
}

void
DltraceTopologyHelper::Connect(Ptr<Node> a,
                               Ptr<Node> b,
                               uint64_t rateBps,
                               Time delay,
                               bool hostLink,
                               const std::string& name,
                               const std::string& reverseName)
{
    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate(rateBps)));
    p2p.SetChannelAttribute("Delay", TimeValue(delay));
    // A short device queue: packets wait in the queue disc, where AQM and
    // ECN marking act (a long device queue would hide them).
    p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", QueueSizeValue(QueueSize("2p")));
    NetDeviceContainer d = p2p.Install(a, b);
    m_links.push_back({d.Get(0), d.Get(1), name, reverseName, rateBps, hostLink});
}

void
DltraceTopologyHelper::Build(const DltraceTopologyConfig& c, const std::vector<uint32_t>& systemId)
{
    m_hosts = NodeContainer();
    m_switches = NodeContainer();
    m_switchNames.clear();
    m_links.clear();
    m_graph = dltrace::models::BuildTopology(c);
    const dltrace::models::TopologyGraph& graph = m_graph;
    auto system = [&systemId](uint32_t i) { return i < systemId.size() ? systemId[i] : 0; };
    // Hosts first, then switches: node ids are the graph's on every partition.
    for (uint32_t h = 0; h < graph.hosts; ++h)
    {
        m_hosts.Add(CreateObject<Node>(system(h)));
    }
    std::vector<Ptr<Node>> nodes;
    for (uint32_t i = 0; i < graph.names.size(); ++i)
    {
        nodes.push_back(graph.IsSwitch(i) ? NewSwitch(graph.names[i], system(i)) : m_hosts.Get(i));
    }
    for (const auto& link : graph.links)
    {
        Connect(nodes[link.a],
                nodes[link.b],
                link.rate_bps,
                NanoSeconds(int64_t(link.delay_ns)),
                link.host_link,
                link.name,
                graph.names[link.b] + "-" + graph.names[link.a]);
    }
}

NodeContainer
DltraceTopologyHelper::GetHosts() const
{
    return m_hosts;
}

NodeContainer
DltraceTopologyHelper::GetSwitches() const
{
    return m_switches;
}

const std::vector<DltraceTopologyHelper::Link>&
DltraceTopologyHelper::GetLinks() const
{
    return m_links;
}

const dltrace::models::TopologyGraph&
DltraceTopologyHelper::GetGraph() const
{
    return m_graph;
}

bool
DltraceTopologyHelper::IsSwitch(Ptr<Node> node) const
{
    for (uint32_t i = 0; i < m_switches.GetN(); ++i)
    {
        if (m_switches.Get(i) == node)
        {
            return true;
        }
    }
    return false;
}

} // namespace ns3
