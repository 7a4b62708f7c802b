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

    uint64_t GetPauseFrames() const;
    uint64_t GetPeakQueueBytes() const;
    uint64_t GetDrops() const;
    uint64_t GetEcnMarks() const;

  private:
    struct Port
    {
        std::string name; ///< "leaf0-h3": the port of leaf0 towards h3
        Ptr<DltraceRdmaNetDevice> device;
        bool switchPort;
    };
    void Sample();
    /// COUNT (a DltraceRdmaSwitchMmu counter) summed over every switch.
    uint64_t SumOverSwitches(uint64_t (DltraceRdmaSwitchMmu::*count)() const) const;

    Time m_interval;
    const DltraceRdmaHelper* m_fabric;
    Ptr<DltraceRdmaNetwork> m_network;
    std::vector<Port> m_ports;
    std::vector<double> m_sampleTimes;
    std::vector<std::vector<uint64_t>> m_samples; ///< per sample, per port
};

} // namespace ns3

#endif /* DLTRACE_RDMA_MONITOR_H */
