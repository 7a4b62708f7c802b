// SPDX-License-Identifier: GPL-2.0-only
// What the module's test suites (dltrace-test-suite.cc,
// dltrace-rdma-test-suite.cc) share: one collective lowered by models/, and
// running a scenario to read its results.
#ifndef DLTRACE_TEST_SCHEDULES_H
#define DLTRACE_TEST_SCHEDULES_H

#include "ns3/dltrace-scenario.h"
#include "ns3/fatal-error.h"

#include "dltrace/models/algorithms.h"
#include "dltrace/models/schedule.h"

#include <memory>
#include <string>

namespace dltrace_test
{

// An all-reduce of BYTES over ranks 0..N-1, lowered with algorithm ALGO.
inline std::shared_ptr<dltrace::models::Schedule>
AllReduce(const std::string& algo, int n, uint64_t bytes)
{
    dltrace::models::LowerOptions o;
    o.algorithm = algo;
    dltrace::models::CollectiveSpec spec;
    spec.collective = dltrace::formats::Collective::kAllReduce;
    spec.bytes = bytes;
    for (int i = 0; i < n; ++i)
    {
        spec.members.push_back(i);
    }
    return std::make_shared<dltrace::models::Schedule>(
        dltrace::models::LowerSingleCollective(spec, n, o));
}

// Sets up CONFIG (a set-up error is fatal), runs it, and returns what
// READ(scenario) reads from it before the scenario is destroyed.
template <typename Read>
auto
RunScenario(const ns3::DltraceScenarioConfig& config, Read read)
{
    ns3::DltraceScenario s;
    std::string error;
    if (!s.Setup(config, &error))
    {
        NS_FATAL_ERROR("scenario setup failed: " << error);
    }
    s.Run();
    auto result = read(s);
    s.Destroy();
    return result;
}

} // namespace dltrace_test

#endif
