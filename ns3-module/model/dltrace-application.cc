// SPDX-License-Identifier: GPL-2.0-only
// DltraceApplication: wires a ScheduleExecutor to a DltraceSocketTransport at
// start, hands the result to the job at the end, and reports ops as they run.
#include "dltrace-application.h"

#include "dltrace-attributes.h"
#include "dltrace-timeline.h"

#include "dltrace-rdma-transport.h"
#include "dltrace-socket-transport.h"

#include "ns3/ipv4.h"
#include "ns3/log.h"
#include "ns3/pointer.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include "dltrace/executor/schedule_executor.h"
#include "dltrace/executor/schedule_tools.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceApplication");

NS_OBJECT_ENSURE_REGISTERED(DltraceApplication);

TypeId
DltraceApplication::GetTypeId()
{
    static TypeId tid = DltraceTypeId<DltraceApplication, Application>("ns3::DltraceApplication")
            .AddAttribute("Job",
                          "The DltraceJob this endpoint belongs to (its trace set, algorithm, "
                          "channels and endpoint addresses).",
                          PointerValue(),
                          MakePointerAccessor(&DltraceApplication::m_job),
                          MakePointerChecker<DltraceJob>())
            .AddAttribute("RdmaNetwork",
                          "When set, the endpoint sends over this RDMA fabric's queue pairs "
                          "instead of TCP sockets.",
                          PointerValue(),
                          MakePointerAccessor(&DltraceApplication::m_rdma),
                          MakePointerChecker<DltraceRdmaNetwork>())
            .AddUinteger("Endpoint",
                         "Which endpoint of the job's schedule this application runs.",
                         0, &DltraceApplication::m_endpoint)
            .AddTraceSource("OpStart",
                            "An op's first transfer step on this endpoint was issued.",
                            &DltraceApplication::m_opStart, "ns3::DltraceApplication::OpStartCallback")
            .AddTraceSource("OpFinish",
                            "An op's last transfer step on this endpoint finished.",
                            &DltraceApplication::m_opFinish, "ns3::DltraceApplication::OpFinishCallback");
    return tid;
}

DltraceApplication::DltraceApplication() = default;

DltraceApplication::~DltraceApplication() = default;

void
DltraceApplication::DoDispose()
{
    m_executor.reset();
    m_socket = nullptr;
    m_transport.reset();
    m_job = nullptr;
    m_rdma = nullptr;
    Application::DoDispose();
}

Ptr<DltraceJob>
DltraceApplication::GetJob() const
{
    return m_job;
}

uint32_t
DltraceApplication::GetEndpoint() const
{
    return m_endpoint;
}

std::pair<uint64_t, uint64_t>
DltraceApplication::GetStepsAndBytesDone() const
{
    if (!m_executor)
    {
        return {0, 0};
    }
    const auto& r = m_executor->result();
    return {r.steps_done, r.bytes_received};
}

void
DltraceApplication::StartApplication()
{
    NS_LOG_FUNCTION(this << m_endpoint);
    NS_ABORT_MSG_IF(!m_job, "DltraceApplication: no Job attribute set");
    const auto& schedule = m_job->GetSchedule();
    NS_ABORT_MSG_IF(m_endpoint >= schedule.ranks.size(),
                    "DltraceApplication: endpoint " << m_endpoint << " is not in the schedule ("
                                                    << schedule.ranks.size() << " endpoints)");
    if (m_rdma)
    {
        auto rdma = std::make_unique<DltraceRdmaTransport>(m_rdma, m_job->GetIndex(), int32_t(m_endpoint));
        Ptr<DltraceJob> job = m_job;
        const int32_t self = int32_t(m_endpoint);
        rdma->SetLanes([job, self](int32_t peer, uint16_t channel, uint64_t tag) {
            return job->GetLane(self, peer, channel, tag);
        });
        m_transport = std::move(rdma);
    }
    else
    {
        std::vector<InetSocketAddress> addresses;
        for (uint32_t e = 0; e < m_job->GetEndpointCount(); ++e)
        {
            addresses.emplace_back(m_job->GetEndpointAddress(e), m_job->GetEndpointPort(e));
        }
        std::vector<DltraceSocketTransport::PeerChannels> peers;
        for (auto& [peer, lanes] : m_job->GetLanes(m_endpoint))
        {
            peers.push_back({peer, std::move(lanes), m_job->GetSourcePort(m_endpoint, peer)});
        }
        auto socket = std::make_unique<DltraceSocketTransport>(GetNode(),
                                                               m_job->GetIndex(),
                                                               int32_t(m_endpoint),
                                                               std::move(addresses),
                                                               std::move(peers));
        Ptr<DltraceJob> job = m_job;
        const int32_t self = int32_t(m_endpoint);
        socket->SetLanes([job, self](int32_t peer, uint16_t channel, uint64_t tag) {
            return job->GetLane(self, peer, channel, tag);
        });
        m_socket = socket.get();
        m_transport = std::move(socket);
    }
    dltrace::executor::ExecutorOptions options;
    options.time_scale = m_job->GetTimeScale();
    m_executor = std::make_unique<dltrace::executor::ScheduleExecutor>(schedule,
                                                                 int32_t(m_endpoint),
                                                                 *m_transport,
                                                                 options);
    m_executor->set_on_op_start([this](uint32_t op) { m_opStart(m_endpoint, op); });
    m_executor->set_on_op_finish([this](uint32_t op, const dltrace::executor::TimeRange& range) {
        const uint64_t origin = m_executor->result().clock_origin_ns;
        m_opFinish(m_endpoint,
                   op,
                   NanoSeconds(int64_t(origin + range.start_ns)),
                   NanoSeconds(int64_t(origin + range.end_ns)));
    });
    if (m_socket)
    {
        m_socket->SetIpTos(uint8_t(m_job->GetPriority() << 5));
        m_socket->SetProgress(m_job->GetProgress());
        m_socket->Start();
    }
    Ptr<DltraceJob> job = m_job;
    m_executor->Start([this, job](const dltrace::executor::RankResult& result) {
        job->NotifyEndpointDone(result);
    });
}

void
DltraceApplication::Abandon(const std::string& reason)
{
    if (m_executor && !m_executor->finished())
    {
        m_executor->Fail(reason); // the engine was started, so this reaches the job
    }
}

void
DltraceApplication::StopApplication()
{
    NS_LOG_FUNCTION(this << m_endpoint);
    Abandon("stopped at " + std::to_string(DltraceTimeline::Now().GetSeconds()) +
            " s (simulated) before finishing");
    if (m_socket)
    {
        m_socket->Stop();
    }
}

} // namespace ns3
