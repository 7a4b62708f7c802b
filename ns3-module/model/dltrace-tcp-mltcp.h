// SPDX-License-Identifier: GPL-2.0-only
// MLTCP (Rajasekaran et al., HotNets'24) on ns-3's NewReno and DCTCP: the
// congestion-avoidance increase is scaled by F(bytes_ratio), the fraction of
// the current iteration's bytes the flow's job has sent (models/mltcp.h).
#ifndef DLTRACE_TCP_MLTCP_H
#define DLTRACE_TCP_MLTCP_H

#include "ns3/socket.h"
#include "ns3/tcp-congestion-ops.h"
#include "ns3/tcp-dctcp.h"
#include "ns3/type-id.h"

#include "dltrace/models/mltcp.h"

#include <memory>
#include <string>

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief What every MLTCP variant shares: the job's progress and F.
 *
 * Unbound (a socket no dltrace transport set up) its gain is 1 and the
 * variant behaves as the algorithm it extends.
 */
class DltraceMltcp
{
  public:
    virtual ~DltraceMltcp() = default;
    /// The job whose bytes_ratio scales this flow, and the endpoint sending on it.
    void BindProgress(std::shared_ptr<dltrace::models::JobProgress> progress, int32_t endpoint);
    /// F(bytes_ratio) now; 1 when unbound.
    double GetGain() const;

  protected:
    /// Variant C of P's TypeId, with the attributes of this shared part.
    template <class C, class P>
    static TypeId MltcpTypeId(const std::string& name);

  private:
    double m_slope{0};         //!< S of F(r) = S * r + I
    double m_intercept{0};     //!< I of F(r) = S * r + I
    bool m_perEndpoint{false}; //!< r counts the endpoint's bytes (false: the job's)
    std::shared_ptr<dltrace::models::JobProgress> m_progress;
    int32_t m_endpoint = -1;
};

/**
 * If SOCKET is a TCP socket whose node's TcpL4Protocol makes MLTCP sockets,
 * gives it an MLTCP instance of its own bound to PROGRESS and ENDPOINT (a
 * listener's accepted sockets are forks of it and inherit the binding).
 * Call before Connect() or Listen().
 */
void DltraceBindMltcp(Ptr<Socket> socket, std::shared_ptr<dltrace::models::JobProgress> progress,
                      int32_t endpoint);

/**
 * \ingroup dltrace
 * \brief Congestion control Base as MLTCP variant Self: Base with the shared
 * MLTCP part, named and copied (Fork) as Self. Self overrides
 * CongestionAvoidance, where the variants differ.
 */
template <class Self, class Base>
class DltraceMltcpVariant : public Base, public DltraceMltcp
{
  public:
    /// Self's TypeId name without "ns3::", as ns-3's own algorithms name themselves.
    std::string GetName() const override
    {
        const std::string name = Self::GetTypeId().GetName();
        return name.substr(name.rfind(':') + 1);
    }

    Ptr<TcpCongestionOps> Fork() override
    {
        return CopyObject<Self>(static_cast<Self*>(this));
    }
};

/**
 * \ingroup dltrace
 * \brief NewReno whose additive increase per ACK is F * MSS^2 / cwnd.
 */
class TcpMltcpNewReno : public DltraceMltcpVariant<TcpMltcpNewReno, TcpNewReno>
{
  public:
    static TypeId GetTypeId();

  protected:
    void CongestionAvoidance(Ptr<TcpSocketState> tcb, uint32_t segmentsAcked) override;
};

/**
 * \ingroup dltrace
 * \brief DCTCP whose congestion avoidance counts F * segments acked
 * (fractions carried to the next ACK): one MSS per cwnd/F segments.
 */
class TcpMltcpDctcp : public DltraceMltcpVariant<TcpMltcpDctcp, TcpDctcp>
{
  public:
    static TypeId GetTypeId();

  protected:
    void CongestionAvoidance(Ptr<TcpSocketState> tcb, uint32_t segmentsAcked) override;

  private:
    double m_credit = 0; //!< scaled segments not yet counted
};

} // namespace ns3

#endif /* DLTRACE_TCP_MLTCP_H */
