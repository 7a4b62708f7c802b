// SPDX-License-Identifier: GPL-2.0-only
// Builds an RDMA fabric (RoCEv2 NICs, PFC switches, cables) from a
// models::TopologyGraph and opens queue pairs on it.
#ifndef DLTRACE_RDMA_HELPER_H
#define DLTRACE_RDMA_HELPER_H

#include "ns3/dltrace-rdma-nic.h"
#include "ns3/dltrace-rdma-remote-channel.h"
#include "ns3/dltrace-rdma-switch.h"
#include "ns3/node-container.h"
#include "ns3/object-factory.h"

#include "dltrace/models/topology.h"

#include <memory>
#include <string>
#include <vector>

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief The RDMA fabric of one topology: a NIC per endpoint node (a GPU,
 * with a port per link: NVLink and NIC ports), a switch per switch node
 * (NVSwitches too). Every QP takes its direct per-flow ECMP path
 * (models::RailMode::kDirect): GPU nodes do not relay.
 *
 * Device, NIC, MMU, QP and congestion-control parameters come from their
 * attributes' defaults (Config::SetDefault), as ns-3 helpers do.
 */
class DltraceRdmaHelper
{
  public:
    /// One cable: device a (graph link's a side) and b.
    struct Link
    {
        Ptr<DltraceRdmaNetDevice> a;
        Ptr<DltraceRdmaNetDevice> b;
        std::string name;        ///< a to b
        std::string reverseName; ///< b to a
        uint64_t rateBps;
    };

    /**
     * The TypeId of a congestion control by its command-line name: "none",
     * "dcqcn", "hpcc", "timely".
     * \return false for another name
     */
    static bool LookupCongestionControl(const std::string& name, TypeId* tid);
    /// "none, dcqcn, hpcc, timely"
    static std::string CongestionControlNames();

    /// Congestion control of every QP opened afterwards (default "none").
    void SetCongestionControl(const std::string& name);

    /// The Ultra Ethernet transport on this fabric (before Build).
    struct UetConfig
    {
        bool rccc = false;       ///< receiver credit (RCCC) instead of NSCC
        double queueBdp = 1;     ///< switch data queues in BDPs (uet-htsim: 1 with trimming)
        uint32_t queuePackets = 0; ///< switch data queues in full frames (0: queueBdp)
        Time networkRtt;         ///< 0: the fabric's longest unloaded RTT (uet-htsim's formula)
    };
    /// Builds a UET fabric: switches trim instead of dropping, NICs open PDCs.
    void SetUet(const UetConfig& config);
    bool IsUet() const;
    /// UET: the unloaded RTT NSCC and the queue sizes scale with.
    Time GetUetNetworkRtt() const;
    /// UET: bytes a switch data queue holds.
    uint64_t GetUetQueueBytes() const;
    /// UET: opens a PDC from SRC to DST in class PRIORITY spraying around FLOW_HASH.
    Ptr<DltraceUetPdc> CreateUetPdc(uint32_t src, uint32_t dst, uint32_t priority, uint64_t flowHash);
    /// UET: data packets trimmed by every switch so far.
    uint64_t GetUetTrimmed() const;
    /// UET: data packets every switch marked CE so far.
    uint64_t GetUetEcnMarks() const;
    /**
     * Builds nodes, devices and switches of GRAPH. SYSTEM_ID (one per graph
     * node; empty: all 0) puts nodes in partitions of ns-3's distributed
     * simulator: a cable whose ends differ is a DltraceRdmaRemoteChannel.
     */
    void Build(const dltrace::models::TopologyGraph& graph, const std::vector<uint32_t>& systemId = {});
    /// The cables that cross partitions (none in a sequential run).
    const std::vector<Ptr<DltraceRdmaRemoteChannel>>& GetRemoteChannels() const;

    NodeContainer GetHosts() const;
    Ptr<DltraceRdmaNic> GetNic(uint32_t host) const;
    Ptr<DltraceRdmaSwitch> GetSwitch(uint32_t index) const;
    uint32_t GetSwitchCount() const;
    const std::vector<Link>& GetLinks() const;
    const dltrace::models::TopologyGraph& GetGraph() const;

    /// Unloaded round trip of a full-MTU packet from SRC to DST and its ACK on FLOW_HASH's path.
    Time BaseRtt(uint32_t src, uint32_t dst, uint64_t flowHash) const;
    /// Opens a QP from SRC to DST in class PRIORITY on FLOW_HASH's path.
    Ptr<DltraceRdmaQueuePair> CreateQueuePair(uint32_t src, uint32_t dst, uint32_t priority, uint64_t flowHash);

  private:
    void BuildUet();

    std::shared_ptr<DltraceRdmaRouting> m_routing;
    ObjectFactory m_cc;
    bool m_haveCc = false;
    NodeContainer m_hosts;
    NodeContainer m_switchNodes;
    std::vector<Ptr<DltraceRdmaNic>> m_nics;
    std::vector<Ptr<DltraceRdmaSwitch>> m_switches;
    std::vector<Link> m_links;
    std::vector<Ptr<DltraceRdmaRemoteChannel>> m_remoteChannels;
    bool m_uet = false;
    UetConfig m_uetConfig;
    Time m_uetRtt;
    uint64_t m_uetQueueBytes = 0;
};

} // namespace ns3

#endif /* DLTRACE_RDMA_HELPER_H */
