// Global routing that spreads flows over equal-cost paths by a hash of the
// 5-tuple, so one TCP connection keeps one path (no reordering).
#ifndef DLTRACE_FLOW_ECMP_ROUTING_H
#define DLTRACE_FLOW_ECMP_ROUTING_H

#include "ns3/ipv4-global-routing.h"
#include "ns3/ipv4-routing-helper.h"

#include <unordered_map>
#include <vector>

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief Ipv4GlobalRouting with per-flow ECMP.
 *
 * ns-3.37's Ipv4GlobalRouting either always takes the first of several
 * equal-cost routes or picks one at random per packet, which reorders TCP
 * segments. This subclass picks by a hash of (source, destination, protocol,
 * ports) salted with the node id, as switches do. The routes themselves are
 * still computed by GlobalRouteManager (Ipv4GlobalRoutingHelper::PopulateRoutingTables).
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
    Ptr<Ipv4Route> Lookup(const Ipv4Header& header, Ptr<const Packet> p, Ptr<NetDevice> oif);
    const std::vector<Hop>& Hops(Ipv4Address destination);

    Ptr<Ipv4> m_ipv4;
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
