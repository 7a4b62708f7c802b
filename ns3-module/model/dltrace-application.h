// SPDX-License-Identifier: GPL-2.0-only
// The ns-3 application that runs one endpoint of a dltrace job: the replay
// schedule executor over ns-3 TCP sockets, in simulated time.
#ifndef DLTRACE_APPLICATION_H
#define DLTRACE_APPLICATION_H

#include "dltrace-job.h"

#include "ns3/application.h"
#include "ns3/nstime.h"
#include "ns3/traced-callback.h"

#include <memory>
#include <string>
#include <vector>

namespace dltrace::replay
{
class ScheduleExecutor;
}

namespace ns3
{

class DltraceSocketTransport;
class DltraceRdmaNetwork;

/**
 * \ingroup dltrace
 * \brief Runs one endpoint of a DltraceJob's schedule over ns-3 TCP.
 *
 * Compute steps become timers, sends and receives real simulated TCP
 * traffic to the other endpoints (one connection per pair and channel). When
 * the endpoint finished, its result goes to the job.
 */
class DltraceApplication : public Application
{
  public:
    static TypeId GetTypeId();
    DltraceApplication();
    ~DltraceApplication() override;

    /**
     * TracedCallback signature for an op starting on this endpoint.
     * \param endpoint this application's endpoint
     * \param op index into the job schedule's ops
     */
    typedef void (*OpStartCallback)(uint32_t endpoint, uint32_t op);
    /**
     * TracedCallback signature for an op finishing on this endpoint.
     * \param endpoint this application's endpoint
     * \param op index into the job schedule's ops
     * \param start when its first transfer step on this endpoint started
     * \param end when its last one ended
     */
    typedef void (*OpFinishCallback)(uint32_t endpoint, uint32_t op, Time start, Time end);

    Ptr<DltraceJob> GetJob() const;
    /// The endpoint of the job's schedule it runs (Endpoint attribute).
    uint32_t GetEndpoint() const;
    /// How far the engine got so far: steps done and payload bytes received
    /// (zeros before it started).
    std::pair<uint64_t, uint64_t> GetStepsAndBytesDone() const;
    /// Stops an unfinished engine with REASON, so the job gets a partial result.
    void Abandon(const std::string& reason);

  protected:
    void DoDispose() override;

  private:
    void StartApplication() override;
    void StopApplication() override;

    Ptr<DltraceJob> m_job;
    uint32_t m_endpoint{0};
    Ptr<DltraceRdmaNetwork> m_rdma; ///< set: the RDMA transport instead of TCP sockets
    std::unique_ptr<dltrace::executor::Transport> m_transport;
    DltraceSocketTransport* m_socket = nullptr; ///< m_transport when it is the TCP one
    std::unique_ptr<dltrace::executor::ScheduleExecutor> m_executor;

    TracedCallback<uint32_t, uint32_t> m_opStart;
    TracedCallback<uint32_t, uint32_t, Time, Time> m_opFinish;
};

} // namespace ns3

#endif /* DLTRACE_APPLICATION_H */
