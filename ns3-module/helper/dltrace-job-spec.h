// One job of a dltrace scenario as a user gives it: a trace set (or a schedule
// built in code), its lowering, hosts and start; and the --job text syntax.
#ifndef DLTRACE_JOB_SPEC_H
#define DLTRACE_JOB_SPEC_H

#include "ns3/nstime.h"

#include "dltrace/models/algorithms.h"
#include "dltrace/models/placement.h"

#include <cstdint>
#include <memory>
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
    uint32_t priority = 0;                 ///< traffic class 0-7 (RDMA: class and PFC priority)

    /// TEXT (models::ParseJobPlacement syntax) onto *OUT, whose fields are the defaults.
    static bool Parse(const std::string& text, DltraceJobSpec* out, std::string* error);
    dltrace::models::JobPlacement ToPlacement() const;
    static DltraceJobSpec FromPlacement(const dltrace::models::JobPlacement& placement);
};

} // namespace ns3

#endif /* DLTRACE_JOB_SPEC_H */
