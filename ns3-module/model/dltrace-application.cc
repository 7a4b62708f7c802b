// DltraceApplication: wires a ScheduleEngine to a DltraceSocketTransport at
// start, hands the result to the job at the end, and reports ops as they run.
#include "dltrace-application.h"

#include "dltrace-socket-transport.h"

#include "ns3/ipv4.h"
#include "ns3/log.h"
#include "ns3/pointer.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include "dltrace/replay/engine.h"
#include "dltrace/replay/schedule_tools.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceApplication");

NS_OBJECT_ENSURE_REGISTERED(DltraceApplication);

TypeId
DltraceApplication::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::DltraceApplication")
            .SetParent<Application>()
            .SetGroupName("Dltrace")
            .AddConstructor<DltraceApplication>()
            .AddAttribute("Job",
                          "The DltraceJob this endpoint belongs to (its trace set, algorithm, "
                          "channels and endpoint addresses).",
                          PointerValue(),
                          MakePointerAccessor(&DltraceApplication::m_job),
                          MakePointerChecker<DltraceJob>())
            .AddAttribute("Endpoint",
                          "Which endpoint of the job's schedule this application runs.",
                          UintegerValue(0),
                          MakeUintegerAccessor(&DltraceApplication::m_endpoint),
                          MakeUintegerChecker<uint32_t>())
            .AddTraceSource("OpStart",
                            "An op's first transfer step on this endpoint was issued.",
                            MakeTraceSourceAccessor(&DltraceApplication::m_opStart),
                            "ns3::DltraceApplication::OpStartCallback")
            .AddTraceSource("OpFinish",
                            "An op's last transfer step on this endpoint finished.",
                            MakeTraceSourceAccessor(&DltraceApplication::m_opFinish),
                            "ns3::DltraceApplication::OpFinishCallback");
    return tid;
}

DltraceApplication::DltraceApplication()
    : m_endpoint(0),
      m_firstOpen(0),
      m_lastStepsDone(0)
{
}

DltraceApplication::~DltraceApplication() = default;

void
DltraceApplication::DoDispose()
{
    m_engine.reset();
    m_transport.reset();
    m_job = nullptr;
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

bool
DltraceApplication::IsFinished() const
{
    return m_engine && m_engine->finished();
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
    std::vector<InetSocketAddress> addresses;
    for (uint32_t e = 0; e < m_job->GetEndpointCount(); ++e)
    {
        addresses.emplace_back(m_job->GetEndpointAddress(e), m_job->GetEndpointPort(e));
    }
    std::vector<DltraceSocketTransport::PeerChannels> peers;
    for (const auto& p : dltrace::replay::PeersOf(schedule, int32_t(m_endpoint)))
    {
        peers.push_back({p.peer, p.channels});
    }
    m_transport = std::make_unique<DltraceSocketTransport>(GetNode(),
                                                           int32_t(m_endpoint),
                                                           std::move(addresses),
                                                           std::move(peers));
    dltrace::replay::EngineOptions options;
    options.time_scale = m_job->GetTimeScale();
    m_engine = std::make_unique<dltrace::replay::ScheduleEngine>(schedule,
                                                                 int32_t(m_endpoint),
                                                                 *m_transport,
                                                                 options);
    if (!m_opStart.IsEmpty() || !m_opFinish.IsEmpty())
    {
        // The ops this endpoint has transfer steps in, in step order.
        const auto& rank = schedule.ranks[m_endpoint];
        std::vector<std::vector<uint32_t>> byOp(schedule.ops.size());
        for (uint32_t i = 0; i < rank.steps.size(); ++i)
        {
            if (rank.steps[i].type != dltrace::models::StepType::kCompute &&
                rank.steps[i].op < byOp.size())
            {
                if (byOp[rank.steps[i].op].empty())
                {
                    m_trackedOps.push_back(rank.steps[i].op);
                }
                byOp[rank.steps[i].op].push_back(i);
            }
        }
        m_opStepsAt.push_back(0);
        for (uint32_t op : m_trackedOps)
        {
            m_opSteps.insert(m_opSteps.end(), byOp[op].begin(), byOp[op].end());
            m_opStepsAt.push_back(uint32_t(m_opSteps.size()));
        }
        m_opState.assign(m_trackedOps.size(), 0);
        m_transport->SetAfterEvent([this]() { TrackOps(); });
    }
    m_transport->Start();
    Ptr<DltraceJob> job = m_job;
    m_engine->Start([this, job](const dltrace::replay::RankResult& result) {
        TrackOps();
        job->NotifyEndpointDone(result);
    });
}

void
DltraceApplication::TrackOps()
{
    if (m_trackedOps.empty() || !m_engine)
    {
        return;
    }
    const auto& r = m_engine->result();
    if (r.steps_done == m_lastStepsDone && !m_engine->finished())
    {
        return;
    }
    m_lastStepsDone = r.steps_done;
    const uint64_t origin = r.clock_origin_ns;
    // Ops on different lanes overlap, so look a little past the first open one.
    constexpr size_t kWindow = 16;
    size_t waiting = 0;
    for (size_t k = m_firstOpen; k < m_trackedOps.size() && waiting < kWindow; ++k)
    {
        if (m_opState[k] == 2)
        {
            continue;
        }
        bool any = false;
        bool all = true;
        uint64_t start = UINT64_MAX;
        uint64_t end = 0;
        for (uint32_t j = m_opStepsAt[k]; j < m_opStepsAt[k + 1]; ++j)
        {
            const auto& t = r.steps[m_opSteps[j]];
            if (!t.valid)
            {
                all = false;
                continue;
            }
            any = true;
            start = std::min(start, t.start_ns);
            if (t.end_ns < t.start_ns || (t.end_ns == 0 && !m_engine->finished()))
            {
                all = false;
            }
            end = std::max(end, t.end_ns);
        }
        if (any && m_opState[k] == 0)
        {
            m_opState[k] = 1;
            m_opStart(m_endpoint, m_trackedOps[k]);
        }
        if (!any)
        {
            ++waiting;
        }
        if (any && all)
        {
            m_opState[k] = 2;
            m_opFinish(m_endpoint,
                       m_trackedOps[k],
                       NanoSeconds(int64_t(origin + start)),
                       NanoSeconds(int64_t(origin + end)));
        }
    }
    while (m_firstOpen < m_trackedOps.size() && m_opState[m_firstOpen] == 2)
    {
        ++m_firstOpen;
    }
}

void
DltraceApplication::Abandon(const std::string& reason)
{
    if (m_engine && !m_engine->finished())
    {
        m_engine->Fail(reason); // the engine was started, so this reaches the job
    }
}

void
DltraceApplication::StopApplication()
{
    NS_LOG_FUNCTION(this << m_endpoint);
    Abandon("stopped at " + std::to_string(Simulator::Now().GetSeconds()) +
            " s (simulated) before finishing");
    if (m_transport)
    {
        m_transport->Stop();
    }
}

} // namespace ns3
