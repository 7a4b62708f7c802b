// SPDX-License-Identifier: GPL-2.0-only
// Exports of a recorded job for other tools: Chrome/Perfetto trace JSON,
// CSV of operations, GOAL schedules (LogGOPSim, ATLAHS), Chakra execution
// traces (ASTRA-sim). Every writer goes through a temporary name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dltrace/models/schedule.h"
#include "dltrace/models/job.h"

namespace dltrace::views {

struct ExportStats {
  uint64_t records = 0;  // events, rows, steps or nodes written
  uint64_t lanes = 0;    // Chrome: threads (communicator/stream lanes)
  uint64_t bytes = 0;    // size of what was written
  std::vector<std::string> files;
};

// The viewers (Perfetto UI, chrome://tracing) struggle above this size.
constexpr uint64_t kChromeTraceWarnBytes = 256ull << 20;

// One process per rank ("rank N (host)"), one thread per communicator (MPI)
// or stream (NCCL), split further so events on one thread never overlap;
// times in microseconds since the job's first op; resource samples as counters.
bool WriteChromeTrace(const models::Job& job, const std::string& path, ExportStats* stats, std::string* error);

// One row per recorded op (header in the first line).
bool WriteOpsCsv(const models::Job& job, const std::string& path, ExportStats* stats, std::string* error);

// The lowered schedule in GOAL's text form: "num_ranks N", then per endpoint
// "rank R { lN: send Bb to P tag T / recv / calc NS ... lA requires lB }".
bool WriteGoal(const models::Schedule& schedule, const std::string& path, ExportStats* stats,
               std::string* error);

// Whether this build can write Chakra traces (protobuf was found); *why says
// what to install when not.
bool ChakraAvailable(std::string* why = nullptr);
// PREFIX.<rank>.et per world rank: a GlobalMetadata record, then one Node per
// collective (COMM_COLL_NODE), point-to-point step (COMM_SEND/RECV_NODE) and
// compute gap (COMP_NODE), with data dependencies from the schedule; plus
// PREFIX.comm_groups.json mapping each pg_name to its ranks.
bool WriteChakra(const models::Job& job, const std::string& prefix, ExportStats* stats, std::string* error);

}  // namespace dltrace::views
