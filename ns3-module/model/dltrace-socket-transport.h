// SPDX-License-Identifier: GPL-2.0-only
// The schedule executor's Transport on ns-3 TCP sockets: one connection per
// endpoint pair and channel, framed messages, send-until-full in simulated time.
#ifndef DLTRACE_SOCKET_TRANSPORT_H
#define DLTRACE_SOCKET_TRANSPORT_H

#include "ns3/dltrace-simulated-transport.h"
#include "ns3/inet-socket-address.h"
#include "ns3/node.h"
#include "ns3/ptr.h"
#include "ns3/socket.h"

#include "dltrace/models/mltcp.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief dltrace::executor::Transport over ns-3 TCP sockets.
 *
 * The lower endpoint of a pair connects to the higher one, once per lane (a
 * channel, and the RailMode of its messages where that changes their path:
 * DltraceJob::GetLane), and opens with a hello frame naming itself and the lane. Every message
 * is a 24-byte frame header (kind, channel, endpoint, tag, bytes) followed by
 * BYTES of payload; payloads are ns-3 virtual (zero-filled) bytes, so only the
 * headers are real data. Sending follows BulkSendApplication: fill the socket
 * while it has room, resume from its send callback.
 */
class DltraceSocketTransport : public DltraceSimulatedTransport
{
  public:
    static constexpr uint32_t kFrameBytes = 24;
    static constexpr uint32_t kFraming = UINT32_MAX; //!< "op" of frame headers in the ACK count

    /// A peer endpoint and the lanes (DltraceJob::GetLanes) this endpoint shares with it.
    struct PeerChannels
    {
        int32_t peer;
        std::vector<uint16_t> lanes;
        uint16_t firstSourcePort = 0; //!< lane I binds FIRST + I; 0: ephemeral (unregistered)
    };
    /// The lane (connection) of a message to PEER on CHANNEL of the op TAG names.
    using LaneFunction = std::function<uint16_t(int32_t peer, uint16_t channel, uint64_t tag)>;

    /**
     * \param node the host this endpoint runs on
     * \param self this endpoint
     * \param addresses every endpoint's listening address, index = endpoint
     * \param peers the endpoints SELF exchanges messages with
     * \param job the job's index in the simulation (for DltraceEcmpPaths)
     */
    DltraceSocketTransport(Ptr<Node> node,
                           uint32_t job,
                           int32_t self,
                           std::vector<InetSocketAddress> addresses,
                           std::vector<PeerChannels> peers);
    ~DltraceSocketTransport() override;

    /// Counts the payload bytes handed to TCP in PROGRESS, and binds MLTCP
    /// congestion controls to it (when the sockets' type is one). Before Start().
    void SetProgress(std::shared_ptr<dltrace::models::JobProgress> progress);
    /// Which lane each message takes (default: its channel), set before Start().
    void SetLanes(LaneFunction lanes);
    /// IP TOS of every socket of this endpoint (0: best effort), set before Start().
    void SetIpTos(uint8_t tos);
    /// Listens, and connects to every higher peer on every channel.
    void Start();
    /// Closes every socket; nothing is delivered afterwards.
    void Stop();

  protected:
    void Post(const DltraceMessage& message, std::function<void()> onSent) override;
    bool IsRunning() const override;

  private:
    enum FrameKind : uint8_t
    {
        kHello = 1,
        kData = 2,
        kNotice = 3,
    };

    struct Message
    {
        FrameKind kind;
        uint16_t channel;
        uint64_t tag;
        uint64_t bytes;
        uint64_t payloadLeft;
        bool headerSent;
        std::function<void()> onSent;
    };

    struct Connection
    {
        int32_t peer = -1;
        uint16_t channel = 0; // the lane: its channel, and its mode above models::kLaneModeShift (models/lanes.h)
        Ptr<Socket> socket;
        bool ready = false;  // connected and (on the accepting side) identified
        bool pumping = false;
        std::deque<Message> out;
        // MLTCP counts acknowledged bytes: what was handed to the socket and
        // is not acknowledged yet, per op (kFraming: frame headers).
        uint32_t sndBuf = 0;
        uint64_t unackedBytes = 0;
        std::deque<std::pair<uint32_t, uint64_t>> unacked;
        // Receive side: the frame being parsed.
        uint8_t rxHeader[kFrameBytes] = {};
        uint32_t rxHeaderHave = 0;
        uint64_t rxPayloadLeft = 0;
        FrameKind rxKind = kData;
        uint16_t rxChannel = 0;
        uint64_t rxTag = 0;
    };

    Connection& GetConnection(int32_t peer, uint16_t channel);
    void Pump(Connection& c);
    /// Tells the job's progress the bytes of C's socket acknowledged since last time.
    void Acknowledge(Connection& c);
    void Handed(Connection& c, uint32_t op, uint64_t bytes);
    void Watch(Ptr<Socket> socket, Connection* c);

    void ConnectSucceeded(Ptr<Socket> socket);
    void ConnectFailed(Ptr<Socket> socket);
    void Accepted(Ptr<Socket> socket, const Address& from);
    void Readable(Ptr<Socket> socket);
    void Writable(Ptr<Socket> socket, uint32_t available);
    void ClosedNormally(Ptr<Socket> socket);
    void ClosedByError(Ptr<Socket> socket);
    /// Parses one received packet on C; returns the connection later bytes belong to.
    Connection* Parse(Connection* c, Ptr<Packet> packet);
    std::string Describe(const Connection& c) const;

    Ptr<Node> m_node;
    uint32_t m_job;
    uint8_t m_tos = 0;
    int32_t m_self;
    std::vector<InetSocketAddress> m_addresses;
    std::vector<PeerChannels> m_peers;
    std::shared_ptr<dltrace::models::JobProgress> m_progress;
    LaneFunction m_lanes;
    Ptr<Socket> m_listener;
    std::map<std::pair<int32_t, uint16_t>, std::unique_ptr<Connection>> m_connections;
    // Accepted sockets waiting for their hello frame.
    std::vector<std::unique_ptr<Connection>> m_unidentified;
    std::unordered_map<Socket*, Connection*> m_bySocket;
    bool m_stopped;
};

} // namespace ns3

#endif /* DLTRACE_SOCKET_TRANSPORT_H */
