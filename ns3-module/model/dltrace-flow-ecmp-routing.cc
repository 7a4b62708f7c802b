// SPDX-License-Identifier: GPL-2.0-only
// Per-flow ECMP on top of ns-3's global routing tables.
#include "dltrace-flow-ecmp-routing.h"

#include "dltrace-attributes.h"
#include "dltrace-job.h"

#include "ns3/abort.h"
#include "ns3/global-router-interface.h"
#include "ns3/ipv4-route.h"
#include "ns3/ipv4-routing-table-entry.h"
#include "ns3/log.h"
#include "ns3/node.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceFlowEcmpRouting");

NS_OBJECT_ENSURE_REGISTERED(DltraceFlowEcmpRouting);

namespace
{
std::shared_ptr<DltraceEcmpPaths> g_paths;
} // namespace

DltraceEcmpPaths::DltraceEcmpPaths(dltrace::models::TopologyGraph graph)
    : m_graph(std::move(graph))
{
}

void
DltraceEcmpPaths::AddInterface(uint32_t nodeId,
                               uint32_t graphNode,
                               uint32_t link,
                               uint32_t interface,
                               Ipv4Address address)
{
    m_graphNode[nodeId] = graphNode;
    m_interface[{graphNode, link}] = {interface, address};
}

void
DltraceEcmpPaths::AddHostAddress(Ipv4Address address, uint32_t host)
{
    m_hostOf[address.Get()] = host;
}

void
DltraceEcmpPaths::AddConnection(const InetSocketAddress& a,
                                const InetSocketAddress& b,
                                uint32_t job,
                                uint16_t lane)
{
    const uint32_t ia = a.GetIpv4().Get();
    const uint32_t ib = b.GetIpv4().Get();
    m_connections[Key{ia, ib, a.GetPort(), b.GetPort()}] = Connection{job, lane, {}};
    m_connections[Key{ib, ia, b.GetPort(), a.GetPort()}] = Connection{job, lane, {}};
}

uint16_t
DltraceEcmpPaths::NextSourcePort(uint32_t nodeId)
{
    uint16_t& next = m_nextSourcePort.try_emplace(nodeId, uint16_t(49152)).first->second;
    NS_ABORT_MSG_IF(next == 0, "dltrace: node " << nodeId << " opens more than 16,384 connections");
    return next++;
}

const std::vector<uint32_t>&
DltraceEcmpPaths::HopsTo(uint32_t node)
{
    auto hops = m_hopsTo.find(node);
    if (hops == m_hopsTo.end())
    {
        hops = m_hopsTo.emplace(node, m_graph.HopsTo(node)).first;
    }
    return hops->second;
}

DltraceEcmpPaths::Hop
DltraceEcmpPaths::Next(uint32_t nodeId,
                       Ipv4Address source,
                       Ipv4Address destination,
                       uint16_t sourcePort,
                       uint16_t destinationPort)
{
    auto c = m_connections.find(Key{source.Get(), destination.Get(), sourcePort, destinationPort});
    auto node = m_graphNode.find(nodeId);
    auto from = m_hostOf.find(source.Get());
    auto to = m_hostOf.find(destination.Get());
    if (c == m_connections.end() || node == m_graphNode.end() || from == m_hostOf.end() ||
        to == m_hostOf.end())
    {
        return {};
    }
    Connection& conn = c->second;
    if (conn.path.empty())
    {
        const uint16_t channel = dltrace::models::LaneChannel(conn.lane);
        conn.path = dltrace::models::ConnectionPath(
            m_graph,
            from->second,
            to->second,
            channel,
            dltrace::models::LaneMode(conn.lane),
            dltrace::models::FlowHash(from->second, to->second, conn.job, channel),
            [this](uint32_t n) -> const std::vector<uint32_t>& { return HopsTo(n); });
    }
    // The path's link that leaves this node (a path visits a node once).
    uint32_t at = from->second;
    for (uint32_t link : conn.path)
    {
        const auto& l = m_graph.links[link];
        const uint32_t next = l.a == at ? l.b : l.a;
        if (at == node->second)
        {
            auto mine = m_interface.find({at, link});
            auto theirs = m_interface.find({next, link});
            if (mine == m_interface.end() || theirs == m_interface.end())
            {
                return {};
            }
            return {mine->second.first, theirs->second.second};
        }
        at = next;
    }
    return {};
}

std::shared_ptr<DltraceEcmpPaths>
DltraceEcmpPaths::Current()
{
    return g_paths;
}

void
DltraceEcmpPaths::SetCurrent(std::shared_ptr<DltraceEcmpPaths> paths)
{
    g_paths = std::move(paths);
}

TypeId
DltraceFlowEcmpRouting::GetTypeId()
{
    static TypeId tid =
        DltraceTypeId<DltraceFlowEcmpRouting, Ipv4GlobalRouting>("ns3::DltraceFlowEcmpRouting");
    return tid;
}

DltraceFlowEcmpRouting::DltraceFlowEcmpRouting()
    : m_nodeId(0),
      m_salt(0)
{
}

void
DltraceFlowEcmpRouting::DoDispose()
{
    m_ipv4 = nullptr;
    m_cache.clear();
    Ipv4GlobalRouting::DoDispose();
}

void
DltraceFlowEcmpRouting::SetIpv4(Ptr<Ipv4> ipv4)
{
    Ipv4GlobalRouting::SetIpv4(ipv4);
    m_ipv4 = ipv4;
    Ptr<Node> node = ipv4->GetObject<Node>();
    // Different salts per switch keep the hash from sending every flow the
    // same way at each tier (polarisation).
    m_nodeId = node ? node->GetId() : 0;
    m_salt = node ? (node->GetId() + 1) * 0x9E3779B1u : 0;
}

void
DltraceFlowEcmpRouting::NotifyInterfaceUp(uint32_t interface)
{
    m_cache.clear();
    Ipv4GlobalRouting::NotifyInterfaceUp(interface);
}

void
DltraceFlowEcmpRouting::NotifyInterfaceDown(uint32_t interface)
{
    m_cache.clear();
    Ipv4GlobalRouting::NotifyInterfaceDown(interface);
}

const std::vector<DltraceFlowEcmpRouting::Hop>&
DltraceFlowEcmpRouting::Hops(Ipv4Address destination)
{
    auto it = m_cache.find(destination.Get());
    if (it != m_cache.end())
    {
        return it->second;
    }
    // Host routes win over network routes, as in Ipv4GlobalRouting.
    std::vector<Hop> host;
    std::vector<Hop> network;
    const uint32_t n = GetNRoutes();
    for (uint32_t i = 0; i < n; ++i)
    {
        Ipv4RoutingTableEntry* r = GetRoute(i);
        if (r->IsHost())
        {
            if (r->GetDest() == destination)
            {
                host.push_back({r->GetGateway(), r->GetInterface()});
            }
        }
        else if (r->GetDestNetworkMask().IsMatch(destination, r->GetDestNetwork()))
        {
            network.push_back({r->GetGateway(), r->GetInterface()});
        }
    }
    return m_cache[destination.Get()] = host.empty() ? network : host;
}

Ptr<Ipv4Route>
DltraceFlowEcmpRouting::MakeRoute(const Ipv4Header& header, uint32_t interface, Ipv4Address gateway) const
{
    Ptr<Ipv4Route> route = Create<Ipv4Route>();
    route->SetDestination(header.GetDestination());
    // A node's address is its first interface's, whichever link a packet
    // leaves by: TCP takes a connecting socket's address from the route
    // (TcpSocketBase::SetupEndpoint asks with no packet, so no path yet), and
    // a GPU with NVLink and NIC links must keep the address its endpoint
    // listens on and its connections were registered with.
    const Ipv4Address given = header.GetSource();
    route->SetSource(given != Ipv4Address() && given != Ipv4Address::GetAny()
                         ? given
                         : m_ipv4->GetAddress(m_ipv4->GetNInterfaces() > 1 ? 1 : interface, 0).GetLocal());
    route->SetGateway(gateway);
    route->SetOutputDevice(m_ipv4->GetNetDevice(interface));
    return route;
}

Ptr<Ipv4Route>
DltraceFlowEcmpRouting::Lookup(const Ipv4Header& header, Ptr<const Packet> p, Ptr<NetDevice> oif)
{
    // Ports are the first four bytes of TCP and UDP headers.
    uint8_t ports[4] = {};
    if (!oif && p && p->GetSize() >= 4 && (header.GetProtocol() == 6 || header.GetProtocol() == 17))
    {
        p->CopyData(ports, 4);
    }
    // A dltrace connection follows its path, even where that leaves the
    // shortest routes (through a relay GPU).
    if (const auto& paths = g_paths; paths && !oif)
    {
        const DltraceEcmpPaths::Hop hop = paths->Next(m_nodeId,
                                                      header.GetSource(),
                                                      header.GetDestination(),
                                                      uint16_t(ports[0] << 8 | ports[1]),
                                                      uint16_t(ports[2] << 8 | ports[3]));
        if (hop.interface != UINT32_MAX)
        {
            return MakeRoute(header, hop.interface, hop.gateway);
        }
    }
    const std::vector<Hop>& hops = Hops(header.GetDestination());
    const Hop* chosen = nullptr;
    if (oif)
    {
        for (const Hop& h : hops)
        {
            if (m_ipv4->GetNetDevice(h.interface) == oif)
            {
                chosen = &h;
                break;
            }
        }
    }
    else if (hops.size() == 1)
    {
        chosen = &hops[0];
    }
    else if (!hops.empty())
    {
        uint64_t h = 1469598103934665603ull ^ m_salt;
        auto mix = [&h](uint32_t v) {
            for (int i = 0; i < 4; ++i)
            {
                h ^= (v >> (8 * i)) & 0xFF;
                h *= 1099511628211ull;
            }
        };
        mix(header.GetSource().Get());
        mix(header.GetDestination().Get());
        mix(header.GetProtocol());
        mix(uint32_t(ports[0]) << 24 | uint32_t(ports[1]) << 16 | uint32_t(ports[2]) << 8 | ports[3]);
        chosen = &hops[(h ^ (h >> 29)) % hops.size()];
    }
    if (!chosen)
    {
        return nullptr;
    }
    return MakeRoute(header, chosen->interface, chosen->gateway);
}

Ptr<Ipv4Route>
DltraceFlowEcmpRouting::RouteOutput(Ptr<Packet> p,
                                    const Ipv4Header& header,
                                    Ptr<NetDevice> oif,
                                    Socket::SocketErrno& sockerr)
{
    if (header.GetDestination().IsMulticast())
    {
        return Ipv4GlobalRouting::RouteOutput(p, header, oif, sockerr);
    }
    Ptr<Ipv4Route> route = Lookup(header, p, oif);
    sockerr = route ? Socket::ERROR_NOTERROR : Socket::ERROR_NOROUTETOHOST;
    return route;
}

bool
DltraceFlowEcmpRouting::RouteInput(Ptr<const Packet> p,
                                   const Ipv4Header& header,
                                   Ptr<const NetDevice> idev,
                                   UnicastForwardCallback ucb,
                                   MulticastForwardCallback mcb,
                                   LocalDeliverCallback lcb,
                                   ErrorCallback ecb)
{
    const uint32_t iif = m_ipv4->GetInterfaceForDevice(idev);
    if (header.GetDestination().IsMulticast() || header.GetDestination().IsBroadcast() ||
        m_ipv4->IsDestinationAddress(header.GetDestination(), iif))
    {
        return Ipv4GlobalRouting::RouteInput(p, header, idev, ucb, mcb, lcb, ecb);
    }
    if (!m_ipv4->IsForwarding(iif))
    {
        ecb(p, header, Socket::ERROR_NOROUTETOHOST);
        return true;
    }
    Ptr<Ipv4Route> route = Lookup(header, p, nullptr);
    if (!route)
    {
        return false;
    }
    ucb(route, p, header);
    return true;
}

DltraceFlowEcmpRoutingHelper*
DltraceFlowEcmpRoutingHelper::Copy() const
{
    return new DltraceFlowEcmpRoutingHelper(*this);
}

Ptr<Ipv4RoutingProtocol>
DltraceFlowEcmpRoutingHelper::Create(Ptr<Node> node) const
{
    Ptr<GlobalRouter> router = CreateObject<GlobalRouter>();
    node->AggregateObject(router);
    Ptr<DltraceFlowEcmpRouting> routing = CreateObject<DltraceFlowEcmpRouting>();
    router->SetRoutingProtocol(routing);
    return routing;
}

} // namespace ns3
