// SPDX-License-Identifier: GPL-2.0-only
// A whole dltrace simulation: topology, congestion control and queues, one
// or more jobs placed on hosts, outputs and a summary. The `dltrace simulate`
// command and the dltrace-simulate example both drive it.
#ifndef DLTRACE_SCENARIO_H
#define DLTRACE_SCENARIO_H

#include "ns3/application-container.h"
#include "ns3/dltrace-job-spec.h"
#include "ns3/dltrace-job.h"
#include "ns3/dltrace-link-monitor.h"
#include "ns3/dltrace-network-helper.h"
#include "ns3/dltrace-partition.h"
#include "ns3/dltrace-partitioned-run.h"
#include "ns3/dltrace-rdma-fast-forward.h"
#include "ns3/dltrace-rdma-helper.h"
#include "ns3/dltrace-rdma-monitor.h"
#include "ns3/dltrace-rdma-transport.h"
#include "ns3/dltrace-topology-helper.h"
#include "ns3/flow-monitor-helper.h"
#include "ns3/nstime.h"

#include "dltrace/runs/simulation_output.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief Which ns-3 this module was built against, in one line: e.g.
 * "installed ns-3 3.37 at /usr/lib/x86_64-linux-gnu (Debian package
 * libns3-dev, NS_LOG compiled in)" or "ns-3 3.37 tree at PATH (profile
 * release, NS_LOG compiled out)". Set by the build (DLTRACE_NS3_TREE).
 */
std::string DltraceNs3Build();

/**
 * \ingroup dltrace
 * \brief Everything a scenario run is configured by.
 *
 * A struct because it carries the list of jobs; the network and link fields
 * become the attributes of DltraceNetworkHelper and DltraceLinkMonitor (named
 * below), whose defaults these are (the test suite checks they agree).
 */
struct DltraceScenarioConfig
{
    std::string topology = "star";              ///< DltraceTopologyConfig::Parse syntax
    std::string congestionControl = "TcpNewReno"; ///< DltraceNetworkHelper::CongestionControl
    std::string queueDisc = "auto";   ///< DltraceNetworkHelper::QueueDisc
    uint32_t queuePackets = 1000;     ///< DltraceNetworkHelper::QueuePackets
    uint32_t ecnThresholdPackets = 0; ///< DltraceNetworkHelper::EcnThreshold (0: scaled)
    uint32_t segmentSize = 1448;      ///< DltraceNetworkHelper::SegmentSize
    uint32_t sndBufBytes = 0;         ///< DltraceNetworkHelper::SndBufSize (0: the measured default)
    uint32_t rcvBufBytes = 0;         ///< DltraceNetworkHelper::RcvBufSize (0: the measured default)
    Time minRto = MilliSeconds(10);   ///< DltraceNetworkHelper::MinRto
    std::string recovery = "classic"; ///< DltraceNetworkHelper::Recovery: classic or prr
    std::string scheduler = "canonical"; ///< canonical (DltraceCanonicalScheduler), heap, map, list, calendar, priority-queue
    Time stopTime = Seconds(0);       ///< stop the simulation here (0: when every job is done)
    Time utilInterval = MilliSeconds(1); ///< DltraceLinkMonitor::Interval (0: off)
    bool flowMonitor = true;
    std::string transport = "tcp";    ///< tcp, rdma (RoCEv2 queue pairs, PFC; DltraceRdmaHelper), or uet (Ultra Ethernet on the same fabric, no PFC)
    std::string rdmaCongestionControl = "dcqcn"; ///< rdma: none, dcqcn, hpcc, timely; uet: nscc, rccc
    std::vector<std::string> ccParams; ///< rdma: "name=value", attributes of the congestion control
    std::string rdmaEgress = "strict"; ///< rdma: switch egress "strict" or "wrr[:w0,...,w7]" (DltraceRdmaNetDevice::Scheduler)
    bool pfc = true;                   ///< rdma: DltraceRdmaSwitchMmu::PfcEnabled (false: lossy RoCE)
    bool fastForward = false;          ///< rdma: skip steady states (DltraceRdmaFastForward)
    bool fastForwardSets = false;      ///< and hold steady sets of links apart (its PerSet)
    bool outOfOrder = false;           ///< rdma: DltraceRdmaNic::OutOfOrder (selective repeat)
    std::string pcapPrefix;           ///< non-empty: pcap of every link under this prefix
    uint32_t partitions = 1;          ///< MPI processes on ns-3's distributed simulator (DltracePartition)
    std::string partitionMap;         ///< "NODE PARTITION" lines; empty: by pod or leaf
    std::string pdes = "null-message"; ///< null-message or barrier (DltracePartitionedRun)
    bool progress = false;            ///< a line on stderr before the run and every few wall seconds in it
    std::vector<DltraceJobSpec> jobs;
};

/**
 * \ingroup dltrace
 * \brief Builds, runs and reports one simulation.
 *
 * Setup() checks everything a user can get wrong (trace sets, topology,
 * congestion control, placements) before anything is built, and returns one
 * line on the first problem. Run() runs until every job finished (or the stop
 * time). Call Destroy() (or let the object go) before another Setup().
 *
 * The work is done by DltraceNetworkHelper (TCP, stack, queues, addresses),
 * DltraceHelper (applications), DltraceLinkMonitor (link counters and
 * samples); this class puts them in order. The files and the summary are
 * written by dltrace::runs (the one writer every simulator shares) from the
 * records Run() fills.
 */
class DltraceScenario
{
  public:
    DltraceScenario();
    ~DltraceScenario();

    bool Setup(const DltraceScenarioConfig& config, std::string* error);
    /**
     * True after a Setup() with partitions > 1 in a process no MPI launcher
     * started: everything was checked, nothing built; the caller starts the
     * partitions (mpirun -np N, each running the same Setup) instead of Run().
     */
    bool NeedsLaunch() const;
    /// This process's partition (0 when not partitioned).
    uint32_t GetPartitionIndex() const;
    void Run();
    /**
     * What the run produced, for dltrace::runs::WriteSimulationOutputs and
     * the summary (filled by Run()).
     */
    const dltrace::runs::SimulationRecords& GetRecords() const;
    /**
     * Writes the records through dltrace::runs::WriteSimulationOutputs
     * (DIR/rank<E>.results.json or DIR/job<J>/..., DIR/flows.csv,
     * DIR/links.csv), then DIR/flowmon.xml; each through a temporary name.
     * DIR must exist.
     */
    bool WriteOutputs(const std::string& dir, std::string* error) const;
    /// DIR/NAME (with histograms and per-probe statistics).
    bool WriteFlowMonitor(const std::string& dir,
                          std::string* error,
                          const std::string& name = "flowmon.xml") const;
    bool HasFlowMonitor() const;
    /// With --transport rdma: DIR/queues.csv, pfc.csv, qps.csv, messages.csv (else nothing).
    bool WriteRdmaOutputs(const std::string& dir, std::string* error) const;
    /// The summary (dltrace::runs::FormatSimulationSummary): per job op kinds and
    /// iterations against the recorded times, bytes, network counters and speed.
    void PrintSummary(std::ostream& os) const;
    void Destroy();

    uint32_t GetJobCount() const;
    Ptr<DltraceJob> GetJob(uint32_t j) const;
    /// Simulated time from the job's start to its last endpoint's end.
    Time GetJobDuration(uint32_t j) const;
    bool AllJobsComplete() const;
    /// Packets put on links, ECN marks and drops at the queue discs.
    uint64_t GetLinkPackets() const;
    uint64_t GetEcnMarks() const;
    uint64_t GetQueueDrops() const;
    std::string GetQueueDiscDescription() const;

  private:
    bool CreateJobs(std::string* error);
    bool ConfigureRdma(std::string* error);
    bool ConfigureUet(std::string* error);
    void BuildRdma();
    bool PlaceJobs(uint32_t* hostsNeeded, std::string* error);
    void JobDone(Ptr<DltraceJob> job);
    bool LocalEndpointsDone() const;
    void FillRecords();
    /// Progress lines (config.progress): what will be simulated, and how far it got.
    void PrintPlan() const;
    void PrintProgress();
    /// Partitioned runs: every partition's endpoints and counters gathered on partition 0.
    void MergePartitions(uint64_t* counters, size_t n);

    DltraceScenarioConfig m_config;
    DltraceTopologyConfig m_topo;
    std::shared_ptr<const dltrace::models::TopologyGraph> m_fabric; ///< the graph m_topo describes
    DltraceTopologyHelper m_topology;
    Ptr<DltraceNetworkHelper> m_network;
    Ptr<DltraceLinkMonitor> m_links;
    std::vector<Ptr<DltraceJob>> m_jobs;
    std::vector<DltraceJobSpec> m_specs;
    std::vector<ApplicationContainer> m_apps;
    std::unique_ptr<FlowMonitorHelper> m_flowHelper;
    Ptr<FlowMonitor> m_flowMonitor;
    std::unique_ptr<DltraceRdmaHelper> m_rdma; ///< the fabric, with --transport rdma
    Ptr<DltraceRdmaNetwork> m_rdmaNetwork;
    Ptr<DltraceRdmaMonitor> m_rdmaMonitor;
    Ptr<DltraceRdmaFastForward> m_fastForward; ///< with fastForward
    DltracePartition m_partition;
    std::unique_ptr<DltracePartitionedRun> m_mpi; ///< partitioned runs in an MPI process
    bool m_needsLaunch = false;
    std::vector<std::string> m_partitionLines;    ///< partition 0: one summary line per partition
    dltrace::runs::SimulationRecords m_records;
    std::chrono::steady_clock::time_point m_runStart;
    std::chrono::steady_clock::time_point m_lastProgress;
    uint64_t m_lastProgressPackets = 0;
    std::pair<uint64_t, uint64_t> m_progressTotals{0, 0}; ///< this process's steps and bytes to receive
    double m_wallSeconds;
    double m_simSeconds;
    bool m_built;
};

} // namespace ns3

#endif /* DLTRACE_SCENARIO_H */
