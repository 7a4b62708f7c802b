// Loading a recorded job once for every exporter and the report.
#include "dltrace/views/job.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <map>

namespace dltrace::views {

Span OpSpan(const formats::OpEvent& e) {
  Span s;
  if (e.gpu_start_ns && e.gpu_end_ns) {
    s.start_ns = *e.gpu_start_ns;
    s.end_ns = *e.gpu_end_ns;
    s.gpu = true;
  } else {
    s.start_ns = e.enter_ns;
    s.end_ns = e.completion_ns ? std::max(*e.completion_ns, e.exit_ns) : e.exit_ns;
  }
  if (s.end_ns < s.start_ns) s.end_ns = s.start_ns;
  return s;
}

const models::WorldCommunicator* Job::Comm(int32_t rank, uint32_t comm) const {
  if (rank < 0 || size_t(rank) >= merged.comm_index.size()) return nullptr;
  const auto& index = merged.comm_index[size_t(rank)];
  auto it = index.find(comm);
  return it == index.end() ? nullptr : &merged.comms[it->second];
}

int32_t Job::WorldRank(int32_t rank, uint32_t comm, int32_t comm_rank) const {
  const models::WorldCommunicator* c = Comm(rank, comm);
  if (!c || comm_rank < 0 || size_t(comm_rank) >= c->members.size()) return -1;
  return c->members[size_t(comm_rank)];
}

size_t Job::CommSize(int32_t rank, uint32_t comm) const {
  const models::WorldCommunicator* c = Comm(rank, comm);
  return c ? c->members.size() : 0;
}

std::unique_ptr<Job> LoadJob(const std::string& path, const models::LowerOptions& lower,
                             std::string* error) {
  auto job = std::make_unique<Job>();
  if (!formats::LoadTraceSet(path, &job->set, error)) return nullptr;
  job->notes = job->set.warnings;
  job->merged = models::Merge(job->set);
  for (const auto& p : job->merged.problems) job->notes.push_back(p);
  job->schedule = models::LowerTrace(job->merged, lower, &job->notes);

  // (source, recorded index) -> schedule op, then every file op through its link.
  std::map<std::pair<int, uint32_t>, uint32_t> by_recorded;
  for (uint32_t i = 0; i < job->schedule.ops.size(); ++i) {
    const auto& op = job->schedule.ops[i];
    if (op.source == models::ScheduleOp::Source::kCollective ||
        op.source == models::ScheduleOp::Source::kTransfer)
      by_recorded.emplace(std::make_pair(int(op.source), op.recorded), i);
  }
  const size_t world = size_t(std::max(job->merged.world_size, 0));
  job->schedule_op.resize(world);
  job->clock_offset.assign(world, 0);
  int64_t origin = INT64_MAX;
  for (size_t r = 0; r < world; ++r) {
    const formats::RankTrace* rt = job->merged.rank(int32_t(r));
    if (!rt) continue;
    const auto& h = rt->header;
    if (h.start_realtime_ns && h.start_monotonic_ns)
      job->clock_offset[r] = int64_t(h.start_realtime_ns) - int64_t(h.start_monotonic_ns);
    auto& ops = job->schedule_op[r];
    ops.assign(rt->ops.size(), models::kNoOp);
    for (size_t i = 0; i < rt->ops.size(); ++i) {
      origin = std::min(origin, OpSpan(rt->ops[i]).start_ns + job->clock_offset[r]);
      if (r >= job->merged.links.size() || i >= job->merged.links[r].size()) continue;
      const models::OpLink& link = job->merged.links[r][i];
      int source = -1;
      if (link.kind == models::OpLink::Kind::kCall) source = int(models::ScheduleOp::Source::kCollective);
      if (link.kind == models::OpLink::Kind::kTransfer) source = int(models::ScheduleOp::Source::kTransfer);
      auto it = by_recorded.find(std::make_pair(source, link.index));
      if (it != by_recorded.end()) ops[i] = it->second;
    }
  }
  if (origin == INT64_MAX) origin = 0;
  for (auto& o : job->clock_offset) o -= origin;
  return job;
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  tmp_ = path_ + ".tmp." + std::to_string(getpid());
}

AtomicFile::~AtomicFile() {
  if (file_) std::fclose(file_);
  if (!committed_) std::remove(tmp_.c_str());
}

bool AtomicFile::Open(std::string* error) {
  file_ = std::fopen(tmp_.c_str(), "wb");
  if (!file_) *error = tmp_ + ": " + std::strerror(errno);
  return file_ != nullptr;
}

bool AtomicFile::Commit(std::string* error) {
  bool ok = file_ && !std::ferror(file_);
  if (file_ && std::fclose(file_) != 0) ok = false;
  file_ = nullptr;
  if (!ok) {
    *error = path_ + ": write failed: " + std::strerror(errno ? errno : EIO);
    return false;
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    *error = path_ + ": " + std::strerror(errno);
    return false;
  }
  committed_ = true;
  return true;
}

bool WriteFileAtomically(const std::string& path, const std::string& content, std::string* error) {
  AtomicFile f(path);
  if (!f.Open(error)) return false;
  std::fwrite(content.data(), 1, content.size(), f.get());
  return f.Commit(error);
}
}  // namespace dltrace::views
