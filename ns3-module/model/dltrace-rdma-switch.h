// SPDX-License-Identifier: GPL-2.0-only
// A RoCEv2 switch: forwards frames by the fabric's load balancer (per-flow
// ECMP, E-ECMP, flowlets, adaptive routing or spraying over the topology
// graph's equal-cost links), asks its MMU to admit each data packet, marks
// ECN and stamps INT.
#ifndef DLTRACE_RDMA_SWITCH_H
#define DLTRACE_RDMA_SWITCH_H

#include "dltrace-rdma-switch-mmu.h"

#include "ns3/object.h"
#include "ns3/packet.h"
#include "ns3/random-variable-stream.h"

#include "dltrace-rdma-header.h"

#include "dltrace/models/topology.h"

#include <memory>
#include <unordered_map>
#include <vector>

namespace ns3
{

class DltraceRdmaNetDevice;

/**
 * \ingroup dltrace
 * \brief Routes of a fabric built from a models::TopologyGraph, shared by its switches.
 *
 * Every switch picks the next link with TopologyGraph::NextLink, the same
 * per-flow ECMP rule the TCP scenarios and the flow simulator route by, so
 * a QP takes the path its TCP connection would.
 */
class DltraceRdmaRouting
{
  public:
    explicit DltraceRdmaRouting(dltrace::models::TopologyGraph graph);
    const dltrace::models::TopologyGraph& GetGraph() const;
    /// Hops from every node to host DST (computed once per DST).
    const std::vector<uint32_t>& HopsTo(uint32_t dst);

  private:
    dltrace::models::TopologyGraph m_graph;
    std::vector<std::vector<uint32_t>> m_hops;
};

/**
 * \ingroup dltrace
 * \brief The forwarding plane of one switch node (aggregated to the Node).
 */
class DltraceRdmaSwitch : public Object
{
  public:
    static TypeId GetTypeId();
    DltraceRdmaSwitch();

    /// This switch is node GRAPH_NODE of ROUTING's graph.
    void SetRouting(std::shared_ptr<DltraceRdmaRouting> routing, uint32_t graphNode);
    /// Adds a port: DEVICE on graph link LINK, cable delay DELAY.
    void AddPort(Ptr<DltraceRdmaNetDevice> device, uint32_t link, Time delay);
    /**
     * The egress port of a frame to host DST_HOST: the fabric's load
     * balancer (TopologyGraph::lb) picks among the equal-cost ports.
     * FLOW_HASH names the flow: ECMP and E-ECMP hash it, flowlets keep their
     * port per flow (a transport that sprays by entropy passes the packet's
     * entropy here and gets ECMP on it). PACKET_KEY varies per packet
     * (its PSN): spraying hashes it, adaptive routing breaks ties with it.
     */
    uint32_t SelectPort(uint32_t dstHost, uint64_t flowHash, uint64_t packetKey);
    Ptr<DltraceRdmaSwitchMmu> GetMmu() const;
    uint32_t GetPortCount() const;
    Ptr<DltraceRdmaNetDevice> GetPort(uint32_t port) const;

    /**
     * UET (Ultra Ethernet transport) frames on this switch: a data queue
     * holds at most QUEUE_BYTES of UET data; a UET data packet that does not
     * fit is trimmed to its 64-byte header and forwarded in the control
     * queue (served first), as uet-htsim's composite queue does: half the
     * time the packet queued last is trimmed instead and the arriving one
     * queued. With
     * ECN, a UET packet leaving a data queue of more than ECN_LOW bytes is
     * marked CE with a probability rising linearly to 1 at ECN_HIGH
     * (uet-htsim marks at dequeue; ECN_TO_HOSTS false: not on ports to hosts).
     */
    void SetUetQueue(uint64_t queueBytes, bool ecn, uint64_t ecnLow, uint64_t ecnHigh, bool ecnToHosts);
    /// UET data packets trimmed so far.
    uint64_t GetTrimmed() const;
    /// UET data packets marked CE so far.
    uint64_t GetUetEcnMarks() const;

  protected:
    void DoDispose() override;

  private:
    void Receive(Ptr<DltraceRdmaNetDevice> device, Ptr<Packet> packet);
    void Dequeued(uint32_t outPort, Ptr<Packet> packet, uint32_t priority, uint32_t inPort);
    /// The equal-cost ports towards DST_HOST (computed once per host).
    const std::vector<uint32_t>& CandidatePorts(uint32_t dstHost);
    /// Of CANDIDATES, the port with the fewest queued bytes; ties go to the
    /// first from a place KEY picks, so an idle fabric still spreads.
    uint32_t LeastLoaded(const std::vector<uint32_t>& candidates, uint64_t key) const;

    /// A flowlet's port and when its last frame passed.
    struct Flowlet
    {
        Time last;
        uint32_t port;
    };

    Ptr<DltraceRdmaSwitchMmu> m_mmu;
    std::shared_ptr<DltraceRdmaRouting> m_routing;
    uint32_t m_graphNode;
    std::vector<Ptr<DltraceRdmaNetDevice>> m_ports;
    std::vector<uint32_t> m_portOfLink; ///< graph link -> port (UINT32_MAX: not ours)
    std::vector<uint32_t> m_linkOfPort; ///< port -> graph link
    std::vector<std::vector<uint32_t>> m_candidates; ///< per destination host its equal-cost ports
    std::unordered_map<uint64_t, Flowlet> m_flowlets; ///< lb=flowlet: by flow hash and destination

    /// UET trimming and marking (SetUetQueue).
    bool UetAdmit(Ptr<Packet> packet, DltraceRdmaHeader& h, uint32_t in, uint32_t out, uint32_t link);
    void UetMark(uint32_t outPort, Ptr<Packet> packet, uint32_t priority);
    void Trim(DltraceRdmaHeader h, uint32_t out, uint32_t link);
    uint64_t m_uetQueueBytes{0}; ///< 0: no UET queue limit (the MMU's only)
    bool m_uetEcn{false};
    uint64_t m_uetEcnLow{0};
    uint64_t m_uetEcnHigh{0};
    std::vector<bool> m_uetPortToHost; ///< per port: no ECN marks (ports to hosts, ECN_TO_HOSTS false)
    uint64_t m_trimmed{0};
    uint64_t m_uetMarks{0};
    Ptr<UniformRandomVariable> m_uetRng;
};

} // namespace ns3

#endif /* DLTRACE_RDMA_SWITCH_H */
