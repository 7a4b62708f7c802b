// SPDX-License-Identifier: GPL-2.0-only
// Jobs on a shared network: which trace, lowered how, on which hosts and from
// when; the "--job TRACE[:hosts=..][:start=..][:algo=..]" spec every
// simulator takes, the placement of jobs onto topology hosts, and the one
// preparation of a job for an executor (load, lower, cut, place).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dltrace/models/algorithms.h"
#include "dltrace/models/job.h"
#include "dltrace/models/schedule.h"
#include "dltrace/models/topology.h"

namespace dltrace::models {

struct JobPlacement {
  std::string trace;                          // trace set path (empty when schedule is set)
  std::shared_ptr<const Schedule> schedule;   // used instead of trace when set (tests, code)
  LowerOptions lower;                         // algorithm, channels, ...
  int32_t iterations = 0;                     // first N iterations (0: all)
  double time_scale = 1.0;                    // compute gaps multiplied by this
  // Before PlaceJobs: the hosts to use (one per endpoint, or one per
  // gpus_per_host endpoints); empty: the next free hosts. After: per
  // endpoint, its fabric endpoint node (host * fabric GPUs per host + GPU).
  std::vector<uint32_t> hosts;
  uint32_t gpus_per_host = 0;                 // ranks per host (gpus-per-host=); 0: the fabric's GPUs per host
  NcclNicOptions nic;                         // cross-nic=, pxn=: how NCCL's traffic uses the NICs
  // "hosts=trace": the ranks the trace recorded on one host share one
  // topology host (the next free ones, in the order the hosts first appear);
  // endpoints of no recorded host (a ps server) get one each.
  bool trace_hosts = false;
  uint64_t start_ns = 0;                      // start offset
  uint32_t priority = 0;                      // traffic class 0-7 (RDMA class and PFC priority; TCP DSCP)
};

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}.
bool ParseHostList(const std::string& text, std::vector<uint32_t>* out);

// TEXT = "TRACE[:hosts=A-B|trace][:gpus-per-host=N][:start=T][:algo=A][:channels=C][:iterations=N]
// [:priority=P][:cross-nic=0|1|2][:pxn=0|1][:qps=N][:qp-split=0|1]" onto *OUT, whose fields are the
// defaults for what TEXT leaves out.
bool ParseJobPlacement(const std::string& text, JobPlacement* out, std::string* error);

// Places every job's endpoints on GPUs of a fabric with FABRIC_GPUS per
// host: the host lists left empty filled with the next hosts no job took
// yet, gpus_per_host endpoints to a host (GPU 0 up), the given ones checked
// against each job's endpoint count (ENDPOINTS[j]). GROUPS (optional, per
// job): per endpoint a group number (-1: none); endpoints of one group share
// a host (JobPlacement::trace_hosts). With one GPU per host several
// endpoints may share it (they talk over the schedule's local link); with
// more, an endpoint more than a host's GPUs is an error.
// *HOSTS_NEEDED: one past the highest host any job uses.
bool PlaceJobs(std::vector<JobPlacement>* jobs, const std::vector<uint32_t>& endpoints, uint32_t* hosts_needed,
               std::string* error, const std::vector<std::vector<int32_t>>* groups = nullptr,
               uint32_t fabric_gpus = 1);

// Placement decides what is local, not the host names a trace recorded: a
// step is local (timed on the schedule's local link by the executor) only
// where both endpoints are on one endpoint node (FABRIC_GPUS 1 and a shared
// host); every other step crosses the fabric, the scale-up domain included.
void LocaliseSteps(Schedule* schedule, const std::vector<uint32_t>& endpoint_nodes);

// NCCL_IB_QPS_PER_CONNECTION as NCCL runs it: every NCCL send and receive
// between GPUs of different scale-up domains of GRAPH (endpoint E on node
// ENDPOINT_NODES[E]; without GRAPH, of different nodes) goes over one of
// NIC.qps queue pairs, each a flow of its own (its index in the channel's bits
// above kQueuePairShift): NIC.qp_split splits each message into qps parts
// (part q of a message of tag (op, k) gets tag (op, k * qps + q), the first
// bytes % qps parts a byte more), else a connection's messages take its queue
// pairs in turn, in the sender's step order. Steps after a split receive wait
// for every part. False, with *ERROR, when a split tag would not fit.
bool SplitQueuePairs(Schedule* schedule, const std::vector<uint32_t>& endpoint_nodes, const TopologyGraph* graph,
                     const NcclNicOptions& nic, std::string* error);

// Whether steps of OP use the NICs the way NCCL's collectives do (rings and
// trees, RailMode from NcclNicOptions::ModeFor(true)) or as point-to-point
// and all-to-all traffic does.
bool RailCollective(const ScheduleOp& op);

// Job J's GROUPS entry for PlaceJobs: with hosts=trace and no host list, the
// recorded host of each rank of LOADED (which must be a trace set, else
// false with *ERROR); otherwise empty.
bool TraceHostGroups(const JobPlacement& placement, const Job* loaded, size_t j,
                     std::vector<int32_t>* group, std::string* error);

// Drops the steps of ops in iterations >= ITERATIONS (earlier steps never
// depend on later ones, so what is left is a sound schedule); 0: keeps all.
void KeepIterations(Schedule* schedule, int32_t iterations);

// A job ready for an executor: its runnable schedule (every send has its
// receive) cut to the placement's iterations, and the recorded job it came
// from (its ops and recorded times; its schedule's steps are moved out).
struct PreparedJob {
  std::unique_ptr<Job> loaded;  // null for a schedule given in code
  Schedule schedule;
};

// Loads and lowers PLACEMENT's trace with its lowering options (or takes its
// schedule), then keeps its first iterations. Notes on incomplete input
// (a truncated file, a missing rank) are in loaded->notes for the caller to
// say; the job is prepared as far as it goes.
// ON_STAGE: as JobOptions::on_stage (may be empty).
bool PrepareJob(const JobPlacement& placement, PreparedJob* out, std::string* error,
                const std::function<void(const char* stage)>& on_stage = {});

// Every job prepared, then placed on a fabric of FABRIC_GPUS per host
// (PlaceJobs, then LocaliseSteps). *HOSTS_NEEDED: one past the highest host
// any job uses.
bool PrepareJobs(std::vector<JobPlacement>* placements, std::vector<PreparedJob>* out, uint32_t* hosts_needed,
                 std::string* error, const std::function<void(const char* stage)>& on_stage = {},
                 uint32_t fabric_gpus = 1);

}  // namespace dltrace::models
