// SPDX-License-Identifier: GPL-2.0-only
// DltraceJobSpec: models::JobPlacement (the --job syntax every simulator
// takes, parsed in models/) with its start as an ns-3 time.
#include "dltrace-job-spec.h"

#include "ns3/log.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceJobSpec");

bool
DltraceJobSpec::Parse(const std::string& text, DltraceJobSpec* out, std::string* error)
{
    return dltrace::models::ParseJobPlacement(text, out, error);
}

Time
DltraceJobSpec::GetStart() const
{
    return NanoSeconds(int64_t(start_ns));
}

} // namespace ns3
