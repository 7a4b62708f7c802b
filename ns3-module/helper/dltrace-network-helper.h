// SPDX-License-Identifier: GPL-2.0-only
// Turns a built dltrace topology into a network: TCP defaults and congestion
// control, the Internet stack with per-flow ECMP, queue discs and addresses.
#ifndef DLTRACE_NETWORK_HELPER_H
#define DLTRACE_NETWORK_HELPER_H

#include "ns3/dltrace-topology-helper.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/queue-disc-container.h"
#include "ns3/type-id.h"

#include "dltrace/models/lanes.h"

#include <cstdint>
#include <string>

namespace ns3
{

/// Default TCP buffers: above the bandwidth-delay product of a 100 Gbit/s
/// leaf-spine (~125 KB), and small, because ns-3.37's TcpTxBuffer::NextSeg
/// scans the send buffer per segment: dltrace-ns3-bench measured one ResNet-50
/// iteration 0.72x the wall time of 1 MiB buffers (1.34x at 4 MiB) for the
/// same simulated time.
constexpr uint32_t kDltraceDefaultSndBuf = dltrace::models::kTcpSendBufferBytes; // the flow simulator's too
constexpr uint32_t kDltraceDefaultRcvBuf = 256u << 10;

/**
 * Finds a TCP congestion control by name: "TcpDctcp", "ns3::TcpCubic", or
 * the short "dctcp", "cubic", "newreno", "bbr" (any case).
 * \return false with one line in *error listing the names available
 */
bool DltraceFindCongestionControl(const std::string& name, TypeId* tid, std::string* error);

/**
 * \ingroup dltrace
 * \brief Sets up the network of a DltraceTopologyHelper's nodes and links.
 *
 * An Object for its attributes (as LteHelper is). Call ConfigureTcp() before
 * any TCP socket exists (it sets Config defaults and checks the names), then
 * Install() once the topology is built.
 */
class DltraceNetworkHelper : public Object
{
  public:
    static TypeId GetTypeId();
    DltraceNetworkHelper();
    ~DltraceNetworkHelper() override;

    /**
     * Checks the TCP attributes and makes them ns-3's TCP defaults (socket
     * type, segment size, buffers, minimum RTO, loss recovery; pacing for BBR).
     * \return false with one line in *error naming the bad value
     */
    bool ConfigureTcp(std::string* error);
    /**
     * Installs the Internet stack (static routing, then per-flow ECMP global
     * routing), the queue discs (switch ports: the QueueDisc attribute; host
     * ports: fq-codel), one /30 per link from 10.0.0.0, and the routes.
     * \return false with one line in *error for an unknown queue disc
     */
    bool Install(const DltraceTopologyHelper& topology, std::string* error);

    /// The congestion control ConfigureTcp() found.
    TypeId GetCongestionControl() const;
    /// E.g. "red-ecn (K=65p)" or "fifo (1000p)".
    std::string GetQueueDiscDescription() const;
    /// ECN marks and drops at the switch queue discs; drops at the host ones.
    uint64_t GetEcnMarks() const;
    uint64_t GetSwitchQueueDrops() const;
    uint64_t GetHostQueueDrops() const;

  protected:
    void DoDispose() override;

  private:
    bool InstallQueues(const DltraceTopologyHelper& topology, std::string* error);

    std::string m_congestionControl;
    uint32_t m_segmentSize{0};
    uint32_t m_sndBufBytes{0};
    uint32_t m_rcvBufBytes{0};
    Time m_minRto;
    std::string m_recovery;
    std::string m_queueDisc;
    uint32_t m_queuePackets{0};
    uint32_t m_ecnThresholdPackets{0};
    bool m_priorities{false};

    TypeId m_cc;
    std::string m_queueKind;
    uint32_t m_ecnK;
    QueueDiscContainer m_switchQueues;
    QueueDiscContainer m_hostQueues;
};

} // namespace ns3

#endif /* DLTRACE_NETWORK_HELPER_H */
