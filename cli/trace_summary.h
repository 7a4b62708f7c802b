// SPDX-License-Identifier: GPL-2.0-only
// The facts `dltrace info` (and the summary after `dltrace record`) show
// about a trace set, computed once and printed as text or JSON.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dltrace/formats/trace_set.h"

namespace dltrace::cli {

// A communicator as models::Merge matched it across rank files (the lowering
// uses the same match).
struct CommunicatorSummary {
  int id = 0;  // index in MergedTrace::comms (of the first rank's copy when per_rank)
  std::string api;
  std::string name;
  int32_t size = 0;
  std::vector<int32_t> members;  // global ranks; empty unless every one is known
  // MPI_COMM_SELF: one communicator per rank, shown once; `size` is each
  // copy's (1) and `members` the ranks that have one.
  bool per_rank = false;
  uint64_t nccl_unique_id_hash = 0;
  uint64_t ops = 0;
};

struct OpKindSummary {
  std::string kind;  // "MPI_Allreduce"
  uint64_t calls = 0;
  uint64_t bytes = 0;
  double time_s = 0;  // sum of durations (GPU where known)
  double algbw_gbps = 0;  // bytes / time, GB/s = 1e9 B/s
  double busbw_gbps = 0;  // nccl-tests bus bandwidth
  bool timed = false;
};

struct RankSummary {
  int32_t rank = -1;
  std::string host;
  int32_t local_rank = -1;
  int32_t pid = 0;
  uint64_t ops = 0;
  uint64_t bytes = 0;
  uint64_t dropped = 0;
  uint64_t samples = 0;
  std::string status;
  std::string file;
  std::vector<formats::SkippedBytes> skipped;  // corrupt chunks the reader skipped
  std::string write_error;                     // the recorder's, from the footer
};

struct TraceSummary {
  std::string path;
  int32_t world_size = 0;
  size_t ranks_found = 0;
  bool complete = true;
  std::vector<std::string> warnings;
  std::string recorder_version, mpi_version, nccl_version, job_id;
  std::map<std::string, std::vector<int32_t>> hosts;
  double time_span_s = 0;
  uint64_t events = 0, dropped = 0, samples = 0, bytes = 0;
  std::vector<CommunicatorSummary> communicators;
  std::vector<OpKindSummary> op_kinds;  // most calls first
  std::vector<RankSummary> ranks;
  // Calls that move data the recorder saw but could not record, by name
  // (all ranks together; from the footers).
  std::map<std::string, uint64_t> unrecorded;
};

// "MPI_Mrecv 4, MPI_Put 1" (empty when nothing went unrecorded).
std::string UnrecordedText(const TraceSummary& s);

TraceSummary Summarize(const formats::TraceSet& set);
std::string SummaryText(const TraceSummary& s);
std::string SummaryJson(const TraceSummary& s);

// "0-3,5,7-8"
std::string RankList(const std::vector<int32_t>& ranks);
// "1.23 GB"
std::string HumanBytes(double bytes);

}  // namespace dltrace::cli
