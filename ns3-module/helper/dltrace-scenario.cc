// DltraceScenario: checks the configuration, then puts the network helper,
// the applications and the link monitor in order, and hands back the records
// that runs/ writes (results, flows.csv, links.csv, the summary).
#include "dltrace-scenario.h"

#include "dltrace-helper.h"

#include "ns3/dltrace-application.h"
#include "ns3/double.h"
#include "ns3/log.h"
#include "ns3/point-to-point-helper.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include "dltrace/models/job.h"
#include "dltrace/runs/atomic_file.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <map>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceScenario");

std::string
DltraceNs3Build()
{
#ifdef DLTRACE_NS3_BUILD
    return DLTRACE_NS3_BUILD;
#else
    return "ns-3 (built without a description)";
#endif
}

DltraceScenario::DltraceScenario()
    : m_wallSeconds(0),
      m_simSeconds(0),
      m_built(false)
{
}

DltraceScenario::~DltraceScenario()
{
    Destroy();
}

void
DltraceScenario::Destroy()
{
    if (!m_built)
    {
        return;
    }
    m_flowMonitor = nullptr;
    m_flowHelper.reset();
    m_apps.clear();
    if (m_network)
    {
        m_network->Dispose(); // lets the queue discs go; the names stay for PrintSummary
    }
    m_jobs.clear();
    Simulator::Destroy();
    m_built = false;
}

bool
DltraceScenario::Setup(const DltraceScenarioConfig& config, std::string* error)
{
    Destroy();
    m_config = config;
    m_specs = config.jobs;
    m_jobs.clear();
    m_apps.clear();
    m_network = nullptr;
    m_links = nullptr;
    if (m_specs.empty())
    {
        *error = "no job to simulate";
        return false;
    }
    // Everything that can be wrong is checked before the network is built.
    m_network = CreateObject<DltraceNetworkHelper>();
    m_network->SetAttribute("CongestionControl", StringValue(config.congestionControl));
    m_network->SetAttribute("SegmentSize", UintegerValue(config.segmentSize));
    m_network->SetAttribute("SndBufSize", UintegerValue(config.sndBufBytes));
    m_network->SetAttribute("RcvBufSize", UintegerValue(config.rcvBufBytes));
    m_network->SetAttribute("MinRto", TimeValue(config.minRto));
    m_network->SetAttribute("Recovery", StringValue(config.recovery));
    m_network->SetAttribute("QueueDisc", StringValue(config.queueDisc));
    m_network->SetAttribute("QueuePackets", UintegerValue(config.queuePackets));
    m_network->SetAttribute("EcnThreshold", UintegerValue(config.ecnThresholdPackets));
    if (!m_network->ConfigureTcp(error))
    {
        return false;
    }
    std::string s = config.scheduler;
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    const std::map<std::string, std::string> schedulers = {{"heap", "ns3::HeapScheduler"},
                                                           {"map", "ns3::MapScheduler"},
                                                           {"list", "ns3::ListScheduler"},
                                                           {"calendar", "ns3::CalendarScheduler"},
                                                           {"priority-queue",
                                                            "ns3::PriorityQueueScheduler"}};
    auto sit = schedulers.find(s);
    if (sit == schedulers.end())
    {
        *error = "unknown scheduler '" + config.scheduler +
                 "' (heap, map, list, calendar, priority-queue)";
        return false;
    }
    ObjectFactory scheduler;
    scheduler.SetTypeId(sit->second);
    Simulator::SetScheduler(scheduler);
    m_built = true; // from here on the simulator holds state to destroy

    uint32_t needed = 0;
    if (!CreateJobs(error) || !PlaceJobs(&needed, error))
    {
        return false;
    }
    if (!DltraceTopologyConfig::Parse(config.topology, needed, &m_topo, error))
    {
        return false;
    }
    if (!m_topo.ToSpec().Fits(needed, error))
    {
        return false;
    }

    m_topology.Build(m_topo);
    if (!m_network->Install(m_topology, error))
    {
        return false;
    }
    for (size_t j = 0; j < m_jobs.size(); ++j)
    {
        std::vector<Ptr<Node>> nodes;
        for (uint32_t h : m_specs[j].hosts)
        {
            nodes.push_back(m_topology.GetHosts().Get(h));
        }
        DltraceHelper helper(m_jobs[j]);
        ApplicationContainer apps = helper.Install(nodes);
        apps.Start(m_specs[j].start);
        m_apps.push_back(apps);
        m_jobs[j]->TraceConnectWithoutContext("JobDone",
                                              MakeCallback(&DltraceScenario::JobDone, this));
    }

    m_links = CreateObject<DltraceLinkMonitor>();
    m_links->SetAttribute("Interval", TimeValue(config.utilInterval));
    for (const auto& link : m_topology.GetLinks())
    {
        m_links->AddLink(link.name, link.reverseName, link.rateBps, link.a, link.b);
    }
    m_links->Start();
    if (config.flowMonitor)
    {
        m_flowHelper = std::make_unique<FlowMonitorHelper>();
        m_flowMonitor = m_flowHelper->Install(m_topology.GetHosts());
    }
    if (config.stopTime.IsStrictlyPositive())
    {
        Simulator::Stop(config.stopTime);
    }
    return true;
}

bool
DltraceScenario::CreateJobs(std::string* error)
{
    uint32_t basePort = 5000;
    for (size_t j = 0; j < m_specs.size(); ++j)
    {
        const DltraceJobSpec& spec = m_specs[j];
        Ptr<DltraceJob> job = CreateObject<DltraceJob>();
        job->SetAttribute("TraceSet", StringValue(spec.trace));
        job->SetAttribute("Index", UintegerValue(uint32_t(j)));
        job->SetAttribute("Algorithm", StringValue(spec.lower.algorithm));
        job->SetAttribute("Channels", UintegerValue(uint32_t(std::max(spec.lower.channels, 1))));
        job->SetAttribute("Iterations", UintegerValue(spec.iterations));
        job->SetAttribute("TimeScale", DoubleValue(spec.timeScale));
        job->SetLowerOptions(spec.lower);
        if (spec.schedule)
        {
            job->SetSchedule(*spec.schedule);
        }
        else if (!job->Load(error))
        {
            return false;
        }
        if (basePort + job->GetEndpointCount() > 65000)
        {
            *error = "too many endpoints across the jobs for one port range";
            return false;
        }
        job->SetAttribute("BasePort", UintegerValue(basePort));
        basePort += job->GetEndpointCount();
        m_jobs.push_back(job);
    }
    return true;
}

// Placement: explicit host lists, else the next hosts no job took yet.
bool
DltraceScenario::PlaceJobs(uint32_t* hostsNeeded, std::string* error)
{
    std::vector<dltrace::models::JobPlacement> placements;
    std::vector<uint32_t> endpoints;
    for (size_t j = 0; j < m_specs.size(); ++j)
    {
        placements.push_back(m_specs[j].ToPlacement());
        endpoints.push_back(m_jobs[j]->GetEndpointCount());
    }
    if (!dltrace::models::PlaceJobs(&placements, endpoints, hostsNeeded, error))
    {
        return false;
    }
    for (size_t j = 0; j < m_specs.size(); ++j)
    {
        m_specs[j].hosts = placements[j].hosts;
    }
    return true;
}

void
DltraceScenario::JobDone(Ptr<DltraceJob> /* job */)
{
    for (const auto& j : m_jobs)
    {
        if (!j->IsDone())
        {
            return;
        }
    }
    Simulator::Stop();
}

void
DltraceScenario::Run()
{
    // Pcap files open here, not in Setup: the caller makes their directory
    // only once Setup has checked everything.
    if (!m_config.pcapPrefix.empty())
    {
        PointToPointHelper p2p;
        for (const auto& link : m_topology.GetLinks())
        {
            p2p.EnablePcap(m_config.pcapPrefix + link.name + ".pcap", link.a, false, true);
        }
    }
    auto t0 = std::chrono::steady_clock::now();
    Simulator::Run();
    m_wallSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    m_simSeconds = Simulator::Now().GetSeconds();
    const std::string reason = "the simulation ended at " + std::to_string(m_simSeconds) +
                               " s before this endpoint finished (stalled, or the stop time)";
    for (auto& apps : m_apps)
    {
        for (uint32_t i = 0; i < apps.GetN(); ++i)
        {
            DynamicCast<DltraceApplication>(apps.Get(i))->Abandon(reason);
        }
    }
    for (auto& job : m_jobs)
    {
        job->MarkUnfinished(reason);
    }
    if (m_flowMonitor)
    {
        m_flowMonitor->CheckForLostPackets();
    }
    FillRecords();
}

uint32_t
DltraceScenario::GetJobCount() const
{
    return uint32_t(m_jobs.size());
}

Ptr<DltraceJob>
DltraceScenario::GetJob(uint32_t j) const
{
    return m_jobs.at(j);
}

Time
DltraceScenario::GetJobDuration(uint32_t j) const
{
    uint64_t end = 0;
    for (const auto& r : m_jobs.at(j)->GetResults())
    {
        end = std::max(end, r.end_ns);
    }
    return NanoSeconds(int64_t(end));
}

bool
DltraceScenario::AllJobsComplete() const
{
    for (const auto& job : m_jobs)
    {
        for (const auto& r : job->GetResults())
        {
            if (!r.complete)
            {
                return false;
            }
        }
    }
    return !m_jobs.empty();
}


uint64_t
DltraceScenario::GetLinkPackets() const
{
    return m_links ? m_links->GetLinkPackets() : 0;
}

uint64_t
DltraceScenario::GetEcnMarks() const
{
    return m_network ? m_network->GetEcnMarks() : 0;
}

uint64_t
DltraceScenario::GetQueueDrops() const
{
    return m_network ? m_network->GetSwitchQueueDrops() : 0;
}

std::string
DltraceScenario::GetQueueDiscDescription() const
{
    return m_network ? m_network->GetQueueDiscDescription() : "";
}

void
DltraceScenario::FillRecords()
{
    dltrace::runs::SimulationRecords& r = m_records;
    r = dltrace::runs::SimulationRecords();
    r.source = "ns3";
    r.header.push_back("# ns-3 simulation: " + m_topo.Describe());
    r.header.push_back("# on " + DltraceNs3Build());
    const std::string cc = m_network ? m_network->GetCongestionControl().GetName() : "ns3::";
    r.header.push_back("# " + cc.substr(5) + ", switch queues " + GetQueueDiscDescription() +
                       ", scheduler " + m_config.scheduler);
    for (size_t j = 0; j < m_jobs.size(); ++j)
    {
        const auto& job = m_jobs[j];
        const uint64_t startNs = uint64_t(m_specs[j].start.GetNanoSeconds());
        r.jobs.push_back({&job->GetSchedule(),
                          job->GetLoadedJob(),
                          job->GetTracePath(),
                          job->GetAlgorithm(),
                          m_specs[j].hosts,
                          startNs,
                          job->GetResults()});
        dltrace::runs::AppendFlowsFromResults(uint32_t(j),
                                              job->GetSchedule(),
                                              job->GetResults(),
                                              startNs,
                                              &r.flows);
    }
    if (m_links)
    {
        for (uint32_t d = 0; d < m_links->GetDirectionCount(); ++d)
        {
            r.links.names.push_back(m_links->GetDirection(d).name);
            r.links.rate_bps.push_back(double(m_links->GetDirection(d).rateBps));
        }
        for (const auto& sample : m_links->GetSamples())
        {
            r.links.time_s.push_back(sample.timeS);
            r.links.bytes.emplace_back(sample.bytes.begin(), sample.bytes.end());
        }
    }
    const uint64_t packets = GetLinkPackets();
    char line[256];
    std::snprintf(line, sizeof line,
                  "network: %" PRIu64 " packets on links, %" PRIu64 " ECN marks, %" PRIu64
                  " drops at switch queues, %" PRIu64 " at host queues, %" PRIu64 " at devices",
                  packets, GetEcnMarks(), GetQueueDrops(),
                  m_network ? m_network->GetHostQueueDrops() : 0,
                  m_links ? m_links->GetDeviceDrops() : 0);
    r.network.push_back(line);
    r.simulated_s = m_simSeconds;
    r.wall_s = m_wallSeconds;
    r.events = packets;
    r.event_unit = "packets";
    r.peak_rss_kb = dltrace::runs::PeakRssKb();
}

const dltrace::runs::SimulationRecords&
DltraceScenario::GetRecords() const
{
    return m_records;
}

bool
DltraceScenario::WriteOutputs(const std::string& dir, std::string* error) const
{
    if (!dltrace::runs::WriteSimulationOutputs(m_records, dir, error))
    {
        return false;
    }
    return !m_flowMonitor || WriteFlowMonitor(dir, error);
}

bool
DltraceScenario::WriteFlowMonitor(const std::string& dir, std::string* error) const
{
    dltrace::runs::AtomicFile xml(dir + "/flowmon.xml");
    if (!xml.Open(error))
    {
        return false;
    }
    m_flowMonitor->SerializeToXmlFile(xml.temporary_path(), true, true);
    return xml.Commit(error);
}

bool
DltraceScenario::HasFlowMonitor() const
{
    return bool(m_flowMonitor);
}

void
DltraceScenario::PrintSummary(std::ostream& os) const
{
    os << dltrace::runs::FormatSimulationSummary(m_records);
}

} // namespace ns3
