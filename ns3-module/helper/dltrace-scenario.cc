// DltraceScenario: checks the configuration, builds the network (topology,
// stack, ECMP routing, queue discs, addresses), places the jobs, runs, and
// writes results in the socket replayer's format plus network outputs.
#include "dltrace-scenario.h"

#include "dltrace-helper.h"

#include "ns3/boolean.h"
#include "ns3/config.h"
#include "ns3/dltrace-application.h"
#include "ns3/dltrace-flow-ecmp-routing.h"
#include "ns3/double.h"
#include "ns3/internet-stack-helper.h"
#include "ns3/ipv4-address-helper.h"
#include "ns3/ipv4-global-routing-helper.h"
#include "ns3/ipv4-list-routing-helper.h"
#include "ns3/ipv4-static-routing-helper.h"
#include "ns3/log.h"
#include "ns3/point-to-point-helper.h"
#include "ns3/pointer.h"
#include "ns3/queue-disc.h"
#include "ns3/red-queue-disc.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/tcp-congestion-ops.h"
#include "ns3/tcp-socket-base.h"
#include "ns3/traffic-control-helper.h"
#include "ns3/uinteger.h"

#include "dltrace/formats/op_kind.h"
#include "dltrace/models/job.h"
#include "dltrace/replay/schedule_tools.h"
#include "dltrace/runs/atomic_file.h"
#include "dltrace/runs/comparison.h"
#include "dltrace/runs/results_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>
#include <unordered_map>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceScenario");

namespace
{

std::string
Lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}
bool
ParseHostList(const std::string& text, std::vector<uint32_t>* out)
{
    std::stringstream ss(text);
    std::string item;
    out->clear();
    while (std::getline(ss, item, ','))
    {
        char* end = nullptr;
        long a = std::strtol(item.c_str(), &end, 10);
        long b = a;
        if (end == item.c_str() || a < 0)
        {
            return false;
        }
        if (*end == '-')
        {
            const char* rest = end + 1;
            b = std::strtol(rest, &end, 10);
            if (end == rest || b < a)
            {
                return false;
            }
        }
        if (*end != '\0' || b - a > 100000)
        {
            return false;
        }
        for (long h = a; h <= b; ++h)
        {
            out->push_back(uint32_t(h));
        }
    }
    return !out->empty();
}

} // namespace

bool
DltraceJobSpec::Parse(const std::string& text, DltraceJobSpec* out, std::string* error)
{
    DltraceJobSpec spec = *out; // defaults: what TEXT does not say stays
    std::vector<std::string> parts;
    std::stringstream ss(text);
    std::string part;
    while (std::getline(ss, part, ':'))
    {
        parts.push_back(part);
    }
    if (parts.empty() || parts[0].empty())
    {
        *error = "--job needs TRACE[:hosts=A-B][:start=T][:algo=A][:channels=C][:iterations=N], got '" +
                 text + "'";
        return false;
    }
    spec.trace = parts[0];
    for (size_t i = 1; i < parts.size(); ++i)
    {
        const size_t eq = parts[i].find('=');
        const std::string key = parts[i].substr(0, eq);
        const std::string value = eq == std::string::npos ? "" : parts[i].substr(eq + 1);
        char* end = nullptr;
        bool ok = eq != std::string::npos && !value.empty();
        if (key == "hosts")
        {
            ok = ok && ParseHostList(value, &spec.hosts);
        }
        else if (key == "start")
        {
            ok = ok && DltraceParseTime(value, &spec.start);
        }
        else if (key == "algo")
        {
            spec.lower.algorithm = value;
            ok = ok && dltrace::models::FindAlgorithm(value) != nullptr;
        }
        else if (key == "channels")
        {
            long c = std::strtol(value.c_str(), &end, 10);
            ok = ok && *end == '\0' && c >= 1 && c <= 64;
            spec.lower.channels = int(c);
        }
        else if (key == "iterations")
        {
            long c = std::strtol(value.c_str(), &end, 10);
            ok = ok && *end == '\0' && c >= 1;
            spec.iterations = uint32_t(c);
        }
        else
        {
            *error = "--job " + text + ": unknown key '" + key +
                     "' (hosts, start, algo, channels, iterations)";
            return false;
        }
        if (!ok)
        {
            *error = "--job " + text + ": bad value in '" + parts[i] + "'";
            return false;
        }
    }
    *out = spec;
    return true;
}

bool
DltraceFindCongestionControl(const std::string& name, TypeId* tid, std::string* error)
{
    const TypeId base = TcpCongestionOps::GetTypeId();
    std::vector<std::string> names;
    const std::string want = Lower(name);
    for (uint32_t i = 0; i < TypeId::GetRegisteredN(); ++i)
    {
        TypeId t = TypeId::GetRegistered(i);
        if (t == base || !t.IsChildOf(base) || !t.HasConstructor())
        {
            continue;
        }
        const std::string full = t.GetName();      // ns3::TcpCubic
        const std::string shortName = full.substr(5); // TcpCubic
        names.push_back(shortName);
        const std::string l = Lower(shortName);
        if (want == Lower(full) || want == l || (l.rfind("tcp", 0) == 0 && want == l.substr(3)))
        {
            *tid = t;
            return true;
        }
    }
    std::sort(names.begin(), names.end());
    std::string list;
    for (const auto& n : names)
    {
        list += (list.empty() ? "" : ", ") + n;
    }
    *error = "unknown TCP congestion control '" + name + "' (one of " + list + ")";
    return false;
}

DltraceScenario::DltraceScenario()
    : m_ecnK(0),
      m_wallSeconds(0),
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
    m_switchQueues = QueueDiscContainer();
    m_hostQueues = QueueDiscContainer();
    m_deviceDrops = Counter();
    m_jobs.clear();
    Simulator::Destroy();
    m_built = false;
}

bool
DltraceScenario::ConfigureTcp(std::string* error)
{
    if (!DltraceFindCongestionControl(m_config.congestionControl, &m_cc, error))
    {
        return false;
    }
    if (m_config.segmentSize < 64 || m_config.segmentSize > 65000)
    {
        *error = "segment size " + std::to_string(m_config.segmentSize) +
                 " is out of range (64 to 65000 bytes)";
        return false;
    }
    const uint32_t snd = m_config.sndBufBytes ? m_config.sndBufBytes : kDltraceDefaultSndBuf;
    const uint32_t rcv = m_config.rcvBufBytes ? m_config.rcvBufBytes : kDltraceDefaultRcvBuf;
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(m_cc));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(m_config.segmentSize));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(snd));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(rcv));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(m_config.minRto));
    const std::string recovery = Lower(m_config.recovery);
    if (recovery != "classic" && recovery != "prr")
    {
        *error = "unknown loss recovery '" + m_config.recovery + "' (classic or prr)";
        return false;
    }
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                       TypeIdValue(TypeId::LookupByName(recovery == "prr" ? "ns3::TcpPrrRecovery"
                                                                          : "ns3::TcpClassicRecovery")));
    if (m_cc.GetName() == "ns3::TcpBbr")
    {
        // BBR paces its sending; ns-3 leaves pacing off unless asked.
        Config::SetDefault("ns3::TcpSocketState::EnablePacing", BooleanValue(true));
    }
    return true;
}

bool
DltraceScenario::InstallQueues(std::string* error)
{
    std::string kind = Lower(m_config.queueDisc);
    const bool dctcp = m_cc.GetName() == "ns3::TcpDctcp";
    if (kind == "auto")
    {
        kind = dctcp ? "red-ecn" : "fifo";
    }
    const std::string limit = std::to_string(m_config.queuePackets) + "p";
    // DCTCP's marking threshold: K = 65 packets at 10 Gbit/s (the DCTCP
    // paper's setting), scaled with the host link rate, at least 20.
    m_ecnK = m_config.ecnThresholdPackets
                 ? m_config.ecnThresholdPackets
                 : std::max<uint32_t>(20, uint32_t(std::llround(65.0 * m_topo.rateBps / 1e10)));
    TrafficControlHelper sw;
    if (kind == "fifo")
    {
        sw.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", QueueSizeValue(QueueSize(limit)));
    }
    else if (kind == "red" || kind == "red-ecn")
    {
        const bool ecn = kind == "red-ecn";
        const double k = double(m_ecnK);
        sw.SetRootQueueDisc("ns3::RedQueueDisc",
                            "MaxSize",
                            QueueSizeValue(QueueSize(std::to_string(
                                std::max<uint32_t>(m_config.queuePackets, 4 * m_ecnK)) + "p")),
                            "UseEcn",
                            BooleanValue(ecn),
                            "UseHardDrop",
                            BooleanValue(!ecn),
                            "MeanPktSize",
                            UintegerValue(m_config.segmentSize + 52),
                            "QW",
                            DoubleValue(ecn ? 1.0 : 0.002),
                            "MinTh",
                            DoubleValue(ecn ? k : k),
                            "MaxTh",
                            DoubleValue(ecn ? k + 1 : 3 * k),
                            "LInterm",
                            DoubleValue(ecn ? 1.0 : 50.0));
        if (ecn && !dctcp)
        {
            NS_LOG_WARN("red-ecn marks only ECN-capable traffic; " << m_cc.GetName()
                                                                   << " does not set ECT");
        }
    }
    else if (kind == "codel")
    {
        sw.SetRootQueueDisc("ns3::CoDelQueueDisc", "MaxSize", QueueSizeValue(QueueSize(limit)));
    }
    else if (kind == "fq-codel")
    {
        sw.SetRootQueueDisc("ns3::FqCoDelQueueDisc", "MaxSize", QueueSizeValue(QueueSize(limit)));
    }
    else if (kind == "pie")
    {
        sw.SetRootQueueDisc("ns3::PieQueueDisc", "MaxSize", QueueSizeValue(QueueSize(limit)));
    }
    else if (kind == "pfifo-fast")
    {
        sw.SetRootQueueDisc("ns3::PfifoFastQueueDisc", "MaxSize", QueueSizeValue(QueueSize(limit)));
    }
    else
    {
        *error = "unknown queue discipline '" + m_config.queueDisc +
                 "' (auto, fifo, red, red-ecn, codel, fq-codel, pie, pfifo-fast)";
        return false;
    }
    m_queueKind = kind;
    // Hosts: per-flow fair queueing, as Linux's default fq_codel does, so a
    // host's ACKs do not wait behind its own bulk data (a shared FIFO there
    // stretches every RTT by the send buffer and slows a ring by ~4%).
    TrafficControlHelper host;
    host.SetRootQueueDisc("ns3::FqCoDelQueueDisc", "MaxSize", QueueSizeValue(QueueSize("100000p")));
    for (const auto& link : m_topology.GetLinks())
    {
        for (Ptr<NetDevice> dev : {link.a, link.b})
        {
            if (m_topology.IsSwitch(dev->GetNode()))
            {
                m_switchQueues.Add(sw.Install(dev));
            }
            else
            {
                m_hostQueues.Add(host.Install(dev));
            }
        }
    }
    return true;
}

bool
DltraceScenario::Setup(const DltraceScenarioConfig& config, std::string* error)
{
    Destroy();
    m_config = config;
    m_specs = config.jobs;
    m_jobs.clear();
    m_apps.clear();
    m_directions.clear();
    m_samples.clear();
    if (m_specs.empty())
    {
        *error = "no job to simulate";
        return false;
    }
    // Everything that can be wrong is checked before the network is built.
    if (!ConfigureTcp(error))
    {
        return false;
    }
    ObjectFactory scheduler;
    const std::string s = Lower(config.scheduler);
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
    scheduler.SetTypeId(sit->second);
    Simulator::SetScheduler(scheduler);
    m_built = true; // from here on the simulator holds state to destroy

    uint32_t basePort = 5000;
    for (size_t j = 0; j < m_specs.size(); ++j)
    {
        const DltraceJobSpec& spec = m_specs[j];
        Ptr<DltraceJob> job = CreateObject<DltraceJob>();
        job->SetAttribute("TraceSet", StringValue(spec.trace));
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
    // Placement: explicit host lists, else the next hosts no job took yet.
    uint32_t next = 0;
    uint32_t needed = 0;
    for (size_t j = 0; j < m_specs.size(); ++j)
    {
        const uint32_t n = m_jobs[j]->GetEndpointCount();
        if (m_specs[j].hosts.empty())
        {
            for (uint32_t e = 0; e < n; ++e)
            {
                m_specs[j].hosts.push_back(next++);
            }
        }
        else if (m_specs[j].hosts.size() != n)
        {
            *error = "job " + std::to_string(j) + " (" + m_specs[j].trace + ") has " +
                     std::to_string(n) + " endpoints, its hosts list names " +
                     std::to_string(m_specs[j].hosts.size());
            return false;
        }
        for (uint32_t h : m_specs[j].hosts)
        {
            needed = std::max(needed, h + 1);
            next = std::max(next, h + 1);
        }
    }
    if (!DltraceTopologyConfig::Parse(config.topology, needed, &m_topo, error))
    {
        return false;
    }
    if (m_topo.HostCount() < needed)
    {
        *error = "topology " + m_topo.Describe() + " has " + std::to_string(m_topo.HostCount()) +
                 " hosts, the jobs need " + std::to_string(needed);
        return false;
    }

    m_topology.Build(m_topo);
    NodeContainer all(m_topology.GetHosts(), m_topology.GetSwitches());
    Ipv4ListRoutingHelper list;
    Ipv4StaticRoutingHelper staticRouting;
    DltraceFlowEcmpRoutingHelper ecmp;
    list.Add(staticRouting, 0);
    list.Add(ecmp, -10);
    InternetStackHelper stack;
    stack.SetRoutingHelper(list);
    stack.Install(all);
    if (!InstallQueues(error))
    {
        return false;
    }
    Ipv4AddressHelper address;
    address.SetBase("10.0.0.0", "255.255.255.252");
    for (const auto& link : m_topology.GetLinks())
    {
        NetDeviceContainer pair(link.a, link.b);
        address.Assign(pair);
        address.NewNetwork();
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

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

    for (const auto& link : m_topology.GetLinks())
    {
        for (int d = 0; d < 2; ++d)
        {
            auto dir = std::make_unique<LinkDirection>();
            Ptr<NetDevice> dev = d == 0 ? link.a : link.b;
            const size_t dash = link.name.find('-');
            dir->name = d == 0 ? link.name
                               : link.name.substr(dash + 1) + "-" + link.name.substr(0, dash);
            dir->rateBps = link.rateBps;
            dev->TraceConnectWithoutContext(
                "PhyTxEnd",
                MakeBoundCallback(&DltraceScenario::CountTx, &dir->counter));
            dev->TraceConnectWithoutContext(
                "MacTxDrop",
                MakeBoundCallback(&DltraceScenario::CountTx, &m_deviceDrops));
            m_directions.push_back(std::move(dir));
        }
    }
    if (config.utilInterval.IsStrictlyPositive())
    {
        Simulator::Schedule(config.utilInterval, &DltraceScenario::SampleLinks, this);
    }
    if (config.flowMonitor)
    {
        m_flowHelper = std::make_unique<FlowMonitorHelper>();
        m_flowMonitor = m_flowHelper->Install(m_topology.GetHosts());
    }
    if (!config.pcapPrefix.empty())
    {
        PointToPointHelper p2p;
        for (const auto& link : m_topology.GetLinks())
        {
            p2p.EnablePcap(config.pcapPrefix + link.name, link.a, false, true);
        }
    }
    if (config.stopTime.IsStrictlyPositive())
    {
        Simulator::Stop(config.stopTime);
    }
    return true;
}

void
DltraceScenario::CountTx(Counter* counter, Ptr<const Packet> packet)
{
    counter->bytes += packet->GetSize();
    ++counter->packets;
}

void
DltraceScenario::SampleLinks()
{
    Sample s;
    s.timeS = Simulator::Now().GetSeconds();
    s.bytes.reserve(m_directions.size());
    for (auto& d : m_directions)
    {
        s.bytes.push_back(d->counter.bytes - d->sampledBytes);
        d->sampledBytes = d->counter.bytes;
    }
    m_samples.push_back(std::move(s));
    // Keep sampling while anything else is still scheduled.
    if (!Simulator::IsFinished())
    {
        Simulator::Schedule(m_config.utilInterval, &DltraceScenario::SampleLinks, this);
    }
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

const DltraceTopologyHelper&
DltraceScenario::GetTopology() const
{
    return m_topology;
}

const DltraceTopologyConfig&
DltraceScenario::GetTopologyConfig() const
{
    return m_topo;
}

uint64_t
DltraceScenario::GetLinkPackets() const
{
    uint64_t n = 0;
    for (const auto& d : m_directions)
    {
        n += d->counter.packets;
    }
    return n;
}

uint64_t
DltraceScenario::GetEcnMarks() const
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < m_switchQueues.GetN(); ++i)
    {
        n += m_switchQueues.Get(i)->GetStats().nTotalMarkedPackets;
    }
    return n;
}

uint64_t
DltraceScenario::GetQueueDrops() const
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < m_switchQueues.GetN(); ++i)
    {
        n += m_switchQueues.Get(i)->GetStats().nTotalDroppedPackets;
    }
    return n;
}

double
DltraceScenario::GetSimulatedSeconds() const
{
    return m_simSeconds;
}

double
DltraceScenario::GetWallSeconds() const
{
    return m_wallSeconds;
}

std::string
DltraceScenario::GetQueueDiscDescription() const
{
    if (m_queueKind == "red-ecn" || m_queueKind == "red")
    {
        return m_queueKind + " (K=" + std::to_string(m_ecnK) + "p)";
    }
    return m_queueKind + " (" + std::to_string(m_config.queuePackets) + "p)";
}

std::vector<dltrace::runs::ResultsFile>
DltraceScenario::ResultsFiles(size_t j) const
{
    const auto& job = m_jobs[j];
    const auto& schedule = job->GetSchedule();
    const uint64_t hash = dltrace::replay::ScheduleHash(schedule);
    std::vector<dltrace::runs::ResultsFile> files;
    for (const auto& r : job->GetResults())
    {
        files.push_back(dltrace::runs::MakeResultsFile(schedule, r));
        files.back().source = "ns3";
        files.back().trace = job->GetTracePath();
        files.back().algorithm = job->GetAlgorithm();
        files.back().schedule_hash = hash;
    }
    return files;
}

bool
DltraceScenario::WriteOutputs(const std::string& dir, std::string* error) const
{
    std::ostringstream flows;
    flows << "job,op,src,dst,channel,bytes,local,start_s,end_s,fct_ns\n";
    for (size_t j = 0; j < m_jobs.size(); ++j)
    {
        const auto& job = m_jobs[j];
        const auto& schedule = job->GetSchedule();
        const auto& results = job->GetResults();
        std::string jobDir = dir;
        if (m_jobs.size() > 1)
        {
            jobDir = dir + "/job" + std::to_string(j);
            if (mkdir(jobDir.c_str(), 0777) != 0 && errno != EEXIST)
            {
                *error = jobDir + ": " + std::strerror(errno);
                return false;
            }
        }
        for (const auto& f : ResultsFiles(j))
        {
            if (!dltrace::runs::WriteResultsFile(
                    f,
                    jobDir + "/" + dltrace::runs::ResultsFileName(f.endpoint),
                    error))
            {
                return false;
            }
        }
        // Message completion: the send step's start on the sender to the
        // receive step's end on the receiver (both clocks start at the job's start).
        const double origin = m_specs[j].start.GetSeconds();
        // Per receiver: (sender, tag) -> its receive step.
        std::vector<std::map<std::pair<int32_t, uint64_t>, size_t>> recvStep(schedule.ranks.size());
        for (size_t e = 0; e < schedule.ranks.size(); ++e)
        {
            const auto& steps = schedule.ranks[e].steps;
            for (size_t i = 0; i < steps.size(); ++i)
            {
                if (steps[i].type == dltrace::models::StepType::kRecv)
                {
                    recvStep[e][{steps[i].peer, steps[i].tag}] = i;
                }
            }
        }
        for (size_t e = 0; e < schedule.ranks.size() && e < results.size(); ++e)
        {
            const auto& steps = schedule.ranks[e].steps;
            for (size_t i = 0; i < steps.size(); ++i)
            {
                const auto& s = steps[i];
                if (s.type != dltrace::models::StepType::kSend || !results[e].steps[i].valid ||
                    size_t(s.peer) >= results.size())
                {
                    continue;
                }
                auto it = recvStep[size_t(s.peer)].find({int32_t(e), s.tag});
                if (it == recvStep[size_t(s.peer)].end())
                {
                    continue;
                }
                const auto& t = results[size_t(s.peer)].steps[it->second];
                const uint64_t sendStart = results[e].steps[i].start_ns;
                if (!t.valid || t.end_ns < t.start_ns || t.end_ns == 0 || t.end_ns < sendStart)
                {
                    continue;
                }
                const double start = origin + results[e].steps[i].start_ns * 1e-9;
                const double end = origin + t.end_ns * 1e-9;
                char row[256];
                std::snprintf(row,
                              sizeof row,
                              "%zu,%u,%zu,%d,%u,%" PRIu64 ",%d,%.9f,%.9f,%" PRIu64 "\n",
                              j,
                              s.op,
                              e,
                              s.peer,
                              unsigned(s.channel),
                              s.bytes,
                              s.local ? 1 : 0,
                              start,
                              end,
                              t.end_ns - sendStart);
                flows << row;
            }
        }
    }
    if (!dltrace::runs::WriteFileAtomically(dir + "/flows.csv", flows.str(), error))
    {
        return false;
    }
    std::ostringstream links;
    links << "time_s,link,bytes,utilisation\n";
    for (size_t i = 0; i < m_samples.size(); ++i)
    {
        const double prev = i ? m_samples[i - 1].timeS : 0.0;
        const double dt = m_samples[i].timeS - prev;
        for (size_t d = 0; d < m_directions.size(); ++d)
        {
            const uint64_t b = m_samples[i].bytes[d];
            const double util = dt > 0 ? b * 8.0 / (m_directions[d]->rateBps * dt) : 0.0;
            links << std::setprecision(9) << m_samples[i].timeS << "," << m_directions[d]->name
                  << "," << b << "," << std::setprecision(4) << util << "\n";
        }
    }
    if (!dltrace::runs::WriteFileAtomically(dir + "/links.csv", links.str(), error))
    {
        return false;
    }
    if (m_flowMonitor)
    {
        dltrace::runs::AtomicFile xml(dir + "/flowmon.xml");
        if (!xml.Open(error))
        {
            return false;
        }
        m_flowMonitor->SerializeToXmlFile(xml.temporary_path(), true, true);
        if (!xml.Commit(error))
        {
            return false;
        }
    }
    return true;
}

void
DltraceScenario::PrintSummary(std::ostream& os) const
{
    char line[256];
    os << "# ns-3 simulation: " << m_topo.Describe() << "\n";
    os << "# " << m_cc.GetName().substr(5) << ", switch queues " << GetQueueDiscDescription()
       << ", scheduler " << m_config.scheduler << "\n";
    for (size_t j = 0; j < m_jobs.size(); ++j)
    {
        const auto& job = m_jobs[j];
        const auto& schedule = job->GetSchedule();
        const auto& results = job->GetResults();
        dltrace::runs::RunTimes simulated;
        for (const auto& f : ResultsFiles(j))
        {
            std::string ignored; // every file of one job is of one run
            dltrace::runs::AddResults(f, "endpoint " + std::to_string(f.endpoint), &simulated, &ignored);
        }
        const dltrace::models::Job* loaded = job->GetLoadedJob();
        const dltrace::runs::Comparison comparison = dltrace::runs::CompareRuns(
            {dltrace::runs::RecordedRun(schedule, loaded ? &loaded->merged : nullptr), simulated},
            loaded);
        uint32_t complete = 0;
        std::string firstError;
        for (const auto& r : results)
        {
            complete += r.complete ? 1 : 0;
            if (!r.complete && firstError.empty())
            {
                firstError = "endpoint " + std::to_string(r.endpoint) + ": " + r.error;
            }
        }
        std::string hosts;
        const auto& h = m_specs[j].hosts;
        hosts = h.empty() ? "-" : std::to_string(h.front()) + (h.size() > 1 ? "-" + std::to_string(h.back()) : "");
        os << "\njob " << j << ": " << (job->GetTracePath().empty() ? "(schedule)" : job->GetTracePath())
           << ", algorithm " << job->GetAlgorithm() << ", " << schedule.ranks.size()
           << " endpoints on hosts " << hosts << ", start " << m_specs[j].start.GetSeconds()
           << " s, " << complete << "/" << results.size() << " endpoints complete\n";
        if (!firstError.empty())
        {
            os << "  first error: " << firstError << "\n";
        }
        os << dltrace::runs::FormatAgainstRecorded(comparison, "simulated_ms");
        const uint64_t sent = simulated.bytes_sent;
        const uint64_t received = simulated.bytes_received;
        const uint64_t scheduled = simulated.bytes_scheduled_recv;
        std::snprintf(line, sizeof line,
                      "job time %.3f ms; bytes: sent %" PRIu64 ", received %" PRIu64
                      ", scheduled %" PRIu64 " (%s)\n",
                      GetJobDuration(uint32_t(j)).GetSeconds() * 1e3, sent, received, scheduled,
                      received == scheduled ? "all received" : "MISSING BYTES");
        os << line;
    }
    const uint64_t packets = GetLinkPackets();
    uint64_t hostDrops = 0;
    for (uint32_t i = 0; i < m_hostQueues.GetN(); ++i)
    {
        hostDrops += m_hostQueues.Get(i)->GetStats().nTotalDroppedPackets;
    }
    std::snprintf(line, sizeof line,
                  "\nnetwork: %" PRIu64 " packets on links, %" PRIu64 " ECN marks, %" PRIu64
                  " drops at switch queues, %" PRIu64 " at host queues, %" PRIu64 " at devices\n",
                  packets, GetEcnMarks(), GetQueueDrops(), hostDrops, m_deviceDrops.packets);
    os << line;
    std::snprintf(line, sizeof line,
                  "speed: %.6f simulated s in %.3f wall s: %.4g simulated s per wall s, %.4g "
                  "packets per wall s\n",
                  m_simSeconds, m_wallSeconds,
                  m_wallSeconds > 0 ? m_simSeconds / m_wallSeconds : 0.0,
                  m_wallSeconds > 0 ? packets / m_wallSeconds : 0.0);
    os << line;
}

} // namespace ns3
