// Jobs on a shared network: which trace, lowered how, on which hosts and from
// when; the "--job TRACE[:hosts=..][:start=..][:algo=..]" spec every
// simulator takes, and the placement of jobs onto topology hosts.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dltrace/models/algorithms.h"
#include "dltrace/models/schedule.h"

namespace dltrace::models {

struct JobPlacement {
  std::string trace;                          // trace set path (empty when schedule is set)
  std::shared_ptr<const Schedule> schedule;   // used instead of trace when set (tests, code)
  LowerOptions lower;                         // algorithm, channels, ...
  int32_t iterations = 0;                     // first N iterations (0: all)
  double time_scale = 1.0;                    // compute gaps multiplied by this
  std::vector<uint32_t> hosts;                // host per endpoint; empty: the next free hosts
  uint64_t start_ns = 0;                      // start offset
  uint32_t priority = 0;                      // traffic class 0-7 (RDMA class and PFC priority; TCP DSCP)
};

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}.
bool ParseHostList(const std::string& text, std::vector<uint32_t>* out);

// TEXT = "TRACE[:hosts=A-B][:start=T][:algo=A][:channels=C][:iterations=N][:priority=P]"
// onto *OUT, whose fields are the defaults for what TEXT leaves out.
bool ParseJobPlacement(const std::string& text, JobPlacement* out, std::string* error);

// Fills the host lists left empty with the next hosts no job took yet, and
// checks the given ones against each job's endpoint count (ENDPOINTS[j]).
// *HOSTS_NEEDED: one past the highest host any job uses.
bool PlaceJobs(std::vector<JobPlacement>* jobs, const std::vector<uint32_t>& endpoints, uint32_t* hosts_needed,
               std::string* error);

}  // namespace dltrace::models
