// SPDX-License-Identifier: GPL-2.0-only
// The MPI side of `dltrace simulate --partitions N`: ns-3's distributed
// simulator (null-message or global-barrier PDES), the common stop, and the
// gathering of every partition's part of the results on partition 0.
#ifndef DLTRACE_PARTITIONED_RUN_H
#define DLTRACE_PARTITIONED_RUN_H

#include "ns3/nstime.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ns3
{

/**
 * \ingroup dltrace
 * \brief One partition's process of a run on ns-3's distributed simulator.
 *
 * Follows ns-3's src/mpi/examples: the GlobalValue SimulatorImplementationType
 * is bound (ns3::NullMessageSimulatorImpl or ns3::DistributedSimulatorImpl)
 * before MpiInterface::Enable, before anything touches the simulator.
 *
 * A process cannot know on its own when the other partitions' endpoints are
 * done, so every partition checks at the same simulated times, every
 * DoneCheck interval: at each check it posts a non-blocking all-reduce of
 * "my endpoints are done" on a communicator of its own, and at the next
 * check it waits for the one before. When that says all are done, every
 * partition stops at the same simulated time (at most two intervals after
 * the last endpoint finished; the results carry each endpoint's own times).
 * The wait cannot deadlock: a partition at time T + interval has sent its
 * neighbours guarantees beyond T (null messages carry now + lookahead, and
 * the barrier algorithm's window is the same on every partition).
 */
class DltracePartitionedRun
{
  public:
    /// True when this build links ns-3's mpi module (a tree configured with --enable-mpi).
    static bool Built();
    /**
     * Processes the launcher started (Open MPI's OMPI_COMM_WORLD_SIZE,
     * PMI_SIZE, PMIX size under Slurm); 0 when this process was not started by one.
     */
    static uint32_t LauncherSize();
    /**
     * Binds the simulator implementation for PDES ("null-message" or
     * "barrier") and enables MPI; false with one line when this build has no
     * MPI, PDES is unknown or the launcher started another number than PARTITIONS.
     */
    static bool Enable(const std::string& pdes, uint32_t partitions, std::string* error);
    /// The line that refuses --partitions in a build without MPI.
    static std::string NotBuiltReason();
    static bool IsEnabled();
    static uint32_t Rank();
    static uint32_t Size();
    /// "ns3::NullMessageSimulatorImpl (null messages)" or the barrier's.
    static std::string Algorithm();

    /// At FIRST, then every INTERVAL of simulated time: stop everywhere once LOCAL_DONE holds everywhere.
    void StartDoneCheck(Time first, Time interval, std::function<bool()> localDone);
    /// Completes the last check's all-reduce (every partition posted as many); before Disable().
    void FinishDoneCheck();
    uint64_t GetChecks() const;

    /// Each partition's BYTES, in rank order, on partition 0 (empty elsewhere).
    static std::vector<std::string> GatherToFirst(const std::string& bytes);
    /// After Simulator::Destroy(): MPI_Finalize through MpiInterface::Disable.
    static void Disable();

    DltracePartitionedRun();
    ~DltracePartitionedRun();

  private:
    void Check();

    struct Pending;
    Pending* m_pending;
    Time m_interval;
    std::function<bool()> m_localDone;
    uint64_t m_checks;
};

} // namespace ns3

#endif /* DLTRACE_PARTITIONED_RUN_H */
