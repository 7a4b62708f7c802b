// SPDX-License-Identifier: GPL-2.0-only
// Data-centre topologies for dltrace scenarios: star (one switch), dumbbell,
// ring, leaf-spine and fat-tree, all point-to-point links of a chosen rate and delay.
#ifndef DLTRACE_TOPOLOGY_HELPER_H
#define DLTRACE_TOPOLOGY_HELPER_H

#include "ns3/net-device-container.h"
#include "ns3/node-container.h"
#include "ns3/nstime.h"

#include "dltrace/models/topology.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief What to build: models::TopologySpec (kind, rate_bps, delay_ns, ...),
 * the one description every simulator builds from.
 *
 * Parsed from "KIND[:key=value,...]", e.g. "leaf-spine:leaves=4,spines=2,
 * hosts-per-leaf=8,oversub=2,rate=100Gbps,delay=1us". Every key has a
 * default sized to the hosts a scenario needs, so "leaf-spine" alone works.
 */
struct DltraceTopologyConfig : dltrace::models::TopologySpec
{
    /**
     * Parses TEXT (models::ParseTopology); parameters not given are sized for
     * HOSTS_NEEDED hosts.
     * \return false with one line in *error for an unknown kind, key or bad value
     */
    static bool Parse(const std::string& text,
                      uint32_t hostsNeeded,
                      DltraceTopologyConfig* out,
                      std::string* error);
};

/**
 * \ingroup dltrace
 * \brief Builds a DltraceTopologyConfig: nodes and point-to-point links.
 *
 * Hosts and switches are ordinary nodes; after Build() the caller installs
 * the Internet stack, queue discs and addresses (DltraceScenario does).
 */
class DltraceTopologyHelper
{
  public:
    /// One link: device a (on the lower tier, e.g. the host) and device b.
    struct Link
    {
        Ptr<NetDevice> a;
        Ptr<NetDevice> b;
        std::string name;        ///< a to b, e.g. "h3-leaf0", "leaf1-spine0"
        std::string reverseName; ///< b to a, e.g. "leaf0-h3"
        uint64_t rateBps;
        bool hostLink;
    };

    /**
     * Builds the nodes and links of CONFIG. SYSTEM_ID (partitioned runs):
     * per graph node the partition it is created in (ns-3's SystemId, see
     * DltracePartition); empty: all 0. Links between partitions become
     * ns-3's remote point-to-point channels (PointToPointHelper decides).
     */
    void Build(const DltraceTopologyConfig& config, const std::vector<uint32_t>& systemId = {});

    NodeContainer GetHosts() const;
    NodeContainer GetSwitches() const;
    /// In the graph's link order (link I is GetGraph().links[I]).
    const std::vector<Link>& GetLinks() const;
    /// The graph Build() made the nodes from: node I is host I, or switch I - hosts.
    const dltrace::models::TopologyGraph& GetGraph() const;
    bool IsSwitch(Ptr<Node> node) const;

  private:
    Ptr<Node> NewSwitch(const std::string& name, uint32_t systemId);
    void Connect(Ptr<Node> a,
                 Ptr<Node> b,
                 uint64_t rateBps,
                 Time delay,
                 bool hostLink,
                 const std::string& name,
                 const std::string& reverseName);

    NodeContainer m_hosts;
    NodeContainer m_switches;
    std::vector<std::string> m_switchNames;
    std::vector<Link> m_links;
    dltrace::models::TopologyGraph m_graph;
};

} // namespace ns3

#endif /* DLTRACE_TOPOLOGY_HELPER_H */
