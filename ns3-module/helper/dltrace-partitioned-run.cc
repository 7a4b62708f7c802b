// SPDX-License-Identifier: GPL-2.0-only
// DltracePartitionedRun: MPI for partitioned runs, only where the ns-3 build
// has its mpi module (DLTRACE_NS3_MPI); elsewhere Enable() says how to get one.
#include "dltrace-partitioned-run.h"

#include "ns3/global-value.h"
#include "ns3/simulator.h"
#include "ns3/string.h"

#include <cstdlib>

#ifdef DLTRACE_NS3_MPI
#include "ns3/mpi-interface.h"

#include <mpi.h>
#endif

namespace ns3
{

#ifdef DLTRACE_NS3_MPI
struct DltracePartitionedRun::Pending
{
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Request request = MPI_REQUEST_NULL;
    int local = 0;
    int all = 0;
    bool posted = false;
};
#else
struct DltracePartitionedRun::Pending
{
};
#endif

bool
DltracePartitionedRun::Built()
{
#ifdef DLTRACE_NS3_MPI
    return true;
#else
    return false;
#endif
}

uint32_t
DltracePartitionedRun::LauncherSize()
{
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    {
        if (const char* v = std::getenv(name); v && *v)
        {
            return uint32_t(std::strtoul(v, nullptr, 10));
        }
    }
    return 0;
}

bool
DltracePartitionedRun::Enable(const std::string& pdes, uint32_t partitions, std::string* error)
{
    std::string impl;
    if (pdes == "null-message")
    {
        impl = "ns3::NullMessageSimulatorImpl";
    }
    else if (pdes == "barrier")
    {
        impl = "ns3::DistributedSimulatorImpl";
    }
    else
    {
        *error = "--pdes " + pdes + ": null-message or barrier";
        return false;
    }
#ifdef DLTRACE_NS3_MPI
    GlobalValue::Bind("SimulatorImplementationType", StringValue(impl));
    static int argc = 0;
    static char** argv = nullptr;
    MpiInterface::Enable(&argc, &argv);
    if (MpiInterface::GetSize() != partitions)
    {
        *error = "--partitions " + std::to_string(partitions) + ", but the MPI launcher started " +
                 std::to_string(MpiInterface::GetSize()) + " processes (mpirun -np " +
                 std::to_string(partitions) + ")";
        return false;
    }
    return true;
#else
    (void)partitions;
    *error = NotBuiltReason();
    return false;
#endif
}

std::string
DltracePartitionedRun::NotBuiltReason()
{
    return "this ns-3 was built without MPI (its distributed simulator is in ns-3's mpi module); build "
           "the release tree with NS3_MPI=1 scripts/ns3-contrib-build.sh and rebuild dltrace";
}

bool
DltracePartitionedRun::IsEnabled()
{
#ifdef DLTRACE_NS3_MPI
    return MpiInterface::IsEnabled();
#else
    return false;
#endif
}

uint32_t
DltracePartitionedRun::Rank()
{
#ifdef DLTRACE_NS3_MPI
    return IsEnabled() ? MpiInterface::GetSystemId() : 0;
#else
    return 0;
#endif
}

uint32_t
DltracePartitionedRun::Size()
{
#ifdef DLTRACE_NS3_MPI
    return IsEnabled() ? MpiInterface::GetSize() : 1;
#else
    return 1;
#endif
}

std::string
DltracePartitionedRun::Algorithm()
{
    StringValue impl;
    GlobalValue::GetValueByName("SimulatorImplementationType", impl);
    return impl.Get();
}

DltracePartitionedRun::DltracePartitionedRun()
    : m_pending(new Pending),
      m_checks(0)
{
}

DltracePartitionedRun::~DltracePartitionedRun()
{
    delete m_pending;
}

void
DltracePartitionedRun::StartDoneCheck(Time first, Time interval, std::function<bool()> localDone)
{
    m_interval = interval;
    m_localDone = std::move(localDone);
#ifdef DLTRACE_NS3_MPI
    if (m_pending->comm == MPI_COMM_NULL)
    {
        // A communicator of our own: ns-3's messages never match ours.
        MPI_Comm_dup(MPI_COMM_WORLD, &m_pending->comm);
    }
#endif
    Simulator::Schedule(first, &DltracePartitionedRun::Check, this);
}

void
DltracePartitionedRun::Check()
{
#ifdef DLTRACE_NS3_MPI
    Pending& p = *m_pending;
    if (p.posted)
    {
        MPI_Wait(&p.request, MPI_STATUS_IGNORE);
        p.posted = false;
        if (p.all == 1)
        {
            Simulator::Stop();
            return;
        }
    }
    p.local = m_localDone() ? 1 : 0;
    MPI_Iallreduce(&p.local, &p.all, 1, MPI_INT, MPI_MIN, p.comm, &p.request);
    p.posted = true;
    ++m_checks;
    Simulator::Schedule(m_interval, &DltracePartitionedRun::Check, this);
#endif
}

void
DltracePartitionedRun::FinishDoneCheck()
{
#ifdef DLTRACE_NS3_MPI
    if (m_pending->posted)
    {
        MPI_Wait(&m_pending->request, MPI_STATUS_IGNORE);
        m_pending->posted = false;
    }
    if (m_pending->comm != MPI_COMM_NULL)
    {
        MPI_Comm_free(&m_pending->comm);
    }
#endif
}

uint64_t
DltracePartitionedRun::GetChecks() const
{
    return m_checks;
}

std::vector<std::string>
DltracePartitionedRun::GatherToFirst(const std::string& bytes)
{
    std::vector<std::string> all;
#ifdef DLTRACE_NS3_MPI
    const int size = int(Size());
    const int rank = int(Rank());
    long long mine = (long long)bytes.size();
    std::vector<long long> sizes(size_t(size), 0);
    MPI_Gather(&mine, 1, MPI_LONG_LONG, sizes.data(), 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    std::vector<int> counts(size_t(size), 0), offsets(size_t(size), 0);
    long long total = 0;
    for (int r = 0; r < size; ++r)
    {
        counts[size_t(r)] = int(sizes[size_t(r)]);
        offsets[size_t(r)] = int(total);
        total += sizes[size_t(r)];
    }
    std::string joined(rank == 0 ? size_t(total) : 0, '\0');
    MPI_Gatherv(bytes.data(), int(mine), MPI_BYTE, joined.data(), counts.data(), offsets.data(), MPI_BYTE,
                0, MPI_COMM_WORLD);
    if (rank == 0)
    {
        for (int r = 0; r < size; ++r)
        {
            all.push_back(joined.substr(size_t(offsets[size_t(r)]), size_t(counts[size_t(r)])));
        }
    }
#else
    all.push_back(bytes);
#endif
    return all;
}

void
DltracePartitionedRun::Disable()
{
#ifdef DLTRACE_NS3_MPI
    if (MpiInterface::IsEnabled())
    {
        MpiInterface::Disable();
    }
#endif
}

} // namespace ns3
