// SPDX-License-Identifier: GPL-2.0-only
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
 * \brief One job of a scenario: models::JobPlacement (a trace set or a
 * schedule built in code, how to lower it, which hosts it runs on and when it
 * starts), the one job description every simulator takes.
 */
struct DltraceJobSpec : dltrace::models::JobPlacement
{
    /// TEXT (models::ParseJobPlacement syntax) onto *OUT, whose fields are the defaults.
    static bool Parse(const std::string& text, DltraceJobSpec* out, std::string* error);
    /// The start offset as an ns-3 time.
    Time GetStart() const;
};

} // namespace ns3

#endif /* DLTRACE_JOB_SPEC_H */
