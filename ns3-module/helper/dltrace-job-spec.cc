// DltraceJobSpec: models::JobPlacement (the --job syntax every simulator
// takes, parsed in models/) with ns-3 times.
#include "dltrace-job-spec.h"

#include "ns3/log.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("DltraceJobSpec");

dltrace::models::JobPlacement
DltraceJobSpec::ToPlacement() const
{
    dltrace::models::JobPlacement p;
    p.trace = trace;
    p.schedule = schedule;
    p.lower = lower;
    p.iterations = int32_t(iterations);
    p.time_scale = timeScale;
    p.hosts = hosts;
    p.start_ns = uint64_t(start.GetNanoSeconds());
    p.priority = priority;
    return p;
}

DltraceJobSpec
DltraceJobSpec::FromPlacement(const dltrace::models::JobPlacement& p)
{
    DltraceJobSpec spec;
    spec.trace = p.trace;
    spec.schedule = std::const_pointer_cast<dltrace::models::Schedule>(p.schedule);
    spec.lower = p.lower;
    spec.iterations = uint32_t(std::max(p.iterations, 0));
    spec.timeScale = p.time_scale;
    spec.hosts = p.hosts;
    spec.start = NanoSeconds(int64_t(p.start_ns));
    spec.priority = p.priority;
    return spec;
}

bool
DltraceJobSpec::Parse(const std::string& text, DltraceJobSpec* out, std::string* error)
{
    dltrace::models::JobPlacement p = out->ToPlacement();
    if (!dltrace::models::ParseJobPlacement(text, &p, error))
    {
        return false;
    }
    *out = FromPlacement(p);
    return true;
}

} // namespace ns3
