// SPDX-License-Identifier: GPL-2.0-only
// Global routing that spreads flows over equal-cost paths by a hash of the
// 5-tuple, so one TCP connection keeps one path (no reordering).
#ifndef DLTRACE_FLOW_ECMP_ROUTING_H
#define DLTRACE_FLOW_ECMP_ROUTING_H

#include "ns3/inet-socket-address.h"
#include "ns3/ipv4-global-routing.h"
#include "ns3/ipv4-routing-helper.h"

#include "dltrace/models/topology.h"

#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief The per-flow ECMP rule the flow engine routes by, for the ns-3 nodes
 * of a topology built from the same models::TopologyGraph.
 *
 * A dltrace connection's packets (registered by the socket transport with its
 * job and lane: a channel and a models::RailMode) follow, at every node, the
 * link list models::ConnectionPath gives for models::FlowHash(source node,
 * destination node, job, channel): the per-flow ECMP path
 * (models::TopologyGraph::NextLink hop by hop) where the GPUs' own NICs
 * carry it, else the path through the relay GPUs the mode names (an NVLink
 * hop to the GPU whose NIC is used; that GPU forwards). Both simulators put
 * every connection on the same path, so a comparison of the two measures
 * their network models, not how their hashes fell.
 */
class DltraceEcmpPaths
{
  public:
    explicit DltraceEcmpPaths(dltrace::models::TopologyGraph graph);

    /// Node NODE_ID (ns-3 id) is the graph's node GRAPH_NODE; its link LINK
    /// leaves on INTERFACE, whose address is ADDRESS.
    void AddInterface(uint32_t nodeId,
                      uint32_t graphNode,
                      uint32_t link,
                      uint32_t interface,
                      Ipv4Address address);
    /// ADDRESS is host HOST's.
    void AddHostAddress(Ipv4Address address, uint32_t host);
    /// The TCP connection between A and B (both directions) is JOB's, on
    /// LANE (DltraceJob::GetLane: its channel, and its RailMode above that).
    void AddConnection(const InetSocketAddress& a, const InetSocketAddress& b, uint32_t job, uint16_t lane);
    /**
     * The next source port of a connection opened on node NODEID: 49152 and
     * up, one counter per node (ns-3's ephemeral range). DltraceHelper hands
     * them out for every endpoint in the same order in every process, so a
     * partitioned run's switches know the connections opened in other
     * partitions too.
     */
    uint16_t NextSourcePort(uint32_t nodeId);
    /// Where node NODE_ID sends a packet next: its interface and the
    /// neighbour's address on that link.
    struct Hop
    {
        uint32_t interface = UINT32_MAX; ///< UINT32_MAX: a packet of no registered connection
        Ipv4Address gateway;
    };
    /// The next hop of the packet on its connection's path (other traffic keeps the 5-tuple hash).
    Hop Next(uint32_t nodeId,
             Ipv4Address source,
             Ipv4Address destination,
             uint16_t sourcePort,
             uint16_t destinationPort);

    /// The rule of the simulation being built and run (null: none, the 5-tuple hash).
    static std::shared_ptr<DltraceEcmpPaths> Current();
    static void SetCurrent(std::shared_ptr<DltraceEcmpPaths> paths);

  private:
    using Key = std::tuple<uint32_t, uint32_t, uint16_t, uint16_t>; // source, destination, ports
    struct Connection
    {
        uint32_t job;
        uint16_t lane;
        std::vector<uint32_t> path; ///< graph links, computed on first use
    };
    const std::vector<uint32_t>& HopsTo(uint32_t node);

    dltrace::models::TopologyGraph m_graph;
    std::unordered_map<uint32_t, uint16_t> m_nextSourcePort;         // ns-3 node id -> next port
    std::unordered_map<uint32_t, uint32_t> m_graphNode;             // ns-3 node id -> graph node
    // (graph node, link) -> (interface, its address)
    std::map<std::pair<uint32_t, uint32_t>, std::pair<uint32_t, Ipv4Address>> m_interface;
    std::unordered_map<uint32_t, uint32_t> m_hostOf;                // address -> host
    std::map<Key, Connection> m_connections;                        // per direction
    std::unordered_map<uint32_t, std::vector<uint32_t>> m_hopsTo;   // per destination node
};

/**
 * \ingroup dltrace
 * \brief Ipv4GlobalRouting with per-flow ECMP.
 *
 * ns-3.37's Ipv4GlobalRouting either always takes the first of several
 * equal-cost routes or picks one at random per packet, which reorders TCP
 * segments. This subclass picks by a hash of (source, destination, protocol,
 * ports) salted with the node id, as switches do, among the routes
 * GlobalRouteManager computed (Ipv4GlobalRoutingHelper::PopulateRoutingTables);
 * dltrace connections follow their DltraceEcmpPaths path where one is set,
 * which may leave those shortest routes (through a relay GPU).
 */
class DltraceFlowEcmpRouting : public Ipv4GlobalRouting
{
  public:
    static TypeId GetTypeId();
    DltraceFlowEcmpRouting();

    Ptr<Ipv4Route> RouteOutput(Ptr<Packet> p,
                               const Ipv4Header& header,
                               Ptr<NetDevice> oif,
                               Socket::SocketErrno& sockerr) override;
    bool RouteInput(Ptr<const Packet> p,
                    const Ipv4Header& header,
                    Ptr<const NetDevice> idev,
                    UnicastForwardCallback ucb,
                    MulticastForwardCallback mcb,
                    LocalDeliverCallback lcb,
                    ErrorCallback ecb) override;
    void SetIpv4(Ptr<Ipv4> ipv4) override;
    void NotifyInterfaceUp(uint32_t interface) override;
    void NotifyInterfaceDown(uint32_t interface) override;

  protected:
    void DoDispose() override;

  private:
    struct Hop
    {
        Ipv4Address gateway;
        uint32_t interface;
    };
    Ptr<Ipv4Route> MakeRoute(const Ipv4Header& header, uint32_t interface, Ipv4Address gateway) const;
    Ptr<Ipv4Route> Lookup(const Ipv4Header& header, Ptr<const Packet> p, Ptr<NetDevice> oif);
    const std::vector<Hop>& Hops(Ipv4Address destination);

    Ptr<Ipv4> m_ipv4;
    uint32_t m_nodeId;
    uint32_t m_salt;
    // Equal-cost next hops per destination, filled on first use (the routes
    // do not change once the simulation runs; an interface change clears it).
    std::unordered_map<uint32_t, std::vector<Hop>> m_cache;
};

/**
 * \ingroup dltrace
 * \brief Installs DltraceFlowEcmpRouting (and the GlobalRouter it needs) on nodes.
 */
class DltraceFlowEcmpRoutingHelper : public Ipv4RoutingHelper
{
  public:
    DltraceFlowEcmpRoutingHelper* Copy() const override;
    Ptr<Ipv4RoutingProtocol> Create(Ptr<Node> node) const override;
};

} // namespace ns3

#endif /* DLTRACE_FLOW_ECMP_ROUTING_H */
