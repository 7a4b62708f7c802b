// Schedules the module's test suites run (dltrace-test-suite.cc,
// dltrace-rdma-test-suite.cc): one collective lowered by models/.
#ifndef DLTRACE_TEST_SCHEDULES_H
#define DLTRACE_TEST_SCHEDULES_H

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

} // namespace dltrace_test

#endif
