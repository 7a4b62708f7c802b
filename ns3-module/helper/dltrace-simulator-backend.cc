// The ns-3 module behind the one simulator interface: `dltrace simulate
// --simulator ns3`. Turns a SimulationConfig (and the ns-3 settings declared
// below) into a DltraceScenarioConfig, runs the scenario, hands back its records.
#include "dltrace-simulator-backend.h"

#include "dltrace-scenario.h"

#include "ns3/config.h"
#include "ns3/double.h"

#include "dltrace/simulator/simulator.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <memory>

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

class Ns3Simulator final : public Simulator
{
  public:
    bool Check(const SimulationConfig& config, std::string* error) override
    {
        if (config.transport != "tcp" && config.transport != "rdma")
        {
            *error = "--transport " + config.transport + ": the ns-3 simulator models tcp and rdma";
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
                                name != "rdma-egress" && name != "no-pfc";
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
        }
        return true;
    }

    bool Configure(const SimulationConfig& config, std::string* error) override
    {
        ns3::DltraceScenarioConfig& c = m_config;
        if (!config.congestion_control.empty())
        {
            if (c.transport == "rdma")
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
        c.utilInterval = ns3::NanoSeconds(int64_t(config.util_interval_ns));
        c.jobs.clear();
        for (const auto& job : config.jobs)
        {
            c.jobs.push_back(ns3::DltraceJobSpec::FromPlacement(job));
        }
        m_outDir = config.out_dir;
        if (m_pcap)
        {
            c.pcapPrefix = m_outDir + "/pcap/";
        }
        return m_scenario.Setup(c, error);
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
        if (!m_scenario.AllJobsComplete())
        {
            *error = "some endpoints did not finish";
            return false;
        }
        return true;
    }

    const runs::SimulationRecords& Records() const override
    {
        return m_scenario.GetRecords();
    }

    bool WriteOwnOutputs(const std::string& dir, std::string* error) const override
    {
        return (!m_scenario.HasFlowMonitor() || m_scenario.WriteFlowMonitor(dir, error)) &&
               m_scenario.WriteRdmaOutputs(dir, error);
    }

    std::vector<std::string> OwnOutputNames() const override
    {
        std::vector<std::string> names;
        if (m_config.transport == "rdma")
        {
            names = {"queues.csv", "pfc.csv", "qps.csv", "messages.csv"};
        }
        else if (m_config.flowMonitor)
        {
            names.push_back("flowmon.xml");
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

SettingSpec
Setting(const std::string& flag, const std::string& help, Kind kind = Kind::kText)
{
    SettingSpec s;
    s.flag = flag;
    s.help = help;
    s.kind = kind;
    return s;
}

SettingSpec
Number(const std::string& flag,
       const std::string& help,
       Bound bound,
       const std::string& defaultText = "",
       double min = 0,
       double max = 0)
{
    SettingSpec s = Setting(flag, help, Kind::kNumber);
    s.bound = bound;
    s.default_text = defaultText;
    s.min = min;
    s.max = max;
    return s;
}

SettingSpec
Repeatable(SettingSpec s)
{
    s.repeatable = true;
    return s;
}

} // namespace

void
RegisterNs3()
{
    const ns3::DltraceScenarioConfig defaults;
    SimulatorInfo info;
    info.name = "ns3";
    info.title = "ns-3";
    info.description = "packet-level ns-3 TCP or RDMA (RoCEv2, PFC, DCQCN/HPCC/TIMELY; congestion control, "
                       "queues, ECN; tens of hosts)";
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
        Setting("--scheduler", "ns-3 event scheduler: heap, map, list, calendar"),
        Number("--stop",
               "stop at this simulated time in seconds (0: when every job is done)",
               Bound::kNonNegative,
               "0"),
        Setting("--no-flowmon", "no flowmon.xml (ns-3 FlowMonitor)", Kind::kFlag),
        Setting("--pcap", "a pcap of every link under DIR/pcap/", Kind::kFlag),
        Repeatable(Setting("--cc-param",
                           "rdma: NAME=VALUE, an attribute of the congestion control (e.g. "
                           "RateAi=40000000, Eta=0.9); see README \"RDMA transport\"")),
        Setting("--rdma-egress",
                "rdma: switch egress over traffic classes: strict (priority 7 first, default) or "
                "wrr[:W0,...,W7] (weighted round robin)"),
        Setting("--no-pfc", "rdma: lossy RoCE (no PFC; drops counted, go-back-N recovers)", Kind::kFlag),
    };
    info.make = [] { return std::make_unique<Ns3Simulator>(); };
    RegisterSimulator(std::move(info));
}

} // namespace dltrace::simulator
