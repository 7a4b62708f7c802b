// SPDX-License-Identifier: GPL-2.0-only
// DltraceRdmaNetwork and DltraceRdmaTransport: engine messages as RDMA sends
// on per-(endpoint, peer, channel) queue pairs.
#include "dltrace-rdma-transport.h"

#include "dltrace-attributes.h"
#include "dltrace-timeline.h"

#include "ns3/data-rate.h"
#include "ns3/dltrace-rdma-helper.h"
#include "ns3/log.h"
#include "ns3/simulator.h"

#include "dltrace/models/lanes.h"
#include "dltrace/models/topology.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceRdmaTransport");

namespace
{

/// What a message puts on the wire: a notice or an empty message is a 1-byte send.
uint64_t
WireBytes(bool notice, uint64_t bytes)
{
    return notice || bytes == 0 ? 1 : bytes;
}

} // namespace

NS_OBJECT_ENSURE_REGISTERED(DltraceRdmaNetwork);
NS_OBJECT_ENSURE_REGISTERED(DltraceRdmaMessageTag);

TypeId
DltraceRdmaNetwork::GetTypeId()
{
    static TypeId tid = DltraceTypeId<DltraceRdmaNetwork, Object>("ns3::DltraceRdmaNetwork");
    return tid;
}

DltraceRdmaNetwork::DltraceRdmaNetwork()
    : m_fabric(nullptr),
      m_delivered(0)
{
}

void
DltraceRdmaNetwork::DoDispose()
{
    m_routes.clear();
    m_transports.clear();
    m_qps.clear();
    m_fabric = nullptr;
    m_posted = Callback<void>();
    m_beforePost = Callback<void, size_t>();
    Object::DoDispose();
}

void
DltraceRdmaNetwork::SetFabric(DltraceRdmaHelper* fabric)
{
    m_fabric = fabric;
    m_deliverHooked.assign(fabric->GetGraph().hosts, false);
}

void
DltraceRdmaNetwork::AddJob(uint32_t job, std::vector<uint32_t> hosts, uint32_t priority)
{
    if (m_hosts.size() <= job)
    {
        m_hosts.resize(job + 1);
        m_priority.resize(job + 1, 0);
    }
    m_hosts[job] = std::move(hosts);
    m_priority[job] = priority;
}

void
DltraceRdmaNetwork::Register(uint32_t job, int32_t endpoint, DltraceRdmaTransport* transport)
{
    m_transports[{job, endpoint}] = transport;
}

void
DltraceRdmaNetwork::Unregister(uint32_t job, int32_t endpoint)
{
    m_transports.erase({job, endpoint});
}

DltraceRdmaNetwork::Route&
DltraceRdmaNetwork::GetRoute(uint32_t job, int32_t src, int32_t dst, uint16_t channel)
{
    auto key = std::make_tuple(job, src, dst, channel);
    auto it = m_routeIndex.find(key);
    if (it != m_routeIndex.end())
    {
        return m_routes[it->second];
    }
    const uint32_t srcHost = m_hosts.at(job).at(src);
    const uint32_t dstHost = m_hosts.at(job).at(dst);
    const size_t route = NewRoute(job,
                                  src,
                                  dst,
                                  channel,
                                  srcHost,
                                  dstHost,
                                  dltrace::models::FlowHash(srcHost, dstHost, job, channel));
    m_routeIndex[key] = route;
    return m_routes[route];
}

size_t
DltraceRdmaNetwork::GetStageRoute(uint32_t job,
                                  int32_t src,
                                  int32_t dst,
                                  uint16_t channel,
                                  uint8_t stage,
                                  uint32_t from,
                                  uint32_t to,
                                  uint64_t hash)
{
    const auto key = std::make_tuple(job, src, dst, channel, stage);
    auto it = m_stageIndex.find(key);
    if (it != m_stageIndex.end())
    {
        return it->second;
    }
    const size_t route = NewRoute(job, src, dst, channel, from, to, hash);
    m_stageIndex[key] = route;
    return route;
}

size_t
DltraceRdmaNetwork::NewRoute(uint32_t job,
                             int32_t src,
                             int32_t dst,
                             uint16_t channel,
                             uint32_t srcHost,
                             uint32_t dstHost,
                             uint64_t hash)
{
    const size_t route = m_routes.size();
    auto acked = MakeBoundCallback(
        +[](DltraceRdmaNetwork* n, size_t r, uint32_t seq, uint64_t bytes) { n->Acked(r, seq, bytes); },
        this,
        route);
    m_routes.push_back(Route{m_qps.size(), {}, {}});
    m_routes.back().remote = !m_localHost.empty() && !m_localHost.at(dstHost);
    if (m_fabric->IsUet())
    {
        Ptr<DltraceUetPdc> pdc = m_fabric->CreateUetPdc(srcHost, dstHost, m_priority.at(job), hash);
        m_qps.push_back(QpRecord{job, src, dst, channel, nullptr, pdc});
        m_routeOfQp[(uint64_t(srcHost) << 32) | pdc->GetId()] = route;
        pdc->SetMessageAckedCallback(acked);
    }
    else
    {
        Ptr<DltraceRdmaQueuePair> qp = m_fabric->CreateQueuePair(srcHost, dstHost, m_priority.at(job), hash);
        m_qps.push_back(QpRecord{job, src, dst, channel, qp, nullptr});
        m_routeOfQp[(uint64_t(srcHost) << 32) | qp->GetQpn()] = route;
        qp->SetMessageAckedCallback(acked);
    }
    if (m_localHost.empty())
    {
        HookDelivery(dstHost);
    }
    return route;
}

void
DltraceRdmaNetwork::HookDelivery(uint32_t host)
{
    if (m_deliverHooked.at(host))
    {
        return;
    }
    m_deliverHooked[host] = true;
    m_fabric->GetNic(host)->SetDeliverCallback(MakeBoundCallback(
        +[](DltraceRdmaNetwork* n, uint32_t dst, uint32_t srcHost, uint32_t qpn, uint32_t seq, uint64_t bytes) {
            n->Delivered(dst, srcHost, qpn, seq, bytes);
        },
        this,
        host));
}

Time
DltraceRdmaNetwork::IdealTime(uint32_t srcHost, uint32_t dstHost, uint64_t flowHash, uint64_t bytes) const
{
    const auto& graph = m_fabric->GetGraph();
    const uint32_t mtu = m_fabric->GetNic(srcHost)->GetMtu();
    const uint64_t packets = std::max<uint64_t>((bytes + mtu - 1) / mtu, 1);
    const uint32_t overhead = m_fabric->IsUet() ? DltraceRdmaHeader::kUetOverhead : DltraceRdmaHeader::kRoceOverhead;
    const uint64_t wire = std::max<uint64_t>(bytes, 1) + packets * overhead;
    const uint64_t first = std::min<uint64_t>(wire, mtu + overhead);
    std::vector<uint32_t> hops = graph.HopsTo(dstHost);
    Time t;
    uint64_t slowest = UINT64_MAX;
    for (uint32_t l : graph.Route(srcHost, dstHost, hops, flowHash))
    {
        const auto& link = graph.links[l];
        t += NanoSeconds(link.delay_ns) + DataRate(link.rate_bps).CalculateBytesTxTime(first);
        slowest = std::min(slowest, link.rate_bps);
    }
    if (slowest != UINT64_MAX)
    {
        t += DataRate(slowest).CalculateBytesTxTime(wire - first);
    }
    return t;
}

void
DltraceRdmaNetwork::Post(uint32_t job,
                         int32_t src,
                         const DltraceMessage& m,
                         std::function<void()> onSent,
                         uint16_t lane)
{
    const uint64_t wireBytes = WireBytes(m.notice, m.bytes);
    const auto mode = dltrace::models::LaneMode(lane);
    if (mode != dltrace::models::RailMode::kDirect && !m.notice)
    {
        const auto& graph = m_fabric->GetGraph();
        const uint32_t a = m_hosts.at(job).at(src);
        const uint32_t b = m_hosts.at(job).at(m.peer);
        const auto [out, in] =
            dltrace::models::ConnectionRelays(graph, a, b, dltrace::models::LaneChannel(lane), mode);
        if (out != a || in != b)
        {
            // The network stage on ConnectionPath's ECMP path: the hash of the ends, not of the relays.
            const uint64_t hash = dltrace::models::FlowHash(a, b, job, dltrace::models::LaneChannel(lane));
            Relay relay{job, src, m.peer, m.channel, {}, 0};
            const std::pair<uint32_t, uint32_t> hops[] = {{a, out}, {out, in}, {in, b}};
            Time ideal;
            for (uint8_t s = 0; s < 3; ++s)
            {
                const auto [from, to] = hops[s];
                if (from == to)
                {
                    continue;
                }
                const uint64_t h = s == 1 ? hash : dltrace::models::FlowHash(from, to, job, m.channel);
                relay.stages.push_back(GetStageRoute(job, src, m.peer, m.channel, s, from, to, h));
                ideal += IdealTime(from, to, h, wireBytes);
            }
            MessageRecord rec{job, src, m.peer, m.channel, m_priority.at(job), m.bytes,
                              DltraceTimeline::Now(), Time(), ideal};
            m_messages.push_back(rec);
            const uint64_t id = m_nextRelay++;
            const size_t first = relay.stages.front();
            m_relays.emplace(id, std::move(relay));
            Send(first, Pending{m.tag, m.bytes, m.notice, m_messages.size() - 1, id}, wireBytes, std::move(onSent));
            return;
        }
    }
    Route& route = GetRoute(job, src, m.peer, m.channel);
    const QpRecord& q = m_qps[route.qpRecord];
    const uint32_t srcHost = q.qp ? q.qp->GetSrcHost() : q.pdc->GetSrcHost();
    const uint32_t dstHost = q.qp ? q.qp->GetDstHost() : q.pdc->GetDstHost();
    MessageRecord rec;
    rec.job = job;
    rec.src = src;
    rec.dst = m.peer;
    rec.channel = m.channel;
    rec.priority = q.qp ? q.qp->GetPriority() : q.pdc->GetPriority();
    rec.bytes = m.bytes;
    rec.posted = DltraceTimeline::Now();
    rec.ideal = IdealTime(srcHost,
                          dstHost,
                          dltrace::models::FlowHash(srcHost, dstHost, job, m.channel),
                          wireBytes);
    m_messages.push_back(rec);
    Send(size_t(&route - m_routes.data()),
         Pending{m.tag, m.bytes, m.notice, m_messages.size() - 1, kNoRelay},
         wireBytes,
         std::move(onSent));
}

void
DltraceRdmaNetwork::Send(size_t route, const Pending& pending, uint64_t wireBytes, std::function<void()> onSent)
{
    Route& r = m_routes[route];
    r.inFlight.push_back(pending);
    r.unacked.push_back(std::move(onSent));
    const QpRecord& q = m_qps[r.qpRecord];
    if (r.remote && (pending.relay != kNoRelay || !q.qp))
    {
        NS_FATAL_ERROR("DltraceRdmaNetwork: job " << q.job << " endpoint " << q.src << " sends to endpoint "
                                                  << q.dst << " in another partition "
                                                  << (q.qp ? "through a relay GPU (PXN)" : "over UET")
                                                  << ", which partitioned runs do not carry");
    }
    if (!m_beforePost.IsNull())
    {
        m_beforePost(r.qpRecord);
    }
    if (q.qp)
    {
        q.qp->PostSend(wireBytes);
    }
    else
    {
        q.pdc->PostSend(wireBytes);
    }
    if (!m_posted.IsNull())
    {
        m_posted();
    }
}

void
DltraceRdmaNetwork::Delivered(uint32_t /*dstHost*/, uint32_t srcHost, uint32_t qpn, uint32_t msgSeq, uint64_t /*bytes*/)
{
    if (!m_localHost.empty() && !m_localHost.at(srcHost))
    {
        // From another partition: its message came with its packets (NoteCrossing).
        auto in = m_incoming.find({srcHost, qpn, msgSeq});
        if (in == m_incoming.end())
        {
            NS_FATAL_ERROR("DltraceRdmaNetwork: host " << srcHost << " QP " << qpn << " message " << msgSeq
                                                       << " arrived from another partition untagged");
        }
        const Incoming m = in->second;
        m_incoming.erase(in);
        m_remoteDeliveries.push_back({m.job, m.src, m.dst, m.channel, DltraceTimeline::Now()});
        ++m_delivered;
        auto t = m_transports.find({m.job, m.dst});
        if (t == m_transports.end())
        {
            NS_FATAL_ERROR("DltraceRdmaNetwork: job " << m.job << " endpoint " << m.dst
                                                      << " got a message before it started");
        }
        t->second->Arrived({m.src, m.channel, m.tag, m.bytes, m.notice});
        return;
    }
    auto it = m_routeOfQp.find((uint64_t(srcHost) << 32) | qpn);
    if (it == m_routeOfQp.end())
    {
        return;
    }
    Route& route = m_routes[it->second];
    NS_ASSERT(!route.inFlight.empty());
    Pending p = route.inFlight.front();
    route.inFlight.pop_front();
    if (p.relay != kNoRelay)
    {
        Relay& relay = m_relays.at(p.relay);
        if (++relay.stage < relay.stages.size())
        {
            // The relay GPU has it all: it sends it on (its own acknowledgement wakes no one).
            Send(relay.stages[relay.stage], p, WireBytes(p.notice, p.bytes), nullptr);
            return;
        }
        m_relays.erase(p.relay);
    }
    m_messages[p.record].delivered = DltraceTimeline::Now();
    ++m_delivered;
    const QpRecord& q = m_qps[route.qpRecord];
    auto t = m_transports.find({q.job, q.dst});
    if (t == m_transports.end())
    {
        NS_FATAL_ERROR("DltraceRdmaNetwork: job " << q.job << " endpoint " << q.dst
                                                  << " got a message before it started");
    }
    t->second->Arrived({q.src, q.channel, p.tag, p.bytes, p.notice});
}

void
DltraceRdmaNetwork::Acked(size_t route, uint32_t msgSeq, uint64_t /*bytes*/)
{
    Route& r = m_routes[route];
    NS_ASSERT(!r.unacked.empty());
    if (r.remote)
    {
        // Acknowledged: none of its packets crosses again.
        NS_ASSERT(!r.inFlight.empty() && msgSeq == r.firstSeq);
        r.inFlight.pop_front();
        ++r.firstSeq;
    }
    std::function<void()> cb = std::move(r.unacked.front());
    r.unacked.pop_front();
    if (cb)
    {
        cb();
    }
}

const std::vector<DltraceRdmaNetwork::MessageRecord>&
DltraceRdmaNetwork::GetMessages() const
{
    return m_messages;
}

const std::vector<DltraceRdmaNetwork::QpRecord>&
DltraceRdmaNetwork::GetQueuePairs() const
{
    return m_qps;
}

const std::vector<DltraceRdmaNetwork::RemoteDelivery>&
DltraceRdmaNetwork::GetRemoteDeliveries() const
{
    return m_remoteDeliveries;
}

uint64_t
DltraceRdmaNetwork::GetDeliveredCount() const
{
    return m_delivered;
}

void
DltraceRdmaNetwork::SetPostCallback(Callback<void> cb)
{
    m_posted = cb;
}

void
DltraceRdmaNetwork::SetBeforePostCallback(Callback<void, size_t> cb)
{
    m_beforePost = cb;
}

void
DltraceRdmaNetwork::EnablePartitions(const std::vector<uint32_t>& systemId, uint32_t self)
{
    const uint32_t hosts = m_fabric->GetGraph().hosts;
    m_localHost.assign(hosts, false);
    for (uint32_t h = 0; h < hosts; ++h)
    {
        m_localHost[h] = h < systemId.size() && systemId[h] == self;
        if (!m_localHost[h])
        {
            continue;
        }
        // Every host here delivers: messages from other partitions open no route here.
        HookDelivery(h);
    }
}

void
DltraceRdmaNetwork::TagCrossing(Ptr<Packet> frame)
{
    DltraceRdmaHeader h;
    if (h.PeekFrom(*frame) == 0 || h.type != DltraceRdmaHeader::DATA)
    {
        return;
    }
    DltraceRdmaMessageTag tag;
    if (h.srcHost >= m_localHost.size() || !m_localHost[h.srcHost] || frame->PeekPacketTag(tag))
    {
        return; // sent elsewhere: tagged there if its receiver needs it; it crosses on
    }
    auto it = m_routeOfQp.find((uint64_t(h.srcHost) << 32) | h.qp);
    if (it == m_routeOfQp.end())
    {
        NS_FATAL_ERROR("DltraceRdmaNetwork: a data packet of host " << h.srcHost << " QP " << h.qp
                                                                    << " crosses partitions untagged");
    }
    const Route& r = m_routes[it->second];
    const QpRecord& q = m_qps[r.qpRecord];
    if (!r.remote)
    {
        return; // its path leaves this partition, but it is delivered here
    }
    if (h.msgSeq < r.firstSeq || h.msgSeq - r.firstSeq >= r.inFlight.size())
    {
        NS_FATAL_ERROR("DltraceRdmaNetwork: host " << h.srcHost << " QP " << h.qp << " message " << h.msgSeq
                                                   << " crosses partitions but is not outstanding there");
    }
    const Pending& p = r.inFlight[h.msgSeq - r.firstSeq];
    tag.job = q.job;
    tag.src = q.src;
    tag.dst = q.dst;
    tag.channel = q.channel;
    tag.tag = p.tag;
    tag.bytes = p.bytes;
    tag.notice = p.notice ? 1 : 0;
    frame->AddPacketTag(tag);
}

void
DltraceRdmaNetwork::NoteCrossing(Ptr<Packet> frame)
{
    DltraceRdmaMessageTag tag;
    if (!frame->PeekPacketTag(tag))
    {
        return;
    }
    DltraceRdmaHeader h;
    h.PeekFrom(*frame);
    // For a host here from a host elsewhere (a message between two hosts here that crossed
    // the cut on its way is known here already).
    if (h.dstHost < m_localHost.size() && m_localHost[h.dstHost] && h.srcHost < m_localHost.size() &&
        !m_localHost[h.srcHost])
    {
        m_incoming.emplace(std::make_tuple(h.srcHost, h.qp, h.msgSeq),
                           Incoming{tag.job, tag.src, tag.dst, tag.channel, tag.tag, tag.bytes, tag.notice != 0});
    }
}

TypeId
DltraceRdmaMessageTag::GetTypeId()
{
    static TypeId tid = DltraceTypeId<DltraceRdmaMessageTag, Tag>("ns3::DltraceRdmaMessageTag");
    return tid;
}

TypeId
DltraceRdmaMessageTag::GetInstanceTypeId() const
{
    return GetTypeId();
}

uint32_t
DltraceRdmaMessageTag::GetSerializedSize() const
{
    return 4 + 4 + 4 + 2 + 8 + 8 + 1;
}

void
DltraceRdmaMessageTag::Serialize(TagBuffer buffer) const
{
    buffer.WriteU32(job);
    buffer.WriteU32(uint32_t(src));
    buffer.WriteU32(uint32_t(dst));
    buffer.WriteU16(channel);
    buffer.WriteU64(tag);
    buffer.WriteU64(bytes);
    buffer.WriteU8(notice);
}

void
DltraceRdmaMessageTag::Deserialize(TagBuffer buffer)
{
    job = buffer.ReadU32();
    src = int32_t(buffer.ReadU32());
    dst = int32_t(buffer.ReadU32());
    channel = buffer.ReadU16();
    tag = buffer.ReadU64();
    bytes = buffer.ReadU64();
    notice = buffer.ReadU8();
}

void
DltraceRdmaMessageTag::Print(std::ostream& os) const
{
    os << "job=" << job << " src=" << src << " dst=" << dst << " channel=" << channel << " tag=" << tag
       << " bytes=" << bytes << " notice=" << unsigned(notice);
}

DltraceRdmaTransport::DltraceRdmaTransport(Ptr<DltraceRdmaNetwork> network, uint32_t job, int32_t self)
    : m_network(network),
      m_job(job),
      m_self(self)
{
    m_network->Register(job, self, this);
}

DltraceRdmaTransport::~DltraceRdmaTransport()
{
    m_network->Unregister(m_job, m_self);
}

void
DltraceRdmaTransport::Post(const DltraceMessage& message, std::function<void()> onSent)
{
    const uint16_t lane = m_lanes ? m_lanes(message.peer, message.channel, message.tag) : message.channel;
    m_network->Post(m_job, m_self, message, std::move(onSent), lane);
}

void
DltraceRdmaTransport::SetLanes(std::function<uint16_t(int32_t, uint16_t, uint64_t)> lanes)
{
    m_lanes = std::move(lanes);
}

void
DltraceRdmaTransport::Arrived(const DltraceMessage& m)
{
    if (m.notice)
    {
        DeliverNotice(m.peer, m.channel, m.tag, m.bytes);
    }
    else
    {
        Deliver(m.peer, m.channel, m.tag, m.bytes);
    }
}

} // namespace ns3
