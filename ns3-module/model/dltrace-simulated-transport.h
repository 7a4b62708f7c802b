// SPDX-License-Identifier: GPL-2.0-only
// What the schedule executor's transports on ns-3 (TCP sockets, the RDMA
// fabric) share: Send and SendNotice as one Post, and timers on the
// simulator's clock that do nothing once the transport is gone.
#ifndef DLTRACE_SIMULATED_TRANSPORT_H
#define DLTRACE_SIMULATED_TRANSPORT_H

#include "dltrace/executor/transport.h"

#include <cstdint>
#include <functional>
#include <memory>

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief What a transport posts: BYTES of (CHANNEL, TAG) between its
 * endpoint and PEER; with NOTICE only their count (Transport::SendNotice).
 */
struct DltraceMessage
{
    int32_t peer;
    uint16_t channel;
    uint64_t tag;
    uint64_t bytes;
    bool notice;
};

/**
 * \ingroup dltrace
 * \brief dltrace::executor::Transport in simulated time: a subclass says how
 * a message or a notice is posted (Post) and whether it still runs (IsRunning).
 */
class DltraceSimulatedTransport : public dltrace::executor::Transport
{
  public:
    ~DltraceSimulatedTransport() override;

    void Send(int32_t peer,
              uint16_t channel,
              uint64_t tag,
              uint64_t bytes,
              std::function<void()> on_sent) override;
    void SendNotice(int32_t peer,
                    uint16_t channel,
                    uint64_t tag,
                    uint64_t bytes,
                    std::function<void()> on_sent) override;
    /// Runs CB after DURATION_NS of simulated time, unless the transport was
    /// destroyed or stopped (IsRunning) by then.
    void StartTimer(uint64_t duration_ns, std::function<void()> cb) override;
    uint64_t NowNs() const override;

  protected:
    DltraceSimulatedTransport();

    /// Posts MESSAGE to its peer; ON_SENT runs once the transport took it.
    virtual void Post(const DltraceMessage& message, std::function<void()> onSent) = 0;
    /// False once the transport stopped: pending timers then do nothing.
    virtual bool IsRunning() const;

  private:
    std::shared_ptr<bool> m_alive; ///< false once destroyed: pending timers do nothing
};

} // namespace ns3

#endif /* DLTRACE_SIMULATED_TRANSPORT_H */
