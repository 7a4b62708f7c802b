// SPDX-License-Identifier: GPL-2.0-only
// DltraceScenario: checks the configuration, then puts the network helper,
// the applications and the link monitor in order, and hands back the records
// that runs/ writes (results, flows.csv, links.csv, the summary).
#include "dltrace-scenario.h"

#include "dltrace-helper.h"

#include "ns3/dltrace-application.h"
#include "ns3/dltrace-rdma-net-device.h"
#include "ns3/dltrace-timeline.h"
#include "ns3/boolean.h"
#include "ns3/config.h"
#include "ns3/double.h"
#include "ns3/pointer.h"
#include "ns3/log.h"
#include "ns3/point-to-point-helper.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include "dltrace/models/job.h"
#include "dltrace/runs/atomic_file.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>

#include <unistd.h>

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
    m_rdmaMonitor = nullptr;
    if (m_fastForward)
    {
        m_fastForward->Dispose();
        m_fastForward = nullptr;
    }
    m_rdmaNetwork = nullptr;
    m_rdma.reset();
    if (m_network)
    {
        m_network->Dispose(); // lets the queue discs go; the names stay for PrintSummary
    }
    m_jobs.clear();
    if (m_mpi)
    {
        m_mpi->FinishDoneCheck();
    }
    Simulator::Destroy();
    if (m_mpi)
    {
        m_mpi.reset();
        DltracePartitionedRun::Disable(); // MPI_Finalize, once the simulator is gone
    }
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
    m_rdma.reset();
    m_rdmaNetwork = nullptr;
    m_rdmaMonitor = nullptr;
    m_fastForward = nullptr;
    DltraceTimeline::Reset();
    m_partition = DltracePartition();
    m_needsLaunch = false;
    m_partitionLines.clear();
    if (m_specs.empty())
    {
        *error = "no job to simulate";
        return false;
    }
    if (config.fastForward && (config.transport != "rdma" || config.partitions > 1))
    {
        *error = config.transport != "rdma"
                     ? "--fast-forward: only the RDMA fabric skips steady states (--transport rdma)"
                     : "--fast-forward: not with --partitions (one process skips the whole fabric at once)";
        return false;
    }
    const bool partitioned = config.partitions > 1;
    if (partitioned)
    {
        if (config.transport == "uet")
        {
            // Its PDCs draw their load balancing from random streams numbered in creation order,
            // which a partition (creating only its own) would not reproduce.
            *error = "--partitions " + std::to_string(config.partitions) +
                     ": not with --transport uet (its spraying would not match the sequential run); "
                     "partitioned runs take --transport tcp or rdma";
            return false;
        }
        if (!config.pcapPrefix.empty())
        {
            *error = "--pcap does not go with --partitions (each partition would write the same files)";
            return false;
        }
        if (config.pdes != "null-message" && config.pdes != "barrier")
        {
            *error = "--pdes " + config.pdes + ": null-message or barrier";
            return false;
        }
        // Started by mpirun: ns-3's distributed simulator before anything
        // touches the simulator (the scheduler below creates it).
        if (DltracePartitionedRun::LauncherSize() > 0)
        {
            if (!DltracePartitionedRun::Enable(config.pdes, config.partitions, error))
            {
                return false;
            }
            m_mpi = std::make_unique<DltracePartitionedRun>();
            m_built = true; // MPI is up: Destroy() must finalize it
        }
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
    bool priorities = false;
    for (const auto& spec : m_specs)
    {
        priorities = priorities || spec.priority > 0;
    }
    m_network->SetAttribute("Priorities", BooleanValue(priorities));
    if (!m_network->ConfigureTcp(error))
    {
        return false;
    }
    if (!ConfigureRdma(error))
    {
        return false;
    }
    std::string s = config.scheduler;
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    const std::map<std::string, std::string> schedulers = {{"heap", "ns3::HeapScheduler"},
                                                           {"map", "ns3::MapScheduler"},
                                                           {"list", "ns3::ListScheduler"},
                                                           {"calendar", "ns3::CalendarScheduler"},
                                                           {"canonical", "ns3::DltraceCanonicalScheduler"},
                                                           {"priority-queue",
                                                            "ns3::PriorityQueueScheduler"}};
    auto sit = schedulers.find(s);
    if (sit == schedulers.end())
    {
        *error = "unknown scheduler '" + config.scheduler +
                 "' (heap, map, list, calendar, canonical, priority-queue)";
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
    if (!m_topo.Fits(needed, error))
    {
        return false;
    }
    if (config.transport == "tcp" && m_topo.lb != dltrace::models::LoadBalancer::kEcmp &&
        m_topo.lb != dltrace::models::LoadBalancer::kEEcmp)
    {
        *error = std::string("--topo lb=") + dltrace::models::LoadBalancerName(m_topo.lb) +
                 ": the TCP transport routes each connection on one path (moving a flow between paths "
                 "reorders its segments, which TCP takes for loss); use --transport rdma, or lb=ecmp or eecmp";
        return false;
    }
    m_fabric = std::make_shared<const dltrace::models::TopologyGraph>(dltrace::models::BuildTopology(m_topo));
    for (size_t j = 0; j < m_jobs.size(); ++j)
    {
        if (!m_jobs[j]->Place(m_fabric, m_specs[j].hosts, m_specs[j].nic, error))
        {
            *error = "job " + std::to_string(j) + ": " + *error;
            return false;
        }
    }
    if (partitioned)
    {
        if (!DltracePartition::Make(*m_fabric,
                                    config.partitions,
                                    config.partitionMap,
                                    &m_partition,
                                    error))
        {
            return false;
        }
        if (!m_mpi)
        {
            if (!DltracePartitionedRun::Built())
            {
                *error = "--partitions " + std::to_string(config.partitions) + ": " +
                         DltracePartitionedRun::NotBuiltReason();
                return false;
            }
            m_needsLaunch = true; // checked; the caller starts the partitions
            return true;
        }
    }

    if (m_rdma)
    {
        BuildRdma();
    }
    else
    {
        m_topology.Build(m_topo, m_partition.systemId);
        if (!m_network->Install(m_topology, error))
        {
            return false;
        }
    }
    for (size_t j = 0; j < m_jobs.size(); ++j)
    {
        std::vector<Ptr<Node>> nodes;
        for (uint32_t h : m_specs[j].hosts)
        {
            nodes.push_back(m_rdma ? m_rdma->GetHosts().Get(h) : m_topology.GetHosts().Get(h));
        }
        DltraceHelper helper(m_jobs[j]);
        if (m_rdma)
        {
            m_rdmaNetwork->AddJob(uint32_t(j), m_specs[j].hosts, m_specs[j].priority);
            helper.SetAttribute("RdmaNetwork", PointerValue(m_rdmaNetwork));
        }
        ApplicationContainer apps = helper.Install(nodes);
        apps.Start(m_specs[j].GetStart());
        m_apps.push_back(apps);
        if (!m_mpi)
        {
            m_jobs[j]->TraceConnectWithoutContext("JobDone",
                                                  MakeCallback(&DltraceScenario::JobDone, this));
        }
    }
    if (m_mpi)
    {
        // No partition sees the others' endpoints finish: all stop together
        // once all are done (DltracePartitionedRun), checked every millisecond
        // of simulated time, offset from the link samples' times.
        m_mpi->StartDoneCheck(MicroSeconds(500),
                              MicroSeconds(1000),
                              [this] { return LocalEndpointsDone(); });
    }

    m_links = CreateObject<DltraceLinkMonitor>();
    m_links->SetAttribute("Interval", TimeValue(config.utilInterval));
    if (m_rdma)
    {
        for (const auto& link : m_rdma->GetLinks())
        {
            m_links->AddLink(link.name, link.reverseName, link.rateBps, link.a, link.b);
        }
        m_rdmaMonitor = CreateObject<DltraceRdmaMonitor>();
        m_rdmaMonitor->SetAttribute("Interval", TimeValue(config.utilInterval));
        m_rdmaMonitor->Watch(m_rdma.get(), m_rdmaNetwork);
        m_rdmaMonitor->Start();
        if (config.fastForward)
        {
            Time lastStart;
            for (const auto& spec : m_specs)
            {
                lastStart = std::max(lastStart, spec.GetStart());
            }
            m_fastForward = CreateObject<DltraceRdmaFastForward>();
            if (config.fastForwardSets)
            {
                m_fastForward->SetAttribute("PerSet", BooleanValue(true));
            }
            m_fastForward->Watch(m_rdma.get(), m_rdmaNetwork, m_links);
            m_fastForward->Start(lastStart);
        }
    }
    else
    {
        for (const auto& link : m_topology.GetLinks())
        {
            m_links->AddLink(link.name, link.reverseName, link.rateBps, link.a, link.b);
        }
    }
    m_links->Start();
    if (config.progress)
    {
        PrintPlan();
        m_links->SetPacketHook(8192, [this] { PrintProgress(); });
    }
    if (config.flowMonitor && !m_rdma)
    {
        m_flowHelper = std::make_unique<FlowMonitorHelper>();
        m_flowMonitor = m_flowHelper->Install(m_topology.GetHosts());
    }
    if (config.stopTime.IsStrictlyPositive() && m_fastForward)
    {
        DltraceTimeline::Schedule(config.stopTime, [] { Simulator::Stop(); });
    }
    else if (config.stopTime.IsStrictlyPositive())
    {
        Simulator::Stop(config.stopTime);
    }
    return true;
}

// --transport rdma: the congestion control and its --cc-param settings are
// checked (and set as attribute defaults) before anything is built.
bool
DltraceScenario::ConfigureRdma(std::string* error)
{
    if (m_config.transport == "tcp")
    {
        return true;
    }
    if (m_config.transport == "uet")
    {
        return ConfigureUet(error);
    }
    if (m_config.transport != "rdma")
    {
        *error = "unknown transport '" + m_config.transport + "' (tcp, rdma, uet)";
        return false;
    }
    TypeId cc;
    if (!DltraceRdmaHelper::LookupCongestionControl(m_config.rdmaCongestionControl, &cc))
    {
        *error = "unknown RDMA congestion control '" + m_config.rdmaCongestionControl + "' (" +
                 DltraceRdmaHelper::CongestionControlNames() + ")";
        return false;
    }
    for (const std::string& param : m_config.ccParams)
    {
        const size_t eq = param.find('=');
        const std::string name = param.substr(0, eq);
        TypeId::AttributeInformation info;
        if (eq == std::string::npos || name.empty() || !cc.LookupAttributeByName(name, &info))
        {
            std::string names;
            for (TypeId t = cc; ; t = t.GetParent())
            {
                for (uint32_t a = 0; a < t.GetAttributeN(); ++a)
                {
                    names += (names.empty() ? "" : ", ") + t.GetAttribute(a).name;
                }
                if (t == DltraceRdmaCongestionControl::GetTypeId())
                {
                    break;
                }
            }
            *error = "--cc-param '" + param + "': " + m_config.rdmaCongestionControl +
                     " has no such parameter (name=value; " + names + ")";
            return false;
        }
        const StringValue value(param.substr(eq + 1));
        if (!Config::SetDefaultFailSafe(cc.GetName() + "::" + name, value) &&
            !Config::SetDefaultFailSafe("ns3::DltraceRdmaCongestionControl::" + name, value))
        {
            *error = "--cc-param '" + param + "': bad value for " + name;
            return false;
        }
    }
    const std::string& egress = m_config.rdmaEgress;
    if (egress == "strict")
    {
        Config::SetDefault("ns3::DltraceRdmaNetDevice::Scheduler", StringValue("strict"));
    }
    else if (egress == "wrr" || egress.rfind("wrr:", 0) == 0)
    {
        Config::SetDefault("ns3::DltraceRdmaNetDevice::Scheduler", StringValue("wrr"));
        const std::string weights = egress.size() > 4 ? egress.substr(4) : "1,1,1,1,1,1,1,1";
        std::array<uint32_t, DltraceRdmaNetDevice::kClasses> parsed;
        if (!DltraceRdmaNetDevice::ParseWeights(weights, &parsed))
        {
            *error = "--rdma-egress '" + egress + "': weights are up to 8 comma-separated numbers 1..1000";
            return false;
        }
        Config::SetDefault("ns3::DltraceRdmaNetDevice::WrrWeights", StringValue(weights));
    }
    else
    {
        *error = "--rdma-egress '" + egress + "': strict or wrr[:W0,...,W7]";
        return false;
    }
    Config::SetDefault("ns3::DltraceRdmaSwitchMmu::PfcEnabled", BooleanValue(m_config.pfc));
    Config::SetDefault("ns3::DltraceRdmaNic::OutOfOrder", BooleanValue(m_config.outOfOrder));
    m_rdma = std::make_unique<DltraceRdmaHelper>();
    m_rdma->SetCongestionControl(m_config.rdmaCongestionControl);
    return true;
}

bool
DltraceScenario::ConfigureUet(std::string* error)
{
    DltraceRdmaHelper::UetConfig uet;
    std::string cc = m_config.rdmaCongestionControl;
    if (cc == "nscc" || cc == "rccc")
    {
        uet.rccc = cc == "rccc";
    }
    else
    {
        *error = "--cc " + cc + ": --transport uet runs nscc or rccc";
        return false;
    }
    uint32_t frame = 4150; // uet-htsim's default -mtu
    for (const std::string& param : m_config.ccParams)
    {
        const size_t eq = param.find('=');
        const std::string name = param.substr(0, eq);
        const std::string value = eq == std::string::npos ? "" : param.substr(eq + 1);
        auto bad = [&](const std::string& why) {
            *error = "--cc-param '" + param + "': " + why;
            return false;
        };
        double x = 0;
        char* end = nullptr;
        if (!value.empty())
        {
            x = std::strtod(value.c_str(), &end);
        }
        const bool number = !value.empty() && end && *end == '\0' && std::isfinite(x);
        if (eq == std::string::npos || value.empty())
        {
            return bad("not name=value (lb, entropies, mtu, queue, queue-packets, rtt-us, target-delay-us, "
                       "min-rto-us, qa-gate, cwnd)");
        }
        if (name == "lb")
        {
            DltraceUetLoadBalancer::Kind kind;
            if (!DltraceUetLoadBalancer::Parse(value, &kind))
            {
                return bad("unknown load balancer (" + DltraceUetLoadBalancer::Names() + ")");
            }
            Config::SetDefault("ns3::DltraceUetPdc::LoadBalancer", StringValue(value));
        }
        else if (name == "entropies")
        {
            if (!number || x < 1 || x > 65536 || x != std::floor(x))
            {
                return bad("entropies is a whole number of entropy values, 1 to 65536");
            }
            Config::SetDefault("ns3::DltraceUetPdc::Entropies", UintegerValue(uint32_t(x)));
        }
        else if (name == "mtu")
        {
            if (!number || x <= DltraceRdmaHeader::kUetOverhead || x > 9000 || x != std::floor(x))
            {
                return bad("mtu is the full data frame in bytes, 65 to 9000 (64 of them headers)");
            }
            frame = uint32_t(x);
        }
        else if (name == "queue")
        {
            if (!number || x <= 0 || x > 1000)
            {
                return bad("queue is the switch data queue in BDPs, above 0 and at most 1000");
            }
            uet.queueBdp = x;
        }
        else if (name == "queue-packets")
        {
            if (!number || x < 1 || x > 1e6 || x != std::floor(x))
            {
                return bad("queue-packets is a whole number of frames, 1 to 1000000");
            }
            uet.queuePackets = uint32_t(x);
        }
        else if (name == "rtt-us" || name == "target-delay-us" || name == "min-rto-us")
        {
            if (!number || x <= 0 || x > 1e6)
            {
                return bad(name + " is a time in microseconds, above 0");
            }
            const Time t = NanoSeconds(int64_t(std::llround(x * 1000)));
            if (name == "rtt-us")
                uet.networkRtt = t;
            else if (name == "target-delay-us")
                Config::SetDefault("ns3::DltraceUetPdc::TargetDelay", TimeValue(t));
            else
                Config::SetDefault("ns3::DltraceUetPdc::MinRto", TimeValue(t));
        }
        else if (name == "qa-gate" || name == "cwnd")
        {
            if (!number || x < 0 || x > (name == "qa-gate" ? 16 : 1e6) || x != std::floor(x))
            {
                return bad(name + " is a whole number (qa-gate 0 to 16; cwnd in packets, 0: 1.5 BDP)");
            }
            Config::SetDefault(name == "qa-gate" ? "ns3::DltraceUetPdc::QaGate" : "ns3::DltraceUetPdc::InitialWindow",
                               UintegerValue(uint32_t(x)));
        }
        else
        {
            return bad("uet has no such parameter (lb, entropies, mtu, queue, queue-packets, rtt-us, "
                       "target-delay-us, min-rto-us, qa-gate, cwnd)");
        }
    }
    Config::SetDefault("ns3::DltraceRdmaNic::Mtu", UintegerValue(frame - DltraceRdmaHeader::kUetOverhead));
    Config::SetDefault("ns3::DltraceRdmaSwitchMmu::PfcEnabled", BooleanValue(false));
    m_rdma = std::make_unique<DltraceRdmaHelper>();
    m_rdma->SetUet(uet);
    return true;
}

void
DltraceScenario::BuildRdma()
{
    // Several traffic classes: each port reserves PFC headroom for each.
    std::set<uint32_t> classes;
    for (const auto& spec : m_specs)
    {
        classes.insert(spec.priority);
    }
    Config::SetDefault("ns3::DltraceRdmaSwitchMmu::LosslessClasses",
                       UintegerValue(uint32_t(classes.size())));
    m_rdma->Build(*m_fabric, m_partition.systemId);
    m_rdmaNetwork = CreateObject<DltraceRdmaNetwork>();
    m_rdmaNetwork->SetFabric(m_rdma.get());
    if (m_mpi)
    {
        // Frames cross the cut as they are; a data packet also names its message.
        m_rdmaNetwork->EnablePartitions(m_partition.systemId, DltracePartitionedRun::Rank());
        for (const auto& channel : m_rdma->GetRemoteChannels())
        {
            channel->SetCrossingCallbacks(MakeCallback(&DltraceRdmaNetwork::TagCrossing, m_rdmaNetwork),
                                          MakeCallback(&DltraceRdmaNetwork::NoteCrossing, m_rdmaNetwork));
        }
    }
}

bool
DltraceScenario::CreateJobs(std::string* error)
{
    uint32_t basePort = 0; // the first job's BasePort default; each next range follows
    for (size_t j = 0; j < m_specs.size(); ++j)
    {
        const DltraceJobSpec& spec = m_specs[j];
        Ptr<DltraceJob> job = CreateObject<DltraceJob>();
        if (j == 0)
        {
            UintegerValue first;
            job->GetAttribute("BasePort", first);
            basePort = uint32_t(first.Get());
        }
        job->SetAttribute("TraceSet", StringValue(spec.trace));
        job->SetAttribute("Index", UintegerValue(uint32_t(j)));
        job->SetAttribute("Priority", UintegerValue(spec.priority));
        job->SetAttribute("Algorithm", StringValue(spec.lower.algorithm));
        job->SetAttribute("Channels", UintegerValue(uint32_t(std::max(spec.lower.channels, 1))));
        job->SetAttribute("Iterations", UintegerValue(uint32_t(std::max(spec.iterations, 0))));
        job->SetAttribute("TimeScale", DoubleValue(spec.time_scale));
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
    std::vector<std::vector<int32_t>> groups(m_specs.size());
    for (size_t j = 0; j < m_specs.size(); ++j)
    {
        // hosts=trace: the endpoints a trace host recorded share a host.
        if (!dltrace::models::TraceHostGroups(m_specs[j], m_jobs[j]->GetLoadedJob(), j, &groups[j], error))
        {
            return false;
        }
        placements.push_back(m_specs[j]);
        endpoints.push_back(m_jobs[j]->GetEndpointCount());
    }
    // On a fabric of multi-GPU hosts each endpoint runs on a GPU of its own
    // (a node of its own); several endpoints share a node only with one GPU per host.
    uint32_t fabricGpus = 1;
    if (!dltrace::models::TopologyGpusPerHost(m_config.topology, &fabricGpus, error))
    {
        return false;
    }
    if (!dltrace::models::PlaceJobs(&placements, endpoints, hostsNeeded, error, &groups, fabricGpus))
    {
        return false;
    }
    // The endpoints of one job talk over ns-3 TCP connections, and one to the
    // node's own address is delivered at once, before the connecting socket
    // has left CLOSED: ns-3 drops the answer, and the connection waits out
    // the 3 s SYN timeout or never comes up. Refused rather than run wrong.
    for (size_t j = 0; j < m_specs.size(); ++j)
    {
        std::map<uint32_t, size_t> endpointOn;
        for (size_t e = 0; e < placements[j].hosts.size(); ++e)
        {
            const auto [it, added] = endpointOn.emplace(placements[j].hosts[e], e);
            if (!added)
            {
                *error = "job " + std::to_string(j) + " (" + m_specs[j].trace + "): endpoints " +
                         std::to_string(it->second) + " and " + std::to_string(e) + " on host " +
                         std::to_string(it->first) +
                         ": the ns-3 simulator runs one endpoint of a job per host of one GPU (use "
                         "--engine flow, give each endpoint its own host, or a fabric with several "
                         "GPUs per host, e.g. --topo rail-optimized:gpus=8)";
                return false;
            }
        }
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
    m_runStart = t0;
    m_lastProgress = t0;
    m_lastProgressPackets = 0;
    m_progressTotals = {0, 0};
    Simulator::Run();
    m_wallSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    m_simSeconds = DltraceTimeline::Now().GetSeconds();
    if (m_fastForward)
    {
        m_fastForward->Finish(); // (a stop time can end the run during a hold)
    }
    if (m_links)
    {
        m_links->Finish();
    }
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

namespace
{

// Resident memory now, in MiB (/proc/self/statm; 0 where there is none).
double
CurrentRssMib()
{
    long pages = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r"))
    {
        long size = 0;
        if (std::fscanf(f, "%ld %ld", &size, &pages) != 2)
        {
            pages = 0;
        }
        std::fclose(f);
    }
    return double(pages) * double(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

// Partitioned runs: every partition prints its own lines, named.
std::string
ProgressPrefix(bool partitioned)
{
    return partitioned ? "dltrace simulate (ns3, partition " +
                             std::to_string(DltracePartitionedRun::Rank()) + "): "
                       : "dltrace simulate (ns3): ";
}

} // namespace

void
DltraceScenario::PrintPlan() const
{
    const dltrace::models::TopologyGraph& g = *m_fabric;
    uint32_t nvlink = 0;
    uint32_t nics = 0;
    for (const auto& l : g.links)
    {
        nvlink += l.scale_up;
        nics += l.host_link;
    }
    uint64_t endpoints = 0;
    uint64_t messages = 0;
    uint64_t bytes = 0;
    uint64_t local = 0;
    for (const auto& job : m_jobs)
    {
        const auto& schedule = job->GetSchedule();
        endpoints += schedule.ranks.size();
        for (const auto& rank : schedule.ranks)
        {
            for (const auto& st : rank.steps)
            {
                if (st.type == dltrace::models::StepType::kSend)
                {
                    ++messages;
                    bytes += st.bytes;
                    local += st.local;
                }
            }
        }
    }
    std::fprintf(stderr,
                 "%s%" PRIu64 " endpoints of %zu job%s on %u host%s x %u GPU%s (%u GPU nodes), %zu "
                 "switches, %zu links (%u NVLink, %u NIC ports); %" PRIu64 " messages (%" PRIu64
                 " on one node, timed by the model), %.3f GB to move over %s; memory %.0f MiB\n",
                 ProgressPrefix(bool(m_mpi)).c_str(),
                 endpoints,
                 m_jobs.size(),
                 m_jobs.size() == 1 ? "" : "s",
                 g.Machines(),
                 g.Machines() == 1 ? "" : "s",
                 g.gpus_per_host,
                 g.gpus_per_host == 1 ? "" : "s",
                 g.hosts,
                 g.names.size() - g.hosts,
                 g.links.size(),
                 nvlink,
                 nics,
                 messages,
                 local,
                 double(bytes) * 1e-9,
                 m_rdma ? (m_rdma->IsUet() ? "UET" : "RDMA") : "TCP",
                 CurrentRssMib());
}

void
DltraceScenario::PrintProgress()
{
    const auto now = std::chrono::steady_clock::now();
    if (now - m_lastProgress < std::chrono::seconds(2))
    {
        return;
    }
    const double dt = std::chrono::duration<double>(now - m_lastProgress).count();
    m_lastProgress = now;
    uint64_t steps = 0;
    uint64_t bytes = 0;
    uint64_t endpoints = 0;
    uint64_t finished = 0;
    const bool first = m_progressTotals.first == 0;
    for (size_t j = 0; j < m_jobs.size(); ++j)
    {
        for (uint32_t i = 0; i < m_apps[j].GetN(); ++i)
        {
            Ptr<DltraceApplication> app = DynamicCast<DltraceApplication>(m_apps[j].Get(i));
            const auto done = app->GetStepsAndBytesDone();
            steps += done.first;
            bytes += done.second;
            // Totals of this process's endpoints (a partition runs its own), counted once.
            if (first)
            {
                for (const auto& st : m_jobs[j]->GetSchedule().ranks[app->GetEndpoint()].steps)
                {
                    ++m_progressTotals.first;
                    m_progressTotals.second +=
                        st.type == dltrace::models::StepType::kRecv ? st.bytes : 0;
                }
            }
        }
        endpoints += m_apps[j].GetN();
        finished += m_jobs[j]->GetEndpointsDone();
    }
    const uint64_t stepsTotal = m_progressTotals.first;
    const uint64_t bytesTotal = m_progressTotals.second;
    const uint64_t packets = GetLinkPackets();
    std::fprintf(stderr,
                 "%s%.3f ms simulated, %" PRIu64 " packets (%.0f per wall s), %" PRIu64 " of %" PRIu64
                 " steps, %.3f of %.3f GB received, %" PRIu64 " of %" PRIu64
                 " endpoints finished, memory %.0f MiB, %.0f s wall\n",
                 ProgressPrefix(bool(m_mpi)).c_str(),
                 DltraceTimeline::Now().GetSeconds() * 1e3,
                 packets,
                 double(packets - m_lastProgressPackets) / dt,
                 steps,
                 stepsTotal,
                 double(bytes) * 1e-9,
                 double(bytesTotal) * 1e-9,
                 std::min(finished, endpoints),
                 endpoints,
                 CurrentRssMib(),
                 std::chrono::duration<double>(now - m_runStart).count());
    m_lastProgressPackets = packets;
}

bool
DltraceScenario::LocalEndpointsDone() const
{
    for (size_t j = 0; j < m_jobs.size(); ++j)
    {
        // Only this partition's endpoints run here, so only they can be done.
        if (m_jobs[j]->GetEndpointsDone() < m_apps[j].GetN())
        {
            return false;
        }
    }
    return true;
}

bool
DltraceScenario::NeedsLaunch() const
{
    return m_needsLaunch;
}

uint32_t
DltraceScenario::GetPartitionIndex() const
{
    return m_mpi ? DltracePartitionedRun::Rank() : 0;
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
    if (m_rdmaMonitor)
    {
        return m_rdmaMonitor->GetEcnMarks();
    }
    return m_network ? m_network->GetEcnMarks() : 0;
}

uint64_t
DltraceScenario::GetQueueDrops() const
{
    if (m_rdmaMonitor)
    {
        return m_rdmaMonitor->GetDrops();
    }
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
    if (m_mpi)
    {
        r.header.push_back("# " + m_partition.Describe() + ", " + DltracePartitionedRun::Algorithm());
    }
    const std::string cc = m_network ? m_network->GetCongestionControl().GetName() : "ns3::";
    if (m_rdma)
    {
        r.header.push_back(std::string(m_rdma->IsUet() ? "# UET (Ultra Ethernet: spraying, trimming, no PFC)"
                                                        : "# RDMA (RoCEv2, PFC)") +
                           ", congestion control " + m_config.rdmaCongestionControl + ", scheduler " +
                           m_config.scheduler);
    }
    else
    {
        r.header.push_back("# " + cc.substr(5) + ", switch queues " + GetQueueDiscDescription() +
                           ", scheduler " + m_config.scheduler);
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
        // Directions in AddLink order, which is the graph's link order: [2i] a to b.
        for (uint32_t d = 0; d < m_links->GetDirectionCount(); ++d)
        {
            r.link_bytes.push_back(double(m_links->GetDirection(d).bytes));
        }
    }
    r.fabric = m_fabric;
    // Packets on links, ECN marks, drops at switch queues, host queues, devices.
    uint64_t counters[5] = {GetLinkPackets(),
                            GetEcnMarks(),
                            GetQueueDrops(),
                            m_network ? m_network->GetHostQueueDrops() : 0,
                            m_links ? m_links->GetDeviceDrops() : 0};
    if (m_mpi)
    {
        MergePartitions(counters, 5);
        if (DltracePartitionedRun::Rank() != 0)
        {
            // Only partition 0 has every endpoint's steps to pair into flows.
            r.wall_s = m_wallSeconds;
            return;
        }
    }
    for (size_t j = 0; j < m_jobs.size(); ++j)
    {
        const auto& job = m_jobs[j];
        const uint64_t startNs = m_specs[j].start_ns;
        const dltrace::models::Job* loaded = job->GetLoadedJob();
        r.jobs.push_back({&job->GetSchedule(),
                          dltrace::runs::RecordedRun(job->GetSchedule(), loaded ? &loaded->merged : nullptr),
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
    char line[256];
    std::snprintf(line, sizeof line,
                  "network: %" PRIu64 " packets on links, %" PRIu64 " ECN marks, %" PRIu64
                  " drops at switch queues, %" PRIu64 " at host queues, %" PRIu64 " at devices",
                  counters[0], counters[1], counters[2], counters[3], counters[4]);
    r.network.push_back(line);
    r.network.insert(r.network.end(), m_partitionLines.begin(), m_partitionLines.end());
    if (m_rdmaMonitor)
    {
        std::ostringstream rdma;
        m_rdmaMonitor->PrintSummary(rdma);
        std::istringstream lines(rdma.str());
        for (std::string l; std::getline(lines, l);)
        {
            r.network.push_back(l);
        }
    }
    if (m_fastForward)
    {
        const double skipped = m_fastForward->GetSkippedTime().GetSeconds();
        std::snprintf(line,
                      sizeof line,
                      "fast-forward: %" PRIu64 " skips, %.6f s of %.6f s simulated (%.1f%%), %" PRIu64
                      " holds of a steady set (%.6f s held in all), %" PRIu64 " data packets and %" PRIu64
                      " link transmissions credited instead of simulated",
                      m_fastForward->GetSkips(),
                      skipped,
                      m_simSeconds,
                      m_simSeconds > 0 ? 100 * skipped / m_simSeconds : 0.0,
                      m_fastForward->GetHolds(),
                      m_fastForward->GetHeldTime().GetSeconds(),
                      m_fastForward->GetSkippedPackets(),
                      m_fastForward->GetSkippedLinkPackets());
        r.network.push_back(line);
    }
    r.simulated_s = m_simSeconds;
    r.wall_s = m_wallSeconds;
    r.events = counters[0];
    r.event_unit = "packets";
    r.peak_rss_kb = dltrace::runs::PeakRssKb();
}

namespace
{

// Flat little-endian-as-stored bytes for the partitions' gather (one build,
// one machine architecture across the MPI processes).
class PartWriter
{
  public:
    template <typename T>
    void Put(T v)
    {
        m_bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
    void Put(const std::string& s)
    {
        Put(uint64_t(s.size()));
        m_bytes += s;
    }
    void Put(const std::vector<dltrace::executor::TimeRange>& v)
    {
        Put(uint64_t(v.size()));
        for (const auto& t : v)
        {
            Put(t.start_ns);
            Put(t.end_ns);
            Put(uint8_t(t.valid));
        }
    }
    void Put(const std::vector<uint64_t>& v)
    {
        Put(uint64_t(v.size()));
        for (uint64_t x : v)
        {
            Put(x);
        }
    }
    template <typename T>
    void PutPods(const std::vector<T>& v)
    {
        static_assert(std::is_trivially_copyable_v<T>);
        Put(uint64_t(v.size()));
        m_bytes.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
    }
    const std::string& Bytes() const
    {
        return m_bytes;
    }

  private:
    std::string m_bytes;
};

class PartReader
{
  public:
    explicit PartReader(const std::string& bytes)
        : m_bytes(bytes)
    {
    }
    template <typename T>
    void Get(T* v)
    {
        NS_ABORT_MSG_IF(m_at + sizeof(T) > m_bytes.size(), "DltraceScenario: short partition record");
        std::memcpy(v, m_bytes.data() + m_at, sizeof(T));
        m_at += sizeof(T);
    }
    void Get(std::string* s)
    {
        uint64_t n = 0;
        Get(&n);
        NS_ABORT_MSG_IF(m_at + n > m_bytes.size(), "DltraceScenario: short partition record");
        s->assign(m_bytes, m_at, n);
        m_at += n;
    }
    void Get(std::vector<dltrace::executor::TimeRange>* v)
    {
        uint64_t n = 0;
        Get(&n);
        v->resize(n);
        for (auto& t : *v)
        {
            uint8_t valid = 0;
            Get(&t.start_ns);
            Get(&t.end_ns);
            Get(&valid);
            t.valid = valid != 0;
        }
    }
    void Get(std::vector<uint64_t>* v)
    {
        uint64_t n = 0;
        Get(&n);
        v->resize(n);
        for (auto& x : *v)
        {
            Get(&x);
        }
    }
    template <typename T>
    void GetPods(std::vector<T>* v)
    {
        static_assert(std::is_trivially_copyable_v<T>);
        uint64_t n = 0;
        Get(&n);
        NS_ABORT_MSG_IF(n > (m_bytes.size() - m_at) / sizeof(T), "DltraceScenario: short partition record");
        v->resize(n);
        std::memcpy(v->data(), m_bytes.data() + m_at, n * sizeof(T));
        m_at += n * sizeof(T);
    }

  private:
    const std::string& m_bytes;
    size_t m_at = 0;
};

void
PutResult(PartWriter* w, const dltrace::executor::RankResult& r)
{
    w->Put(r.endpoint);
    w->Put(uint8_t(r.complete));
    w->Put(r.error);
    for (uint64_t x : {r.clock_origin_ns, r.end_ns, r.steps_done, r.steps_total, r.bytes_sent,
                       r.bytes_received, r.bytes_scheduled_send, r.bytes_scheduled_recv,
                       r.bytes_local_sent, r.bytes_local_received, r.bytes_reduced})
    {
        w->Put(x);
    }
    w->Put(r.steps);
    w->PutPods(r.op_ids);
    w->Put(r.ops);
    w->Put(r.op_sent);
    w->Put(r.op_received);
    w->Put(r.iterations);
}

void
GetResult(PartReader* in, dltrace::executor::RankResult* r)
{
    uint8_t complete = 0;
    in->Get(&r->endpoint);
    in->Get(&complete);
    r->complete = complete != 0;
    in->Get(&r->error);
    for (uint64_t* x : {&r->clock_origin_ns, &r->end_ns, &r->steps_done, &r->steps_total, &r->bytes_sent,
                        &r->bytes_received, &r->bytes_scheduled_send, &r->bytes_scheduled_recv,
                        &r->bytes_local_sent, &r->bytes_local_received, &r->bytes_reduced})
    {
        in->Get(x);
    }
    in->Get(&r->steps);
    in->GetPods(&r->op_ids);
    in->Get(&r->ops);
    in->Get(&r->op_sent);
    in->Get(&r->op_received);
    in->Get(&r->iterations);
}

void
PutRdmaReport(PartWriter* w, const DltraceRdmaMonitor::Report& r)
{
    w->PutPods(r.pfc);
    w->Put(r.peak);
    w->PutPods(r.sampleTimes);
    w->Put(uint64_t(r.samples.size()));
    for (const auto& sample : r.samples)
    {
        w->Put(sample);
    }
    w->Put(r.drops);
    w->Put(r.ecnMarks);
    w->PutPods(r.qps);
    w->PutPods(r.messages);
    w->Put(uint64_t(r.remote.size()));
    for (const auto& d : r.remote)
    {
        w->Put(d.job);
        w->Put(d.src);
        w->Put(d.dst);
        w->Put(d.channel);
        w->Put(d.delivered.GetTimeStep());
    }
}

void
GetRdmaReport(PartReader* in, DltraceRdmaMonitor::Report* r)
{
    in->GetPods(&r->pfc);
    in->Get(&r->peak);
    in->GetPods(&r->sampleTimes);
    uint64_t n = 0;
    in->Get(&n);
    r->samples.resize(n);
    for (auto& sample : r->samples)
    {
        in->Get(&sample);
    }
    in->Get(&r->drops);
    in->Get(&r->ecnMarks);
    in->GetPods(&r->qps);
    in->GetPods(&r->messages);
    in->Get(&n);
    r->remote.resize(n);
    for (auto& d : r->remote)
    {
        int64_t at = 0;
        in->Get(&d.job);
        in->Get(&d.src);
        in->Get(&d.dst);
        in->Get(&d.channel);
        in->Get(&at);
        d.delivered = TimeStep(at);
    }
}

} // namespace

// Each partition sends partition 0 its endpoints' results, its counters and
// link samples (a link direction counts on the partition whose device sends,
// zero elsewhere, so sums are the totals), and one line about itself.
void
DltraceScenario::MergePartitions(uint64_t* counters, size_t n)
{
    const uint32_t self = DltracePartitionedRun::Rank();
    PartWriter w;
    uint32_t endpoints = 0;
    for (const auto& apps : m_apps)
    {
        endpoints += apps.GetN();
    }
    char line[256];
    std::snprintf(line, sizeof line,
                  "partition %u: %u hosts, %u endpoints, %" PRIu64 " packets sent, %.3f s wall, %" PRIu64
                  " stop checks",
                  self, m_partition.HostsIn(self), endpoints, counters[0], m_wallSeconds,
                  m_mpi->GetChecks());
    std::string text = line;
    // The RDMA fabric's counters, files and summary (DltraceRdmaMonitor::Merge in partition 0).
    DltraceRdmaMonitor::Report rdmaReport;
    if (m_rdmaMonitor)
    {
        rdmaReport = m_rdmaMonitor->Collect();
        // PFC frames this partition's ports sent and received (a frame across the cut counts on both sides).
        uint64_t sent = 0, received = 0;
        for (const auto& k : rdmaReport.pfc)
        {
            sent += k.pausesSent;
            received += k.pausesReceived;
        }
        text += ", " + std::to_string(sent) + " PFC pause frames sent, " + std::to_string(received) + " received";
    }
    w.Put(text);
    for (size_t i = 0; i < n; ++i)
    {
        w.Put(counters[i]);
    }
    for (size_t j = 0; j < m_jobs.size(); ++j)
    {
        const auto& results = m_jobs[j]->GetResults();
        for (size_t e = 0; e < results.size(); ++e)
        {
            if (m_partition.systemId[m_specs[j].hosts[e]] == self)
            {
                w.Put(uint32_t(j));
                PutResult(&w, results[e]);
            }
        }
    }
    w.Put(UINT32_MAX);
    w.Put(uint64_t(m_records.link_bytes.size()));
    for (double b : m_records.link_bytes)
    {
        w.Put(b);
    }
    const auto& samples = m_records.links.bytes;
    w.Put(uint64_t(samples.size()));
    for (const auto& sample : samples)
    {
        for (double b : sample)
        {
            w.Put(b);
        }
    }
    if (m_rdmaMonitor)
    {
        PutRdmaReport(&w, rdmaReport);
    }
    const std::vector<std::string> parts = DltracePartitionedRun::GatherToFirst(w.Bytes());
    if (self != 0)
    {
        return;
    }
    std::vector<DltraceRdmaMonitor::Report> rdma(parts.size());
    auto& links = m_records.links;
    for (size_t p = 0; p < parts.size(); ++p)
    {
        PartReader in(parts[p]);
        std::string text;
        in.Get(&text);
        m_partitionLines.push_back(text);
        uint64_t theirs[8] = {0};
        for (size_t i = 0; i < n && i < 8; ++i)
        {
            in.Get(&theirs[i]);
            if (p != 0)
            {
                counters[i] += theirs[i];
            }
        }
        for (uint32_t j = 0;;)
        {
            in.Get(&j);
            if (j == UINT32_MAX)
            {
                break;
            }
            dltrace::executor::RankResult result;
            GetResult(&in, &result);
            if (p != 0)
            {
                m_jobs.at(j)->NotifyEndpointDone(result);
            }
        }
        uint64_t directions = 0;
        in.Get(&directions);
        for (uint64_t d = 0; d < directions; ++d)
        {
            double b = 0;
            in.Get(&b);
            if (p != 0 && d < m_records.link_bytes.size())
            {
                m_records.link_bytes[d] += b; // each direction counts where its sender runs
            }
        }
        uint64_t count = 0;
        in.Get(&count);
        // Every partition samples at the same times; a partition's last
        // sample may fall after another's stop: keep the common ones.
        if (count < links.bytes.size())
        {
            links.bytes.resize(count);
            links.time_s.resize(count);
        }
        for (uint64_t k = 0; k < count; ++k)
        {
            for (size_t d = 0; d < links.names.size(); ++d)
            {
                double b = 0;
                in.Get(&b);
                if (p != 0 && k < links.bytes.size())
                {
                    links.bytes[k][d] += b;
                }
            }
        }
        if (m_rdmaMonitor)
        {
            GetRdmaReport(&in, &rdma[p]);
        }
    }
    if (m_rdmaMonitor)
    {
        m_rdmaMonitor->Merge(rdma);
    }
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
    // A partition's flow monitor sees its own nodes only: its own file.
    const std::string flowmon =
        m_mpi ? "flowmon.p" + std::to_string(GetPartitionIndex()) + ".xml" : "flowmon.xml";
    return (!m_flowMonitor || WriteFlowMonitor(dir, error, flowmon)) && WriteRdmaOutputs(dir, error);
}

bool
DltraceScenario::WriteFlowMonitor(const std::string& dir, std::string* error, const std::string& name) const
{
    dltrace::runs::AtomicFile xml(dir + "/" + name);
    if (!xml.Open(error))
    {
        return false;
    }
    m_flowMonitor->SerializeToXmlFile(xml.temporary_path(), true, true);
    return xml.Commit(error);
}

bool
DltraceScenario::WriteRdmaOutputs(const std::string& dir, std::string* error) const
{
    return !m_rdmaMonitor || m_rdmaMonitor->Write(dir, error);
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
