// A whole dltrace simulation: topology, congestion control and queues, one
// or more jobs placed on hosts, outputs and a summary. The `dltrace simulate`
// command and the dltrace-simulate example both drive it.
#ifndef DLTRACE_SCENARIO_H
#define DLTRACE_SCENARIO_H

#include "ns3/application-container.h"
#include "ns3/dltrace-job.h"
#include "ns3/dltrace-topology-helper.h"
#include "ns3/flow-monitor-helper.h"
#include "ns3/nstime.h"
#include "ns3/queue-disc-container.h"
#include "ns3/type-id.h"

#include "dltrace/models/algorithms.h"
#include "dltrace/runs/results_file.h"

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief One job of a scenario: a trace set (or a schedule built in code),
 * how to lower it, which hosts it runs on and when it starts.
 */
struct DltraceJobSpec
{
    std::string trace;                     ///< trace set path (empty when schedule is set)
    std::shared_ptr<dltrace::models::Schedule> schedule; ///< used instead of trace when set
    dltrace::models::LowerOptions lower;   ///< algorithm, channels, ... (algorithm "recorded")
    uint32_t iterations = 0;               ///< first N iterations (0: all)
    double timeScale = 1.0;                ///< compute gaps multiplied by this
    std::vector<uint32_t> hosts;           ///< host per endpoint; empty: the next free hosts
    Time start = Seconds(0);               ///< start offset

    /**
     * Parses "TRACE[:hosts=0-3,8][:start=0.5s][:algo=ring][:channels=2][:iterations=N]"
     * into *OUT, whose fields TEXT does not name keep their value (defaults).
     * \return false with one line in *error
     */
    static bool Parse(const std::string& text, DltraceJobSpec* out, std::string* error);
};

/**
 * \ingroup dltrace
 * \brief Everything a scenario run is configured by.
 */
struct DltraceScenarioConfig
{
    std::string topology = "star";              ///< DltraceTopologyConfig::Parse syntax
    std::string congestionControl = "TcpNewReno"; ///< any TcpCongestionOps TypeId, e.g. TcpDctcp, cubic
    std::string queueDisc = "auto"; ///< auto, fifo, red, red-ecn, codel, fq-codel, pie, pfifo-fast
    uint32_t queuePackets = 1000;   ///< switch egress queue limit, packets
    uint32_t ecnThresholdPackets = 0; ///< red-ecn marking threshold K (0: 65 at 10 Gbit/s, scaled)
    uint32_t segmentSize = 1448;      ///< TCP MSS, bytes
    uint32_t sndBufBytes = 0;         ///< TCP send buffer (0: the measured default)
    uint32_t rcvBufBytes = 0;         ///< TCP receive buffer (0: the measured default)
    Time minRto = MilliSeconds(10);   ///< TCP minimum retransmission timeout
    /// Loss recovery: "classic" (RFC 6582) or "prr". ns-3.37's PRR can leave a
    /// flow retransmitting every RTO without progress after heavy loss at a
    /// shared FIFO (seen in this module's two-job test), so classic is the default.
    std::string recovery = "classic";
    std::string scheduler = "heap";   ///< heap, map, list, calendar, priority-queue
    Time stopTime = Seconds(0);       ///< stop the simulation here (0: when every job is done)
    Time utilInterval = MilliSeconds(1); ///< link utilisation sample period (0: off)
    bool flowMonitor = true;
    std::string pcapPrefix;           ///< non-empty: pcap of every link under this prefix
    std::vector<DltraceJobSpec> jobs;
};

/// Default TCP buffers: above the bandwidth-delay product of a 100 Gbit/s
/// leaf-spine (~125 KB), and small, because ns-3.37's TcpTxBuffer::NextSeg
/// scans the send buffer per segment: dltrace-ns3-bench measured one ResNet-50
/// iteration 0.72x the wall time of 1 MiB buffers (1.34x at 4 MiB) for the
/// same simulated time.
constexpr uint32_t kDltraceDefaultSndBuf = 256u << 10;
constexpr uint32_t kDltraceDefaultRcvBuf = 256u << 10;

/**
 * Finds a TCP congestion control by name: "TcpDctcp", "ns3::TcpCubic", or
 * the short "dctcp", "cubic", "newreno", "bbr" (any case).
 * \return false with one line in *error listing the names available
 */
bool DltraceFindCongestionControl(const std::string& name, TypeId* tid, std::string* error);

/**
 * \ingroup dltrace
 * \brief Builds, runs and reports one simulation.
 *
 * Setup() checks everything a user can get wrong (trace sets, topology,
 * congestion control, placements) before anything is built, and returns one
 * line on the first problem. Run() runs until every job finished (or the stop
 * time). Call Destroy() (or let the object go) before another Setup().
 */
class DltraceScenario
{
  public:
    DltraceScenario();
    ~DltraceScenario();

    bool Setup(const DltraceScenarioConfig& config, std::string* error);
    void Run();
    /**
     * Writes DIR/rank<E>.results.json (one job) or DIR/job<J>/rank<E>.results.json
     * (several), DIR/flows.csv, DIR/links.csv and DIR/flowmon.xml, each through
     * a temporary name. DIR must exist.
     */
    bool WriteOutputs(const std::string& dir, std::string* error) const;
    /// The summary table: per job op kinds and iterations against the recorded
    /// times, bytes, network counters and simulation speed.
    void PrintSummary(std::ostream& os) const;
    void Destroy();

    uint32_t GetJobCount() const;
    Ptr<DltraceJob> GetJob(uint32_t j) const;
    /// Simulated time from the job's start to its last endpoint's end.
    Time GetJobDuration(uint32_t j) const;
    bool AllJobsComplete() const;
    const DltraceTopologyHelper& GetTopology() const;
    const DltraceTopologyConfig& GetTopologyConfig() const;
    /// Packets put on links, ECN marks and drops at the queue discs.
    uint64_t GetLinkPackets() const;
    uint64_t GetEcnMarks() const;
    uint64_t GetQueueDrops() const;
    double GetSimulatedSeconds() const;
    double GetWallSeconds() const;
    std::string GetQueueDiscDescription() const;

  private:
    struct Counter
    {
        uint64_t bytes = 0;
        uint64_t packets = 0;
    };
    struct LinkDirection
    {
        std::string name;
        uint64_t rateBps;
        Counter counter;
        uint64_t sampledBytes = 0;
    };
    struct Sample
    {
        double timeS;
        std::vector<uint64_t> bytes; // per link direction, in the interval
    };

    static void CountTx(Counter* counter, Ptr<const Packet> packet);
    /// Job J's results as the results files have them (source "ns3").
    std::vector<dltrace::runs::ResultsFile> ResultsFiles(size_t j) const;
    void SampleLinks();
    void JobDone(Ptr<DltraceJob> job);
    bool ConfigureTcp(std::string* error);
    bool InstallQueues(std::string* error);

    DltraceScenarioConfig m_config;
    DltraceTopologyConfig m_topo;
    DltraceTopologyHelper m_topology;
    TypeId m_cc;
    std::string m_queueKind;
    uint32_t m_ecnK;
    std::vector<Ptr<DltraceJob>> m_jobs;
    std::vector<DltraceJobSpec> m_specs;
    std::vector<ApplicationContainer> m_apps;
    QueueDiscContainer m_switchQueues;
    QueueDiscContainer m_hostQueues;
    Counter m_deviceDrops;
    std::vector<std::unique_ptr<LinkDirection>> m_directions;
    std::vector<Sample> m_samples;
    std::unique_ptr<FlowMonitorHelper> m_flowHelper;
    Ptr<FlowMonitor> m_flowMonitor;
    double m_wallSeconds;
    double m_simSeconds;
    bool m_built;
};

} // namespace ns3

#endif /* DLTRACE_SCENARIO_H */
