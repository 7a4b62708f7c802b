// One recorded job as the exporters and the report see it: the trace set,
// its merged view, the lowered schedule and a job-wide clock.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dltrace/formats/trace_set.h"
#include "dltrace/models/lower.h"
#include "dltrace/models/merge.h"
#include "dltrace/models/schedule.h"

namespace dltrace::views {

struct Job {
  formats::TraceSet set;
  models::MergedTrace merged;  // points into set: a Job is never copied or moved
  models::Schedule schedule;   // lowered with the options given to LoadJob
  std::vector<std::string> notes;  // trace-set warnings, merge problems, lowering notes
  // Per world rank, per op index in its file: the schedule op it became, or models::kNoOp.
  std::vector<std::vector<uint32_t>> schedule_op;
  // Per world rank: add to a CLOCK_MONOTONIC time of that rank to get
  // nanoseconds since the job's first recorded op (ranks on different hosts
  // are aligned through each header's realtime/monotonic pair).
  std::vector<int64_t> clock_offset;

  Job() = default;
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  int64_t JobTime(int32_t rank, int64_t monotonic_ns) const {
    return monotonic_ns + clock_offset[size_t(rank)];
  }
  // The world rank of communicator rank R in the file-local communicator COMM of RANK; -1 unknown.
  int32_t WorldRank(int32_t rank, uint32_t comm, int32_t comm_rank) const;
  // Members of the file-local communicator COMM of RANK (0 when unknown).
  size_t CommSize(int32_t rank, uint32_t comm) const;
  const models::WorldCommunicator* Comm(int32_t rank, uint32_t comm) const;
};

// Where an op ran on the timeline that matters: the GPU when timed there,
// else from the call's entry to its exit (or completion, for nonblocking calls).
struct Span {
  int64_t start_ns = 0, end_ns = 0;
  bool gpu = false;
};
Span OpSpan(const formats::OpEvent& e);

// Loads, merges and lowers PATH. False with a one-line *error when the trace
// set cannot be read at all.
std::unique_ptr<Job> LoadJob(const std::string& path, const models::LowerOptions& lower,
                             std::string* error);

// Writes CONTENT to PATH through a temporary name renamed into place.
bool WriteFileAtomically(const std::string& path, const std::string& content, std::string* error);

// For writers that stream: opens PATH.tmp.<pid>; Commit renames it to PATH,
// the destructor removes it when not committed.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  bool Open(std::string* error);
  FILE* get() const { return file_; }
  bool Commit(std::string* error);
  const std::string& path() const { return path_; }

 private:
  std::string path_, tmp_;
  FILE* file_ = nullptr;
  bool committed_ = false;
};

}  // namespace dltrace::views
