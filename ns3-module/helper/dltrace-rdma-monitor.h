// SPDX-License-Identifier: GPL-2.0-only
// What an RDMA run reports beyond the TCP outputs: queue occupancy of every
// egress port over time, PFC per port and priority, CNPs and resends per QP,
// and each message's completion time against an empty network.
#ifndef DLTRACE_RDMA_MONITOR_H
#define DLTRACE_RDMA_MONITOR_H

#include "ns3/dltrace-rdma-helper.h"
#include "ns3/dltrace-rdma-transport.h"
#include "ns3/nstime.h"
#include "ns3/object.h"

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief Samples and writes an RDMA fabric's counters.
 *
 * queues.csv (time_s, port, queue_bytes) is sampled every Interval, as
 * links.csv is, while anything else is scheduled; pfc.csv, qps.csv and
 * messages.csv are written from the counters at the end.
 */
class DltraceRdmaMonitor : public Object
{
  public:
    static TypeId GetTypeId();
    DltraceRdmaMonitor();

    /// Watches every port of FABRIC; NETWORK holds the jobs' QPs and messages.
    void Watch(const DltraceRdmaHelper* fabric, Ptr<DltraceRdmaNetwork> network);
    void Start();

    /// queues.csv, pfc.csv, qps.csv, messages.csv in DIR.
    bool Write(const std::string& dir, std::string* error) const;
    /// Two summary lines: PFC, queues, drops, ECN, CNPs, resends, slowdown.
    void PrintSummary(std::ostream& os) const;

    uint64_t GetDrops() const;
    uint64_t GetEcnMarks() const;

    /// One port's PFC counters in one class (times in ns-3 time steps).
    struct PfcRow
    {
        uint64_t pausesSent, resumesSent, pausesReceived, resumesReceived;
        int64_t pausedSteps;
    };
    /// One QP's (or UET PDC's) row of qps.csv.
    struct QpRow
    {
        uint32_t job;
        int32_t src, dst;
        uint16_t channel;
        bool uet; ///< congestion counts NACKs, not CNPs
        uint32_t priority;
        uint64_t congestion, resent, timeouts, acked;
    };
    /// One message's row of messages.csv (ns-3 time steps; delivered 0: not yet).
    struct MessageRow
    {
        uint32_t job;
        int32_t src, dst;
        uint16_t channel;
        uint32_t priority;
        uint64_t bytes;
        int64_t posted, delivered, ideal;
    };
    /// Everything the files and the summary say, from this process's fabric.
    struct Report
    {
        std::vector<PfcRow> pfc;    ///< per port, per class (port * kClasses + class)
        std::vector<uint64_t> peak; ///< per port: its largest queue (switch ports; 0 at NICs)
        std::vector<double> sampleTimes;
        std::vector<std::vector<uint64_t>> samples; ///< per sample, per port
        uint64_t drops = 0, ecnMarks = 0;
        std::vector<QpRow> qps;
        std::vector<MessageRow> messages;
        std::vector<DltraceRdmaNetwork::RemoteDelivery> remote; ///< partitioned: arrived here from elsewhere
    };
    /// This process's report (a partition's: its own ports, QPs and messages).
    Report Collect() const;
    /**
     * A partitioned run, partition 0: PARTS holds every partition's Collect(),
     * by partition. From then on Write and PrintSummary report them as one
     * run: port counters and queue samples summed (a port counts where its
     * device runs, zero elsewhere), every partition's QPs and messages, a
     * message to another partition completed by its receiver's delivery; QP
     * rows ordered by job, source, destination and channel, messages by
     * time posted (then the same).
     */
    void Merge(const std::vector<Report>& parts);

  private:
    struct Port
    {
        std::string name; ///< "leaf0-h3": the port of leaf0 towards h3
        Ptr<DltraceRdmaNetDevice> device;
        bool switchPort;
    };
    void Sample();
    /// Merge's report where there is one, else Collect()'s.
    Report Current() const;
    /// COUNT (a DltraceRdmaSwitchMmu counter) summed over every switch.
    uint64_t SumOverSwitches(uint64_t (DltraceRdmaSwitchMmu::*count)() const) const;

    Time m_interval;
    const DltraceRdmaHelper* m_fabric;
    Ptr<DltraceRdmaNetwork> m_network;
    std::vector<Port> m_ports;
    std::vector<double> m_sampleTimes;
    std::vector<std::vector<uint64_t>> m_samples; ///< per sample, per port
    std::optional<Report> m_merged;               ///< Merge's result
};

} // namespace ns3

#endif /* DLTRACE_RDMA_MONITOR_H */
