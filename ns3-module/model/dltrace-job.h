// SPDX-License-Identifier: GPL-2.0-only
// One training job inside a simulation: its trace set lowered to a schedule
// (shared by the job's applications), where each endpoint runs, and what each did.
#ifndef DLTRACE_JOB_H
#define DLTRACE_JOB_H

#include "ns3/ipv4-address.h"
#include "ns3/object.h"
#include "ns3/traced-callback.h"

#include "dltrace/models/algorithms.h"
#include "dltrace/models/lanes.h"
#include "dltrace/models/mltcp.h"
#include "dltrace/models/schedule.h"
#include "dltrace/models/topology.h"
#include "dltrace/executor/schedule_executor.h"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dltrace::models
{
struct Job;
}

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief A trace set lowered for one algorithm, and the results of running it.
 *
 * Every DltraceApplication of a job points to the same DltraceJob, so the
 * trace is read and lowered once. The attributes say what to load; Load()
 * does it (or SetSchedule() gives a schedule built in code, as the tests do).
 */
class DltraceJob : public Object
{
  public:
    static TypeId GetTypeId();
    DltraceJob();
    ~DltraceJob() override;

    /**
     * Reads the TraceSet attribute's trace set, merges it and lowers it with
     * the Algorithm and Channels attributes (and any SetLowerOptions()).
     * \param error set to one line naming the file and the cause on failure
     * \return false when the trace cannot be read or lowered
     */
    bool Load(std::string* error);
    /// Lowering options beyond Algorithm and Channels (servers, chunking, local link).
    void SetLowerOptions(const dltrace::models::LowerOptions& options);
    /// Uses SCHEDULE as is (no trace file); Iterations still applies.
    void SetSchedule(dltrace::models::Schedule schedule);

    const dltrace::models::Schedule& GetSchedule() const;
    /// Bytes per iteration and sent so far, shared by the job's endpoints (MLTCP).
    std::shared_ptr<dltrace::models::JobProgress> GetProgress() const;
    uint32_t GetEndpointCount() const;
    /**
     * Where the endpoints run: per endpoint its fabric endpoint node (a GPU),
     * on GRAPH, with NIC as NCCL's settings for how its traffic uses the NICs.
     * Marks a step local only where both its endpoints are on one node
     * (models::LocaliseSteps), puts NCCL's traffic through a NIC on NIC.qps
     * queue pairs (models::SplitQueuePairs: each its own connection and
     * ECMP hash), and decides each op's models::RailMode. False, with
     * *ERROR, when the queue pairs cannot be numbered.
     */
    bool Place(std::shared_ptr<const dltrace::models::TopologyGraph> graph,
               std::vector<uint32_t> nodes,
               const dltrace::models::NcclNicOptions& nic,
               std::string* error);
    /// Endpoint E's fabric node (after Place(); else E).
    uint32_t GetNode(int32_t endpoint) const;
    /**
     * The lane of a message from SRC to DST on CHANNEL of the op TAG names: a
     * connection per endpoint pair and lane. CHANNEL itself where the message
     * takes the direct path (one GPU per host, one scale-up domain, or the
     * mode's relays are the endpoints themselves); else models::MakeLane of
     * CHANNEL and the mode (models/lanes.h), so messages of different
     * RailModes never share a connection (its path is the mode's).
     */
    uint16_t GetLane(int32_t src, int32_t dst, uint16_t channel, uint64_t tag) const;
    /**
     * Per peer, the lanes ENDPOINT and the peer use: every channel below the
     * highest the pair uses (as one connection per channel always was), then
     * the lanes of other modes, ascending. Both ends of a pair get the same list.
     */
    std::map<int32_t, std::vector<uint16_t>> GetLanes(uint32_t endpoint) const;
    /// The recorded job when loaded from a file (for recorded times), else null.
    const dltrace::models::Job* GetLoadedJob() const;

    /// Where endpoint E listens: its host's address and BasePort + E.
    void SetEndpointAddress(uint32_t endpoint, Ipv4Address address);
    Ipv4Address GetEndpointAddress(uint32_t endpoint) const;
    uint16_t GetEndpointPort(uint32_t endpoint) const;
    /// The source port of ENDPOINT's first connection to PEER (its I-th lane,
    /// GetLanes(), uses FIRST + I), given by DltraceHelper; 0 when none was given (ephemeral).
    void SetSourcePort(uint32_t endpoint, int32_t peer, uint16_t first);
    uint16_t GetSourcePort(uint32_t endpoint, int32_t peer) const;

    uint32_t GetIndex() const;
    /// Traffic class 0-7 (Priority attribute).
    uint32_t GetPriority() const;
    double GetTimeScale() const;
    std::string GetTracePath() const;
    std::string GetAlgorithm() const;

    /// Called by each application when its engine finished (or failed).
    void NotifyEndpointDone(const dltrace::executor::RankResult& result);
    /// Endpoints whose engine finished so far.
    uint32_t GetEndpointsDone() const;
    bool IsDone() const;
    /// Each endpoint's result (an endpoint that never finished: complete == false).
    const std::vector<dltrace::executor::RankResult>& GetResults() const;
    /// Marks endpoints that never finished as incomplete with REASON.
    void MarkUnfinished(const std::string& reason);

  protected:
    void DoDispose() override;

  private:
    void Prepare();

    std::string m_tracePath;
    std::string m_algorithm;
    uint32_t m_channels{0};
    uint32_t m_iterations{0};
    double m_timeScale{0};
    uint16_t m_basePort{0};
    uint32_t m_index{0};
    uint32_t m_priority{0};
    dltrace::models::LowerOptions m_lower;
    bool m_lowerSet;

    std::unique_ptr<dltrace::models::Job> m_job;
    dltrace::models::Schedule m_schedule;
    std::shared_ptr<dltrace::models::JobProgress> m_progress;
    std::vector<Ipv4Address> m_addresses;
    std::map<std::pair<uint32_t, int32_t>, uint16_t> m_sourcePorts; // (endpoint, peer) -> first port
    std::shared_ptr<const dltrace::models::TopologyGraph> m_graph; // null: not placed on a fabric
    std::vector<uint32_t> m_nodes;                             // per endpoint, after Place()
    std::vector<dltrace::models::RailMode> m_opMode;           // per op
    std::vector<dltrace::executor::RankResult> m_results;
    std::vector<bool> m_done;
    uint32_t m_doneCount;

    /// Fires when the last endpoint finished: (this job).
    TracedCallback<Ptr<DltraceJob>> m_jobDone;
};

} // namespace ns3

#endif /* DLTRACE_JOB_H */
