// SPDX-License-Identifier: GPL-2.0-only
// The ns-3 module behind the one simulator interface: `dltrace simulate
// --simulator ns3`. Turns a SimulationConfig (and the ns-3 settings declared
// below) into a DltraceScenarioConfig, runs the scenario, hands back its records.
#include "dltrace-simulator-backend.h"

#include "dltrace-scenario.h"

#include "ns3/config.h"
#include "ns3/double.h"

#include "dltrace/simulator/simulator.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

namespace dltrace::simulator
{

namespace
{

using Kind = SettingSpec::Kind;

// TEXT as a number for setting FLAG: false with one line when it is not one.
bool
ParseNumber(const std::string& flag, const std::string& text, double* out, std::string* error)
{
    try
    {
        size_t used = 0;
        *out = std::stod(text, &used);
        if (used == text.size())
        {
            return true;
        }
    }
    catch (const std::exception&)
    {
    }
    *error = flag + ": not a number: " + text;
    return false;
}

// Runs this same command line again as N MPI processes: `mpirun -np N`
// (DLTRACE_MPIRUN replaces "mpirun", e.g. "mpirun --hostfile hosts"), each
// process seeing the launcher's variables and so running one partition.
// Returns only when the launcher could not be started.
bool
LaunchPartitions(uint32_t n, const std::string& outDir, std::string* error)
{
    std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
    std::vector<std::string> args;
    for (std::string a; std::getline(cmdline, a, '\0');)
    {
        args.push_back(a);
    }
    char exe[PATH_MAX];
    const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (args.empty() || len <= 0)
    {
        *error = "--partitions: cannot read this process's command line from /proc/self";
        return false;
    }
    args[0] = std::string(exe, size_t(len));
    bool outGiven = false;
    for (size_t i = 1; i < args.size(); ++i)
    {
        const std::string& a = args[i];
        outGiven = outGiven || a == "-o" || a == "--output" || a.rfind("--output=", 0) == 0 ||
                   (a.size() > 2 && a[0] == '-' && a[1] == 'o');
    }
    if (!outGiven)
    {
        // Every partition must agree on the fresh directory's name.
        args.push_back("--output");
        args.push_back(outDir);
    }
    std::vector<std::string> launch;
    const char* custom = std::getenv("DLTRACE_MPIRUN");
    if (custom && *custom)
    {
        std::istringstream words(custom);
        for (std::string w; words >> w;)
        {
            launch.push_back(w);
        }
    }
    else
    {
        // One machine: as many processes as asked for, whatever its cores.
        launch = {"mpirun", "--oversubscribe"};
        if (geteuid() == 0)
        {
            launch.push_back("--allow-run-as-root");
        }
        // Open MPI's usual messaging layer over shared memory, named rather
        // than chosen: choosing opens and probes every other one (UCX among
        // them), 0.2 s of each run's start (0.49 -> 0.28 s for mpirun of two
        // processes that only start and stop). A user's own setting stands.
        setenv("OMPI_MCA_pml", "ob1", 0);
    }
    launch.push_back("-np");
    launch.push_back(std::to_string(n));
    launch.insert(launch.end(), args.begin(), args.end());
    std::string shown;
    for (const auto& a : launch)
    {
        shown += (shown.empty() ? "" : " ") + a;
    }
    std::cerr << "dltrace simulate: " << n << " partitions: " << shown << std::endl;
    std::cout.flush();
    std::vector<char*> argv;
    for (auto& a : launch)
    {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    *error = "--partitions: cannot start " + launch[0] + ": " + std::strerror(errno) +
             " (apt-get install openmpi-bin, or set DLTRACE_MPIRUN)";
    return false;
}

class Ns3Simulator final : public Simulator
{
  public:
    bool Check(const SimulationConfig& config, std::string* error) override
    {
        if (config.transport != "tcp" && config.transport != "rdma" && config.transport != "uet")
        {
            *error = "--transport " + config.transport + ": the ns-3 simulator models tcp, rdma and uet";
            return false;
        }
        ns3::DltraceScenarioConfig& c = m_config;
        c = ns3::DltraceScenarioConfig();
        c.transport = config.transport;
        m_pcap = false;
        for (const auto& [name, value] : config.settings)
        {
            double x = 0;
            const bool number = name != "queue" && name != "recovery" && name != "scheduler" &&
                                name != "no-flowmon" && name != "pcap" && name != "cc-param" &&
                                name != "rdma-egress" && name != "no-pfc" && name != "fast-forward" &&
                                name != "fast-forward-sets" && name != "rdma-ooo" &&
                                name != "partition-map" && name != "pdes";
            if (number && !ParseNumber("--" + name, value, &x, error))
            {
                return false;
            }
            if (name == "queue")
                c.queueDisc = value;
            else if (name == "queue-packets")
                c.queuePackets = uint32_t(x);
            else if (name == "ecn-k")
                c.ecnThresholdPackets = uint32_t(x);
            else if (name == "segment-size")
                c.segmentSize = uint32_t(x);
            else if (name == "sndbuf")
                c.sndBufBytes = uint32_t(x);
            else if (name == "rcvbuf")
                c.rcvBufBytes = uint32_t(x);
            else if (name == "min-rto-ms")
                c.minRto = ns3::MicroSeconds(int64_t(x * 1000));
            else if (name == "recovery")
                c.recovery = value;
            else if (name == "scheduler")
                c.scheduler = value;
            else if (name == "stop")
                c.stopTime = ns3::NanoSeconds(int64_t(x * 1e9));
            else if (name == "no-flowmon")
                c.flowMonitor = false;
            else if (name == "pcap")
                m_pcap = true;
            else if (name == "cc-param")
                c.ccParams.push_back(value);
            else if (name == "rdma-egress")
                c.rdmaEgress = value;
            else if (name == "no-pfc")
                c.pfc = false;
            else if (name == "rdma-ooo")
                c.outOfOrder = true;
            else if (name == "fast-forward")
                c.fastForward = true;
            else if (name == "fast-forward-sets")
                c.fastForward = c.fastForwardSets = true;
            else if (name == "partitions")
                c.partitions = uint32_t(x);
            else if (name == "partition-map")
                c.partitionMap = value;
            else if (name == "pdes")
                c.pdes = value;
        }
        if (c.partitions <= 1 && (!c.partitionMap.empty() || c.pdes != "null-message"))
        {
            *error = "--partition-map and --pdes go with --partitions N (N >= 2)";
            return false;
        }
        if (c.pdes != "null-message" && c.pdes != "barrier")
        {
            *error = "--pdes " + c.pdes + ": null-message or barrier";
            return false;
        }
        return true;
    }

    bool Configure(const SimulationConfig& config, std::string* error) override
    {
        ns3::DltraceScenarioConfig& c = m_config;
        if (c.transport == "uet")
        {
            c.rdmaCongestionControl = "nscc"; // UET's default
        }
        if (!config.congestion_control.empty())
        {
            if (c.transport != "tcp")
            {
                c.rdmaCongestionControl = config.congestion_control;
            }
            else
            {
                c.congestionControl = config.congestion_control;
            }
        }
        for (const char* type : {"ns3::TcpMltcpNewReno", "ns3::TcpMltcpDctcp"})
        {
            ns3::Config::SetDefault(std::string(type) + "::Slope", ns3::DoubleValue(config.mltcp.slope));
            ns3::Config::SetDefault(std::string(type) + "::Intercept",
                                    ns3::DoubleValue(config.mltcp.intercept));
        }
        c.topology = config.topology;
        c.progress = config.progress;
        c.utilInterval = ns3::NanoSeconds(int64_t(config.util_interval_ns));
        c.jobs.clear();
        for (const auto& job : config.jobs)
        {
            c.jobs.push_back(ns3::DltraceJobSpec{job});
        }
        m_outDir = config.out_dir;
        if (m_pcap)
        {
            c.pcapPrefix = m_outDir + "/pcap/";
        }
        if (!m_scenario.Setup(c, error))
        {
            return false;
        }
        // Checked here, run as N processes (each comes back through Setup).
        return !m_scenario.NeedsLaunch() || LaunchPartitions(c.partitions, m_outDir, error);
    }

    bool Run(std::string* error) override
    {
        // Pcap files open as the run starts: their folder goes with the outputs.
        if (m_pcap && mkdir((m_outDir + "/pcap").c_str(), 0777) != 0 && errno != EEXIST)
        {
            *error = m_outDir + "/pcap: " + std::strerror(errno);
            return false;
        }
        m_scenario.Run();
        if (m_config.partitions > 1)
        {
            // Each partition's own flow monitor sees its own nodes only.
            const std::string name = "flowmon.p" + std::to_string(m_scenario.GetPartitionIndex()) + ".xml";
            if (m_scenario.HasFlowMonitor() && !m_scenario.WriteFlowMonitor(m_outDir, error, name))
            {
                return false;
            }
            if (!WritesOutputs())
            {
                return true; // partition 0 has every endpoint's result and says
            }
        }
        if (!m_scenario.AllJobsComplete())
        {
            *error = "some endpoints did not finish";
            return false;
        }
        return true;
    }

    bool WritesOutputs() const override
    {
        return m_scenario.GetPartitionIndex() == 0;
    }

    const runs::SimulationRecords& Records() const override
    {
        return m_scenario.GetRecords();
    }

    bool WriteOwnOutputs(const std::string& dir, std::string* error) const override
    {
        const bool flowmon = m_scenario.HasFlowMonitor() && m_config.partitions <= 1;
        return (!flowmon || m_scenario.WriteFlowMonitor(dir, error)) && m_scenario.WriteRdmaOutputs(dir, error);
    }

    std::vector<std::string> OwnOutputNames() const override
    {
        std::vector<std::string> names;
        if (m_config.transport == "rdma" || m_config.transport == "uet")
        {
            names = {"queues.csv", "pfc.csv", "qps.csv", "messages.csv"};
        }
        else if (m_config.flowMonitor)
        {
            names.push_back(m_config.partitions > 1 ? "flowmon.p<P>.xml per partition" : "flowmon.xml");
        }
        if (m_pcap)
        {
            names.push_back("pcap/");
        }
        return names;
    }

  private:
    ns3::DltraceScenarioConfig m_config;
    ns3::DltraceScenario m_scenario;
    std::string m_outDir;
    bool m_pcap = false;
};

using Bound = SettingSpec::Bound;

} // namespace

void
RegisterNs3()
{
    const ns3::DltraceScenarioConfig defaults;
    SimulatorInfo info;
    info.name = "ns3";
    info.title = "ns-3";
    info.description = "packet-level ns-3 TCP, RDMA (RoCEv2, PFC, DCQCN/HPCC/TIMELY) or UET (spraying, trimming, "
                       "NSCC/RCCC; congestion control, queues, ECN; tens of hosts)";
    info.build = ns3::DltraceNs3Build();
    info.settings = {
        Setting("--queue",
                "switch queues: auto (red-ecn for DCTCP, else fifo), fifo, red, red-ecn, codel, fq-codel, "
                "pie, pfifo-fast"),
        Number("--queue-packets", "switch egress queue limit in packets", Bound::kPositive),
        Number("--ecn-k", "red-ecn marking threshold K in packets (0: scaled to rate)", Bound::kPositive),
        Number("--segment-size", "TCP segment size in bytes", Bound::kRange, "", 64, 65000),
        Number("--sndbuf",
               "TCP send buffer in bytes",
               Bound::kRange,
               std::to_string(ns3::kDltraceDefaultSndBuf),
               1024,
               4e9),
        Number("--rcvbuf",
               "TCP receive buffer in bytes",
               Bound::kRange,
               std::to_string(ns3::kDltraceDefaultRcvBuf),
               1024,
               4e9),
        Number("--min-rto-ms",
               "TCP minimum retransmission timeout in ms (delayed ACKs wait a fifth of it)",
               Bound::kPositive,
               std::to_string(defaults.minRto.GetMilliSeconds())),
        Setting("--recovery", "TCP loss recovery: classic or prr"),
        Setting("--scheduler",
                "ns-3 event scheduler: canonical (default: ns-3's order, but the RDMA fabric's frames of one "
                "nanosecond first and by port, so partitioned runs equal one process), heap, map, list, calendar"),
        Number("--stop",
               "stop at this simulated time in seconds (0: when every job is done)",
               Bound::kNonNegative,
               "0"),
        Setting("--no-flowmon", "no flowmon.xml (ns-3 FlowMonitor)", Kind::kFlag),
        Setting("--pcap", "a pcap of every link under DIR/pcap/", Kind::kFlag),
        Repeatable(Setting("--cc-param",
                           "rdma: NAME=VALUE, an attribute of the congestion control (e.g. "
                           "RateAi=40000000, Eta=0.9); see the docs, explanation/rdma-model; uet: lb=oblivious|"
                           "bitmap|reps|mixed, entropies=N, mtu=BYTES, queue=BDPS, queue-packets=N, rtt-us=US, "
                           "target-delay-us=US, min-rto-us=US, qa-gate=N, cwnd=PACKETS")),
        Setting("--rdma-egress",
                "rdma: switch egress over traffic classes: strict (priority 7 first, default) or "
                "wrr[:W0,...,W7] (weighted round robin)"),
        Setting("--no-pfc", "rdma: lossy RoCE (no PFC; drops counted, go-back-N recovers)", Kind::kFlag),
        Setting("--rdma-ooo",
                "rdma: receivers place packets out of order and senders resend only the PSNs a NACK "
                "names (selective repeat), as adaptive routing needs; default go-back-N",
                Kind::kFlag),
        Setting("--fast-forward",
                "rdma: skip steady states (every queue pair's rate and every queue held for a window): "
                "bytes credited at the steady rates up to the next event",
                Kind::kFlag),
        Setting("--fast-forward-sets",
                "rdma: --fast-forward, and where the fabric is not steady as a whole, hold each connected set "
                "of busy links that is (e.g. a job beside another that is not) while the rest runs packet by "
                "packet",
                Kind::kFlag),
        Number("--partitions",
               "run as N MPI processes on ns-3's distributed simulator, cut by pod or leaf (needs a release "
               "tree built with NS3_MPI=1; mpirun -np N is started unless already under mpirun)",
               Bound::kRange,
               "1",
               1,
               4096),
        Setting("--partition-map",
                "with --partitions: FILE of \"NODE PARTITION\" lines (h0 0, leaf0 0, spine1 1, ...) "
                "instead of by pod or leaf"),
        Setting("--pdes",
                "with --partitions: null-message (ns3::NullMessageSimulatorImpl, default) or barrier "
                "(ns3::DistributedSimulatorImpl)"),
    };
    info.make = [] { return std::make_unique<Ns3Simulator>(); };
    RegisterSimulator(std::move(info));
}

} // namespace dltrace::simulator
