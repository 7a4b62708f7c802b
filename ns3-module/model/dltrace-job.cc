// SPDX-License-Identifier: GPL-2.0-only
// DltraceJob: reads and lowers a trace set once for all of a job's
// applications, holds the endpoint address table and collects results.
#include "dltrace-job.h"

#include "dltrace-attributes.h"

#include <iostream>
#include <set>

#include "ns3/double.h"
#include "ns3/log.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include "dltrace/models/algorithms.h"
#include "dltrace/models/job.h"
#include "dltrace/models/placement.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceJob");

NS_OBJECT_ENSURE_REGISTERED(DltraceJob);

TypeId
DltraceJob::GetTypeId()
{
    static TypeId tid = DltraceTypeId<DltraceJob, Object>("ns3::DltraceJob")
            .AddString("TraceSet",
                       "A .dltrace file or a trace-set directory to replay.",
                       "", &DltraceJob::m_tracePath)
            .AddString("Algorithm",
                       "Collective algorithm the trace is lowered with: " +
                       dltrace::models::AlgorithmNamesJoined() +
                       "; empty: the trace's default (nccl for NCCL traces, recorded "
                       "for MPI).",
                       "", &DltraceJob::m_algorithm)
            .AddUinteger("Channels",
                         "TCP connections per endpoint pair; an op's bytes are split among them.",
                         1, &DltraceJob::m_channels, 1, 64)
            .AddUinteger("Iterations",
                         "Replay only the first N training iterations (0: all).",
                         0, &DltraceJob::m_iterations)
            .AddDouble("TimeScale",
                       "Multiplies the recorded compute gaps (0 skips them).",
                       1.0, &DltraceJob::m_timeScale, 0)
            .AddUinteger("BasePort",
                         "Endpoint E listens on BasePort + E (jobs sharing hosts need "
                         "ranges that do not overlap).",
                         5000, &DltraceJob::m_basePort)
            .AddUinteger("Priority",
                         "Traffic class 0-7 of the job's traffic: the RDMA class (and PFC "
                         "priority), or over TCP the DSCP class selector CS<n>.",
                         0, &DltraceJob::m_priority, 0, 7)
            .AddUinteger("Index",
                         "The job's place among the simulation's jobs (0 for the first): "
                         "part of its connections' ECMP hash (models::FlowHash).",
                         0, &DltraceJob::m_index)
            .AddTraceSource("JobDone",
                            "Every endpoint of the job finished (or failed).",
                            &DltraceJob::m_jobDone, "ns3::DltraceJob::JobDoneCallback");
    return tid;
}

DltraceJob::DltraceJob()
    : m_lowerSet(false),
      m_doneCount(0)
{
}

DltraceJob::~DltraceJob() = default;

void
DltraceJob::DoDispose()
{
    m_results.clear();
    Object::DoDispose();
}

void
DltraceJob::SetLowerOptions(const dltrace::models::LowerOptions& options)
{
    m_lower = options;
    m_lowerSet = true;
}

bool
DltraceJob::Load(std::string* error)
{
    dltrace::models::LowerOptions options = m_lowerSet ? m_lower : dltrace::models::LowerOptions();
    options.algorithm = m_algorithm;
    options.channels = int(m_channels);
    if (m_tracePath.empty())
    {
        *error = "no trace set given (the TraceSet attribute is empty)";
        return false;
    }
    // Loaded, lowered and cut as every executor prepares a job.
    dltrace::models::JobPlacement placement;
    placement.trace = m_tracePath;
    placement.lower = options;
    placement.iterations = int32_t(m_iterations);
    dltrace::models::PreparedJob prepared;
    if (!dltrace::models::PrepareJob(placement, &prepared, error))
    {
        return false;
    }
    // Said on stderr, not only in the log: a truncated or damaged trace set
    // is simulated as far as it goes, as replay and schedule do.
    for (const auto& n : prepared.loaded->notes)
    {
        std::cerr << "dltrace: warning: " << n << std::endl;
    }
    m_job = std::move(prepared.loaded);
    m_schedule = std::move(prepared.schedule);
    m_algorithm = m_schedule.algorithm; // the trace's default when none was given
    Prepare();
    return true;
}

void
DltraceJob::SetSchedule(dltrace::models::Schedule schedule)
{
    dltrace::models::KeepIterations(&schedule, int32_t(m_iterations));
    m_schedule = std::move(schedule);
    m_job.reset();
    Prepare();
}

void
DltraceJob::Prepare()
{
    const size_t n = m_schedule.ranks.size();
    m_addresses.assign(n, Ipv4Address());
    m_results.assign(n, dltrace::executor::RankResult());
    for (size_t e = 0; e < n; ++e)
    {
        m_results[e].endpoint = int32_t(e);
        m_results[e].error = "never started";
    }
    m_done.assign(n, false);
    m_doneCount = 0;
    m_progress = std::make_shared<dltrace::models::JobProgress>(m_schedule);
}

const dltrace::models::Schedule&
DltraceJob::GetSchedule() const
{
    return m_schedule;
}

std::shared_ptr<dltrace::models::JobProgress>
DltraceJob::GetProgress() const
{
    return m_progress;
}

uint32_t
DltraceJob::GetEndpointCount() const
{
    return uint32_t(m_schedule.ranks.size());
}

const dltrace::models::Job*
DltraceJob::GetLoadedJob() const
{
    return m_job.get();
}

void
DltraceJob::SetEndpointAddress(uint32_t endpoint, Ipv4Address address)
{
    NS_ABORT_MSG_IF(endpoint >= m_addresses.size(),
                    "DltraceJob: no endpoint " << endpoint << " (the job has "
                                               << m_addresses.size() << ")");
    m_addresses[endpoint] = address;
}

Ipv4Address
DltraceJob::GetEndpointAddress(uint32_t endpoint) const
{
    return m_addresses.at(endpoint);
}

uint16_t
DltraceJob::GetEndpointPort(uint32_t endpoint) const
{
    NS_ABORT_MSG_IF(uint32_t(m_basePort) + endpoint > 65535,
                    "DltraceJob: BasePort " << m_basePort << " + endpoint " << endpoint
                                            << " is past port 65535");
    return uint16_t(m_basePort + endpoint);
}

void
DltraceJob::SetSourcePort(uint32_t endpoint, int32_t peer, uint16_t first)
{
    m_sourcePorts[{endpoint, peer}] = first;
}

uint16_t
DltraceJob::GetSourcePort(uint32_t endpoint, int32_t peer) const
{
    auto it = m_sourcePorts.find({endpoint, peer});
    return it == m_sourcePorts.end() ? 0 : it->second;
}

bool
DltraceJob::Place(std::shared_ptr<const dltrace::models::TopologyGraph> graph,
                  std::vector<uint32_t> nodes,
                  const dltrace::models::NcclNicOptions& nic,
                  std::string* error)
{
    NS_ABORT_MSG_IF(nodes.size() != m_schedule.ranks.size(),
                    "DltraceJob: " << nodes.size() << " nodes for " << m_schedule.ranks.size()
                                   << " endpoints");
    dltrace::models::LocaliseSteps(&m_schedule, nodes);
    if (!dltrace::models::SplitQueuePairs(&m_schedule, nodes, graph.get(), nic, error))
    {
        return false;
    }
    m_graph = std::move(graph);
    m_nodes = std::move(nodes);
    m_opMode.assign(m_schedule.ops.size(), dltrace::models::RailMode::kDirect);
    if (m_graph)
    {
        for (size_t op = 0; op < m_schedule.ops.size(); ++op)
        {
            m_opMode[op] = dltrace::models::OpRailMode(*m_graph, m_schedule.ops[op], nic);
        }
    }
    return true;
}

uint32_t
DltraceJob::GetNode(int32_t endpoint) const
{
    return m_nodes.empty() ? uint32_t(endpoint) : m_nodes.at(size_t(endpoint));
}

uint16_t
DltraceJob::GetLane(int32_t src, int32_t dst, uint16_t channel, uint64_t tag) const
{
    NS_ABORT_MSG_IF(channel >> dltrace::models::kLaneModeShift,
                    "DltraceJob: channel " << channel << " is past the "
                                           << (1u << dltrace::models::kLaneModeShift)
                                           << " channels a lane can name");
    const uint32_t op = dltrace::models::TagOp(tag);
    if (!m_graph || op >= m_opMode.size() || m_opMode[op] == dltrace::models::RailMode::kDirect)
    {
        return channel;
    }
    const uint32_t a = GetNode(src);
    const uint32_t b = GetNode(dst);
    const auto relays = dltrace::models::ConnectionRelays(*m_graph, a, b, channel, m_opMode[op]);
    if (relays.first == a && relays.second == b)
    {
        return channel; // the mode's path is the direct one
    }
    return dltrace::models::MakeLane(channel, m_opMode[op]);
}

std::map<int32_t, std::vector<uint16_t>>
DltraceJob::GetLanes(uint32_t endpoint) const
{
    std::map<int32_t, std::set<uint16_t>> lanes;
    const int32_t self = int32_t(endpoint);
    for (const auto& st : m_schedule.ranks.at(endpoint).steps)
    {
        if (st.type == dltrace::models::StepType::kCompute || st.peer == self || st.peer < 0)
        {
            continue;
        }
        const bool send = st.type == dltrace::models::StepType::kSend;
        std::set<uint16_t>& mine = lanes[st.peer];
        // Channels 0 .. st.channel, from the top down: the direct ones in the
        // set are always a prefix, so the first one already there ends it.
        for (int32_t c = st.channel; c >= 0 && mine.insert(uint16_t(c)).second; --c)
        {
        }
        mine.insert(send ? GetLane(self, st.peer, st.channel, st.tag)
                         : GetLane(st.peer, self, st.channel, st.tag));
    }
    std::map<int32_t, std::vector<uint16_t>> out;
    for (const auto& [peer, set] : lanes)
    {
        out[peer].assign(set.begin(), set.end());
    }
    return out;
}

uint32_t
DltraceJob::GetPriority() const
{
    return m_priority;
}

uint32_t
DltraceJob::GetIndex() const
{
    return m_index;
}

double
DltraceJob::GetTimeScale() const
{
    return m_timeScale;
}

std::string
DltraceJob::GetTracePath() const
{
    return m_tracePath;
}

std::string
DltraceJob::GetAlgorithm() const
{
    return m_algorithm;
}

void
DltraceJob::NotifyEndpointDone(const dltrace::executor::RankResult& result)
{
    size_t e = size_t(result.endpoint);
    NS_ABORT_MSG_IF(e >= m_results.size(), "DltraceJob: result of unknown endpoint " << e);
    m_results[e] = result;
    if (!m_done[e])
    {
        m_done[e] = true;
        ++m_doneCount;
        if (m_doneCount == m_done.size())
        {
            m_jobDone(this);
        }
    }
}

uint32_t
DltraceJob::GetEndpointsDone() const
{
    return m_doneCount;
}

bool
DltraceJob::IsDone() const
{
    return !m_done.empty() && m_doneCount == m_done.size();
}

const std::vector<dltrace::executor::RankResult>&
DltraceJob::GetResults() const
{
    return m_results;
}

void
DltraceJob::MarkUnfinished(const std::string& reason)
{
    for (size_t e = 0; e < m_results.size(); ++e)
    {
        if (!m_done[e])
        {
            m_results[e].complete = false;
            m_results[e].error = reason;
        }
    }
}

} // namespace ns3
