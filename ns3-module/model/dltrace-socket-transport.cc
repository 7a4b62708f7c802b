// SPDX-License-Identifier: GPL-2.0-only
// ns-3 TCP transport for the schedule executor: connection set-up with hello
// frames, a queue of framed messages per connection, stream parsing on receive.
#include "dltrace-socket-transport.h"

#include "dltrace-flow-ecmp-routing.h"
#include "dltrace-job.h"
#include "dltrace-tcp-mltcp.h"

#include "ns3/log.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "ns3/tcp-socket-factory.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceSocketTransport");

namespace
{

void
PutLe(uint8_t* p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; ++i)
    {
        p[i] = uint8_t(v >> (8 * i));
    }
}

uint64_t
GetLe(const uint8_t* p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i)
    {
        v |= uint64_t(p[i]) << (8 * i);
    }
    return v;
}

} // namespace

DltraceSocketTransport::DltraceSocketTransport(Ptr<Node> node,
                                               uint32_t job,
                                               int32_t self,
                                               std::vector<InetSocketAddress> addresses,
                                               std::vector<PeerChannels> peers)
    : m_node(node),
      m_job(job),
      m_self(self),
      m_addresses(std::move(addresses)),
      m_peers(std::move(peers)),
      m_stopped(false)
{
}

DltraceSocketTransport::~DltraceSocketTransport()
{
    Stop();
}

std::string
DltraceSocketTransport::Describe(const Connection& c) const
{
    static const char* const modes[] = {"", " (rail-aligned)", " (PXN)", " (mode 3)"};
    return "endpoint " + std::to_string(m_self) + ": connection to endpoint " +
           std::to_string(c.peer) + " channel " + std::to_string(dltrace::models::LaneChannel(c.channel)) +
           modes[uint32_t(dltrace::models::LaneMode(c.channel)) & 3];
}

DltraceSocketTransport::Connection&
DltraceSocketTransport::GetConnection(int32_t peer, uint16_t channel)
{
    auto& slot = m_connections[{peer, channel}];
    if (!slot)
    {
        slot = std::make_unique<Connection>();
        slot->peer = peer;
        slot->channel = channel;
    }
    return *slot;
}

void
DltraceSocketTransport::Watch(Ptr<Socket> socket, Connection* c)
{
    m_bySocket[PeekPointer(socket)] = c;
    socket->SetRecvCallback(MakeCallback(&DltraceSocketTransport::Readable, this));
    socket->SetSendCallback(MakeCallback(&DltraceSocketTransport::Writable, this));
    socket->SetCloseCallbacks(MakeCallback(&DltraceSocketTransport::ClosedNormally, this),
                              MakeCallback(&DltraceSocketTransport::ClosedByError, this));
}

void
DltraceSocketTransport::SetProgress(std::shared_ptr<dltrace::models::JobProgress> progress)
{
    m_progress = std::move(progress);
}

void
DltraceSocketTransport::SetLanes(LaneFunction lanes)
{
    m_lanes = std::move(lanes);
}

void
DltraceSocketTransport::SetIpTos(uint8_t tos)
{
    m_tos = tos;
}

void
DltraceSocketTransport::Start()
{
    NS_LOG_FUNCTION(this << m_self);
    const InetSocketAddress& me = m_addresses.at(size_t(m_self));
    m_listener = Socket::CreateSocket(m_node, TcpSocketFactory::GetTypeId());
    if (m_listener->Bind(me) != 0)
    {
        NS_FATAL_ERROR("dltrace: endpoint " << m_self << " cannot listen on " << me.GetIpv4()
                                            << ":" << me.GetPort()
                                            << " (port taken? give jobs sharing hosts different "
                                               "BasePort ranges)");
    }
    DltraceBindMltcp(m_listener, m_progress, m_self); // accepted sockets fork it
    if (m_tos)
    {
        m_listener->SetIpTos(m_tos);
    }
    m_listener->Listen();
    m_listener->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                                  MakeCallback(&DltraceSocketTransport::Accepted, this));
    for (const PeerChannels& p : m_peers)
    {
        if (p.peer <= m_self)
        {
            continue; // the lower endpoint of a pair connects
        }
        for (size_t lane = 0; lane < p.lanes.size(); ++lane)
        {
            const uint16_t ch = p.lanes[lane];
            Connection& c = GetConnection(p.peer, ch);
            c.socket = Socket::CreateSocket(m_node, TcpSocketFactory::GetTypeId());
            if (p.firstSourcePort)
            {
                // DltraceHelper gave the port and registered the connection.
                const uint16_t port = uint16_t(p.firstSourcePort + lane);
                NS_ABORT_MSG_IF(c.socket->Bind(InetSocketAddress(me.GetIpv4(), port)) != 0,
                                "dltrace: endpoint " << m_self << " cannot bind source port "
                                                     << port);
            }
            else
            {
                c.socket->Bind();
            }
            if (m_tos)
            {
                c.socket->SetIpTos(m_tos);
            }
            if (auto paths = p.firstSourcePort ? nullptr : DltraceEcmpPaths::Current())
            {
                Address local;
                c.socket->GetSockName(local);
                paths->AddConnection(
                    InetSocketAddress(me.GetIpv4(), InetSocketAddress::ConvertFrom(local).GetPort()),
                    m_addresses.at(size_t(p.peer)),
                    m_job,
                    ch);
            }
            Watch(c.socket, &c);
            c.socket->SetConnectCallback(
                MakeCallback(&DltraceSocketTransport::ConnectSucceeded, this),
                MakeCallback(&DltraceSocketTransport::ConnectFailed, this));
            DltraceBindMltcp(c.socket, m_progress, m_self);
            c.out.push_front(Message{kHello, ch, 0, 0, 0, false, nullptr});
            c.socket->Connect(m_addresses.at(size_t(p.peer)));
        }
    }
}

void
DltraceSocketTransport::Stop()
{
    if (m_stopped)
    {
        return;
    }
    m_stopped = true;
    auto quiet = [](Ptr<Socket> s) {
        s->SetRecvCallback(MakeNullCallback<void, Ptr<Socket>>());
        s->SetSendCallback(MakeNullCallback<void, Ptr<Socket>, uint32_t>());
        s->SetCloseCallbacks(MakeNullCallback<void, Ptr<Socket>>(),
                             MakeNullCallback<void, Ptr<Socket>>());
        s->Close();
    };
    for (auto& kv : m_connections)
    {
        if (kv.second->socket)
        {
            quiet(kv.second->socket);
        }
    }
    for (auto& c : m_unidentified)
    {
        if (c->socket)
        {
            quiet(c->socket);
        }
    }
    if (m_listener)
    {
        m_listener->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                                      MakeNullCallback<void, Ptr<Socket>, const Address&>());
        m_listener->Close();
    }
}

void
DltraceSocketTransport::ConnectSucceeded(Ptr<Socket> socket)
{
    auto it = m_bySocket.find(PeekPointer(socket));
    if (it == m_bySocket.end())
    {
        return;
    }
    it->second->ready = true;
    Pump(*it->second);
}

void
DltraceSocketTransport::ConnectFailed(Ptr<Socket> socket)
{
    auto it = m_bySocket.find(PeekPointer(socket));
    if (it != m_bySocket.end())
    {
        ReportError(Describe(*it->second) + " could not be opened");
    }
}

void
DltraceSocketTransport::Accepted(Ptr<Socket> socket, const Address& /* from */)
{
    if (m_tos)
    {
        socket->SetIpTos(m_tos); // the reverse direction (ACKs, replies) in the same class
    }
    auto c = std::make_unique<Connection>();
    c->socket = socket;
    Watch(socket, c.get());
    m_unidentified.push_back(std::move(c));
}

void
DltraceSocketTransport::ClosedNormally(Ptr<Socket> socket)
{
    auto it = m_bySocket.find(PeekPointer(socket));
    if (!m_stopped && it != m_bySocket.end())
    {
        ReportError(Describe(*it->second) + " was closed by the peer");
    }
}

void
DltraceSocketTransport::ClosedByError(Ptr<Socket> socket)
{
    auto it = m_bySocket.find(PeekPointer(socket));
    if (!m_stopped && it != m_bySocket.end())
    {
        ReportError(Describe(*it->second) + " failed (socket error " +
                    std::to_string(int(socket->GetErrno())) + ")");
    }
}

void
DltraceSocketTransport::Post(const DltraceMessage& m, std::function<void()> onSent)
{
    Connection& c = GetConnection(m.peer, m_lanes ? m_lanes(m.peer, m.channel, m.tag) : m.channel);
    // A notice frame carries the count alone: no payload follows it.
    c.out.push_back(Message{m.notice ? kNotice : kData,
                            m.channel,
                            m.tag,
                            m.bytes,
                            m.notice ? 0 : m.bytes,
                            false,
                            std::move(onSent)});
    Pump(c);
}

void
DltraceSocketTransport::Pump(Connection& c)
{
    if (m_stopped || !c.ready || !c.socket || c.pumping)
    {
        return;
    }
    c.pumping = true;
    while (!c.out.empty())
    {
        Message& m = c.out.front();
        uint32_t room = c.socket->GetTxAvailable();
        if (!m.headerSent)
        {
            if (room < kFrameBytes)
            {
                break;
            }
            uint8_t header[kFrameBytes] = {};
            header[0] = m.kind;
            PutLe(header + 2, m.channel, 2);
            PutLe(header + 4, uint32_t(m_self), 4);
            PutLe(header + 8, m.tag, 8);
            PutLe(header + 16, m.bytes, 8);
            c.socket->Send(Create<Packet>(header, kFrameBytes));
            Handed(c, kFraming, kFrameBytes);
            m.headerSent = true;
            room -= kFrameBytes;
        }
        if (m.payloadLeft > 0)
        {
            if (room == 0)
            {
                break;
            }
            uint32_t n = uint32_t(std::min<uint64_t>(m.payloadLeft, room));
            if (c.socket->Send(Create<Packet>(n)) < 0)
            {
                break;
            }
            m.payloadLeft -= n;
            Handed(c, dltrace::models::TagOp(m.tag), n);
            continue;
        }
        std::function<void()> done = std::move(m.onSent);
        c.out.pop_front();
        if (done)
        {
            done(); // may queue more on this connection: the loop picks it up
        }
    }
    c.pumping = false;
}

void
DltraceSocketTransport::Handed(Connection& c, uint32_t op, uint64_t bytes)
{
    if (!m_progress)
    {
        return;
    }
    if (op != kFraming)
    {
        m_progress->Begin(m_self, op); // its iteration starts at ratio 0
    }
    if (c.sndBuf == 0)
    {
        UintegerValue size;
        c.socket->GetAttribute("SndBufSize", size);
        c.sndBuf = uint32_t(size.Get());
    }
    c.unackedBytes += bytes;
    if (!c.unacked.empty() && c.unacked.back().first == op)
    {
        c.unacked.back().second += bytes;
    }
    else
    {
        c.unacked.emplace_back(op, bytes);
    }
}

void
DltraceSocketTransport::Acknowledge(Connection& c)
{
    if (!m_progress || !c.socket || c.unackedBytes == 0)
    {
        return;
    }
    // The socket's buffer holds what is not acknowledged yet; the rest of
    // what was handed to it has been, in order.
    const uint64_t buffered = c.sndBuf - std::min<uint64_t>(c.sndBuf, c.socket->GetTxAvailable());
    uint64_t acked = c.unackedBytes > buffered ? c.unackedBytes - buffered : 0;
    c.unackedBytes -= acked;
    while (acked > 0 && !c.unacked.empty())
    {
        auto& [op, bytes] = c.unacked.front();
        const uint64_t n = std::min(acked, bytes);
        if (op != kFraming)
        {
            m_progress->Sent(m_self, op, n);
        }
        acked -= n;
        bytes -= n;
        if (bytes == 0)
        {
            c.unacked.pop_front();
        }
    }
}

void
DltraceSocketTransport::Writable(Ptr<Socket> socket, uint32_t /* available */)
{
    auto it = m_bySocket.find(PeekPointer(socket));
    if (it == m_bySocket.end())
    {
        return;
    }
    Acknowledge(*it->second);
    Pump(*it->second);
}

void
DltraceSocketTransport::Readable(Ptr<Socket> socket)
{
    auto it = m_bySocket.find(PeekPointer(socket));
    if (it == m_bySocket.end())
    {
        return;
    }
    Connection* c = it->second;
    Ptr<Packet> p;
    while (!m_stopped && (p = socket->Recv(std::numeric_limits<uint32_t>::max(), 0)))
    {
        if (p->GetSize() == 0)
        {
            break;
        }
        c = Parse(c, p);
        if (!c)
        {
            break;
        }
    }
}

DltraceSocketTransport::Connection*
DltraceSocketTransport::Parse(Connection* c, Ptr<Packet> packet)
{
    const uint32_t size = packet->GetSize();
    uint32_t offset = 0;
    while (offset < size)
    {
        if (c->rxPayloadLeft > 0)
        {
            uint64_t take = std::min<uint64_t>(c->rxPayloadLeft, size - offset);
            offset += uint32_t(take);
            c->rxPayloadLeft -= take;
            Deliver(c->peer, c->rxChannel, c->rxTag, take);
            continue;
        }
        uint32_t take = std::min(kFrameBytes - c->rxHeaderHave, size - offset);
        packet->CreateFragment(offset, take)->CopyData(c->rxHeader + c->rxHeaderHave, take);
        offset += take;
        c->rxHeaderHave += take;
        if (c->rxHeaderHave < kFrameBytes)
        {
            break;
        }
        c->rxHeaderHave = 0;
        const uint8_t* h = c->rxHeader;
        const uint8_t kind = h[0];
        const uint16_t channel = uint16_t(GetLe(h + 2, 2));
        const int32_t from = int32_t(GetLe(h + 4, 4));
        const uint64_t tag = GetLe(h + 8, 8);
        const uint64_t bytes = GetLe(h + 16, 8);
        if (kind == kHello)
        {
            if (c->peer >= 0 || from < 0 || size_t(from) >= m_addresses.size() || from >= m_self)
            {
                ReportError("endpoint " + std::to_string(m_self) +
                            ": unexpected hello from endpoint " + std::to_string(from));
                return nullptr;
            }
            Connection& real = GetConnection(from, channel);
            if (real.socket)
            {
                ReportError(Describe(real) + " was opened twice");
                return nullptr;
            }
            real.socket = c->socket;
            real.ready = true;
            m_bySocket[PeekPointer(real.socket)] = &real;
            c->socket = nullptr;
            c = &real;
            Pump(real);
            continue;
        }
        if (c->peer < 0 || from != c->peer)
        {
            ReportError("endpoint " + std::to_string(m_self) + ": frame from endpoint " +
                        std::to_string(from) + " before its hello");
            return nullptr;
        }
        if (kind == kNotice)
        {
            DeliverNotice(c->peer, channel, tag, bytes);
        }
        else if (kind == kData)
        {
            c->rxChannel = channel;
            c->rxTag = tag;
            c->rxPayloadLeft = bytes;
            if (bytes == 0)
            {
                Deliver(c->peer, channel, tag, 0);
            }
        }
        else
        {
            ReportError(Describe(*c) + ": bad frame kind " + std::to_string(kind));
            return nullptr;
        }
    }
    return c;
}

bool
DltraceSocketTransport::IsRunning() const
{
    return !m_stopped;
}

} // namespace ns3
