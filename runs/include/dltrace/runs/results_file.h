// SPDX-License-Identifier: GPL-2.0-only
// The results file every executor writes (socket replay, ns-3, and any later
// one): per endpoint, per-op and per-iteration rows as JSON, written whole or
// not at all. The format is owned here and nowhere else.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dltrace/models/schedule.h"
#include "dltrace/executor/schedule_executor.h"

namespace dltrace::runs {

constexpr char kResultsFormat[] = "dltrace-results";
constexpr int kResultsVersion = 1;

struct OpRow {
  uint32_t op = 0;
  std::string kind;        // recorded call, e.g. "ncclAllReduce"
  std::string collective;  // e.g. "AllReduce"
  int32_t iteration = 0;
  uint64_t start_ns = 0, end_ns = 0;
  uint64_t bytes = 0;      // the op's size as recorded (nccl-tests "size")
  uint64_t sent_bytes = 0, received_bytes = 0;  // by this endpoint
  double algbw_gbps = 0;   // bytes / duration, GB/s (nccl-tests algbw)
};

struct IterationRow {
  int32_t iteration = 0;
  uint64_t start_ns = 0, end_ns = 0;
};

// One results file: one endpoint of one run.
struct ResultsFile {
  std::string source;  // "replay", "ns3", "recorded"
  std::string trace;
  std::string algorithm;
  uint64_t schedule_hash = 0;
  int32_t endpoint = -1;
  int32_t endpoints = 0;
  bool complete = false;
  std::string error;
  uint64_t clock_origin_ns = 0;
  uint64_t duration_ns = 0;
  uint64_t bytes_sent = 0, bytes_received = 0;
  uint64_t bytes_scheduled_send = 0, bytes_scheduled_recv = 0;
  // Of bytes_sent/received: same-host steps timed on the schedule's local link.
  uint64_t bytes_local_sent = 0, bytes_local_received = 0;
  uint64_t bytes_reduced = 0;  // of bytes_received: added into the host's own (socket replay)
  std::vector<OpRow> ops;
  std::vector<IterationRow> iterations;
};

// Rows of RESULT for SCHEDULE's ops (those this endpoint took part in).
ResultsFile MakeResultsFile(const models::Schedule& schedule, const executor::RankResult& result);
// Every endpoint's file of a run an executor holds in memory (a simulation):
// source, trace, algorithm and the schedule's hash filled in.
std::vector<ResultsFile> MakeResultsFiles(const models::Schedule& schedule,
                                          const std::vector<executor::RankResult>& results, const std::string& source,
                                          const std::string& trace, const std::string& algorithm);

std::string ResultsToJson(const ResultsFile& results);
bool ResultsFromJson(const std::string& text, ResultsFile* results, std::string* error);

// Writes PATH through a temporary name renamed into place once complete.
bool WriteResultsFile(const ResultsFile& results, const std::string& path, std::string* error);
bool ReadResultsFile(const std::string& path, ResultsFile* results, std::string* error);
// "rank<E>.results.json"
std::string ResultsFileName(int32_t endpoint);

}  // namespace dltrace::runs
