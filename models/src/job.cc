// SPDX-License-Identifier: GPL-2.0-only
// Loading a recorded job once: read, merge, lower, link each file op to its
// schedule op, and put every rank's clock on one job-wide timeline.
#include "dltrace/models/job.h"

#include <algorithm>
#include <climits>
#include <map>

#include "dltrace/models/algorithms.h"

namespace dltrace::models {

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

const WorldCommunicator* Job::Comm(int32_t rank, uint32_t comm) const {
  if (rank < 0 || size_t(rank) >= merged.comm_index.size()) return nullptr;
  const auto& index = merged.comm_index[size_t(rank)];
  auto it = index.find(comm);
  return it == index.end() ? nullptr : &merged.comms[it->second];
}

int32_t Job::WorldRank(int32_t rank, uint32_t comm, int32_t comm_rank) const {
  const WorldCommunicator* c = Comm(rank, comm);
  if (!c || comm_rank < 0 || size_t(comm_rank) >= c->members.size()) return -1;
  return c->members[size_t(comm_rank)];
}

size_t Job::CommSize(int32_t rank, uint32_t comm) const {
  const WorldCommunicator* c = Comm(rank, comm);
  return c ? c->members.size() : 0;
}

namespace {

// Each file op's schedule op, and the clock offsets that start the job at 0.
void LinkAndAlign(Job* job) {
  // (source, recorded index) -> schedule op, then every file op through its link.
  std::map<std::pair<int, uint32_t>, uint32_t> by_recorded;
  for (uint32_t i = 0; i < job->schedule.ops.size(); ++i) {
    const auto& op = job->schedule.ops[i];
    if (op.source == ScheduleOp::Source::kCollective || op.source == ScheduleOp::Source::kTransfer ||
        op.source == ScheduleOp::Source::kOneSided)
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
    ops.assign(rt->ops.size(), kNoOp);
    for (size_t i = 0; i < rt->ops.size(); ++i) {
      origin = std::min(origin, OpSpan(rt->ops[i]).start_ns + job->clock_offset[r]);
      if (r >= job->merged.links.size() || i >= job->merged.links[r].size()) continue;
      const OpLink& link = job->merged.links[r][i];
      int source = -1;
      if (link.kind == OpLink::Kind::kCall) source = int(ScheduleOp::Source::kCollective);
      if (link.kind == OpLink::Kind::kTransfer) source = int(ScheduleOp::Source::kTransfer);
      if (link.kind == OpLink::Kind::kOneSided) source = int(ScheduleOp::Source::kOneSided);
      auto it = by_recorded.find(std::make_pair(source, link.index));
      if (it != by_recorded.end()) ops[i] = it->second;
    }
  }
  if (origin == INT64_MAX) origin = 0;
  for (auto& o : job->clock_offset) o -= origin;
}

}  // namespace

std::unique_ptr<Job> LoadJob(const std::string& path, const JobOptions& options, std::string* error) {
  if (!options.lower.algorithm.empty() && !FindAlgorithm(options.lower.algorithm)) {
    *error = "unknown algorithm '" + options.lower.algorithm + "' (one of " + AlgorithmNamesJoined() + ")";
    return nullptr;
  }
  auto job = std::make_unique<Job>();
  auto stage = [&options](const char* name) {
    if (options.on_stage) options.on_stage(name);
  };
  if (!formats::LoadTraceSet(path, &job->set, error)) return nullptr;
  stage("read");
  job->notes = job->set.warnings;
  job->merged = Merge(job->set);
  stage("merged");
  for (const auto& p : job->merged.problems) job->notes.push_back(p);
  job->schedule = LowerTrace(job->merged, options.lower, &job->notes, &job->forced);
  LinkAndAlign(job.get());
  stage("lowered");
  if (options.runnable) {
    auto problems = CheckSchedule(job->schedule, 1);
    stage("checked");
    if (!problems.empty()) {
      *error = path + ": the lowered schedule cannot run: " + problems[0];
      return nullptr;
    }
    if (job->schedule.ranks.empty()) {
      *error = path + ": the trace set has no endpoints to replay";
      return nullptr;
    }
  }
  return job;
}

std::unique_ptr<Job> LoadJob(const std::string& path, const LowerOptions& lower, std::string* error) {
  JobOptions options;
  options.lower = lower;
  return LoadJob(path, options, error);
}

}  // namespace dltrace::models
