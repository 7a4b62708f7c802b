// SPDX-License-Identifier: GPL-2.0-only
// Reading runs of a job into one shape: recorded times from the trace set,
// replayed and simulated times from results files.
#include "dltrace/runs/run.h"

#include <dirent.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>
#include <unordered_set>

#include "dltrace/formats/op_kind.h"

namespace dltrace::runs {

namespace {

// An op's own time in the recording: from its last member entering to its last leaving.
double OwnNs(const models::MergedTrace& merged, const models::ScheduleOp& op) {
  int64_t last_enter = INT64_MIN, last_exit = INT64_MIN;
  auto note = [&](int32_t rank, int64_t index) {
    const formats::RankTrace* rt = merged.rank(rank);
    if (!rt || index < 0 || size_t(index) >= rt->ops.size()) return;
    last_enter = std::max(last_enter, rt->ops[size_t(index)].enter_ns);
    last_exit = std::max(last_exit, rt->ops[size_t(index)].exit_ns);
  };
  if (op.source == models::ScheduleOp::Source::kCollective && op.recorded < merged.calls.size()) {
    const auto& call = merged.calls[op.recorded];
    const auto& members = merged.comms[call.comm].members;
    for (size_t m = 0; m < call.parts.size() && m < members.size(); ++m) note(members[m], call.parts[m]);
  } else if (op.source == models::ScheduleOp::Source::kTransfer && op.recorded < merged.transfers.size()) {
    const auto& x = merged.transfers[op.recorded];
    note(x.src, x.send_op);
    note(x.dst, x.recv_op);
  }
  return last_exit > last_enter && last_enter != INT64_MIN ? double(last_exit - last_enter) : 0;
}

}  // namespace

double RecordedSetupNs(const models::MergedTrace& merged, const models::Schedule& schedule, int32_t* ops) {
  *ops = 0;
  // Ops whose steps first use a peer pair, in each endpoint's order. An
  // endpoint's steps take turns among a few peers: the last two it looked up
  // are known to be used (346 M steps at 16,384 ranks, 2 M lookups).
  std::vector<bool> first_use(schedule.ops.size(), false);
  std::unordered_set<uint64_t> used;
  for (size_t e = 0; e < schedule.ranks.size(); ++e) {
    int32_t recent[2] = {-1, -1};
    for (const models::Step& st : schedule.ranks[e].steps) {
      if (st.type == models::StepType::kCompute || st.peer < 0 || st.op() >= schedule.ops.size()) continue;
      const int32_t a = int32_t(e), b = st.peer;
      if (b == recent[0] || b == recent[1]) continue;
      recent[1] = recent[0];
      recent[0] = b;
      if (used.insert(uint64_t(uint32_t(std::min(a, b))) << 32 | uint32_t(std::max(a, b))).second)
        first_use[st.op()] = true;
    }
  }
  // Own times of the other ops, by (call, communicator, size).
  using Key = std::tuple<int, int32_t, uint64_t>;
  std::map<Key, std::vector<double>> others;
  std::vector<double> own(schedule.ops.size(), 0);
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    const models::ScheduleOp& op = schedule.ops[i];
    if (op.source == models::ScheduleOp::Source::kCompute) continue;
    own[i] = OwnNs(merged, op);
    if (!first_use[i] && own[i] > 0) others[{int(op.kind), op.comm, op.bytes}].push_back(own[i]);
  }
  double setup = 0;
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    const models::ScheduleOp& op = schedule.ops[i];
    if (!first_use[i] || op.iteration != 0 || own[i] <= 0) continue;
    ++*ops;
    double reference = 0;
    auto same = others.find({int(op.kind), op.comm, op.bytes});
    if (same != others.end()) {
      std::vector<double> v = same->second;
      std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
      reference = v[v.size() / 2];
    } else {
      // The nearest size of the same call on the same communicator, scaled by bytes.
      double best = -1;
      for (auto it = others.lower_bound({int(op.kind), op.comm, 0});
           it != others.end() && std::get<0>(it->first) == int(op.kind) && std::get<1>(it->first) == op.comm; ++it) {
        const uint64_t b = std::get<2>(it->first);
        const double distance = std::fabs(std::log(double(std::max<uint64_t>(b, 1)) / double(std::max<uint64_t>(op.bytes, 1))));
        if (best < 0 || distance < best) {
          best = distance;
          reference = *std::min_element(it->second.begin(), it->second.end()) * double(op.bytes) / double(std::max<uint64_t>(b, 1));
        }
      }
    }
    setup += std::max(0.0, own[i] - reference);
  }
  return setup;
}

RecordedTimes ComputeRecordedTimes(const models::MergedTrace& merged, const models::Schedule& schedule) {
  RecordedTimes t;
  t.op_ns.assign(schedule.ops.size(), 0);
  t.iteration_ns.assign(size_t(std::max(schedule.iterations, 1)), 0);
  auto start_of = [](const formats::OpEvent& e) {
    return e.gpu_start_ns && e.gpu_end_ns ? *e.gpu_start_ns : e.enter_ns;
  };
  auto end_of = [](const formats::OpEvent& e) {
    return e.gpu_start_ns && e.gpu_end_ns ? *e.gpu_end_ns : e.exit_ns;
  };
  // The job starts with its earliest rank (its first op, or its origin when
  // earlier); each iteration is done when its last op ends on any rank.
  const size_t iters = t.iteration_ns.size();
  models::IterationClock clock(iters);
  int64_t job_start = INT64_MAX;
  auto note = [&](int32_t rank, int64_t op_index, int32_t iteration, double* longest) {
    const formats::RankTrace* rt = merged.rank(rank);
    if (!rt || op_index < 0 || size_t(op_index) >= rt->ops.size()) return;
    const formats::OpEvent& e = rt->ops[size_t(op_index)];
    *longest = std::max(*longest, double(end_of(e) - start_of(e)));
    job_start = std::min(job_start, start_of(e));
    if (iteration >= 0 && size_t(iteration) < iters) clock.NoteEnd(iteration, double(end_of(e)));
  };
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    const auto& op = schedule.ops[i];
    if (op.source == models::ScheduleOp::Source::kCollective && op.recorded < merged.calls.size()) {
      const auto& call = merged.calls[op.recorded];
      const auto& members = merged.comms[call.comm].members;
      for (size_t m = 0; m < call.parts.size() && m < members.size(); ++m)
        note(members[m], call.parts[m], op.iteration, &t.op_ns[i]);
    } else if (op.source == models::ScheduleOp::Source::kTransfer && op.recorded < merged.transfers.size()) {
      const auto& x = merged.transfers[op.recorded];
      note(x.src, x.send_op, op.iteration, &t.op_ns[i]);
      note(x.dst, x.recv_op, op.iteration, &t.op_ns[i]);
    }
  }
  for (int32_t r = 0; r < merged.world_size; ++r)
    if (const formats::RankTrace* rt = merged.rank(r))
      if (int64_t origin = models::RankOriginNs(*rt); origin > 0) job_start = std::min(job_start, origin);
  if (job_start != INT64_MAX) t.iteration_ns = clock.TimesNs(double(job_start));
  // Set-up comes before iteration 0 proper: the job's time is set-up plus the iterations.
  t.setup_ns = std::min(RecordedSetupNs(merged, schedule, &t.setup_ops), t.iteration_ns.empty() ? 0.0 : t.iteration_ns[0]);
  if (!t.iteration_ns.empty()) t.iteration_ns[0] -= t.setup_ns;
  return t;
}

RunTimes RecordedRun(const models::Schedule& schedule, const models::MergedTrace* merged) {
  RunTimes run;
  run.source = "recorded";
  run.algorithm = "recorded";
  run.endpoints = merged ? merged->world_size : int32_t(schedule.ranks.size());
  RecordedTimes t;
  if (merged) t = ComputeRecordedTimes(*merged, schedule);
  t.op_ns.resize(schedule.ops.size(), 0);
  t.iteration_ns.resize(size_t(std::max(schedule.iterations, 1)), 0);
  run.ops.resize(schedule.ops.size());
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    const models::ScheduleOp& op = schedule.ops[i];
    OpTime& o = run.ops[i];
    o.kind = formats::OpKindName(op.kind);
    o.collective = formats::CollectiveName(op.collective);
    o.iteration = op.iteration;
    o.bytes = op.bytes;
    o.ns = t.op_ns[i];
    o.seen = op.source != models::ScheduleOp::Source::kCompute;
  }
  run.iteration_ns = t.iteration_ns;
  run.setup_ns = t.setup_ns;
  run.setup_ops = t.setup_ops;
  run.fct_note = "a recorded run has no flow-level view";
  return run;
}

RunTimes RecordedRun(const models::Job& job) {
  RunTimes run = RecordedRun(job.schedule, &job.merged);
  run.path = job.set.path;
  run.trace = job.set.path;
  // A rank file missing, torn or corrupt: the recorded times lack its ops.
  if (!job.set.warnings.empty()) {
    run.complete = false;
    run.error = job.set.warnings.front();
  }
  return run;
}

bool AddResults(const ResultsFile& f, const std::string& where, RunTimes* run, std::string* error) {
  if (run->source.empty()) {
    run->source = f.source;
    run->algorithm = f.algorithm;
    run->trace = f.trace;
    run->schedule_hash = f.schedule_hash;
    run->endpoints = f.endpoints;
  } else if (f.schedule_hash != run->schedule_hash || f.source != run->source) {
    *error = where + ": from another run (schedule hash or source differs)";
    return false;
  }
  if (!f.complete) {
    run->complete = false;
    if (run->error.empty()) run->error = where + ": " + f.error;
  }
  run->bytes_sent += f.bytes_sent;
  run->bytes_received += f.bytes_received;
  run->bytes_scheduled_recv += f.bytes_scheduled_recv;
  run->bytes_local_received += f.bytes_local_received;
  run->bytes_reduced += f.bytes_reduced;
  for (const auto& row : f.ops) {
    if (row.op >= run->ops.size()) run->ops.resize(row.op + 1);
    OpTime& o = run->ops[row.op];
    o.kind = row.kind;
    o.collective = row.collective;
    o.iteration = row.iteration;
    o.bytes = row.bytes;
    o.seen = true;
    if (row.end_ns >= row.start_ns) o.ns = std::max(o.ns, double(row.end_ns - row.start_ns));
  }
  // Every endpoint's times count from its own start (the job's start: the
  // replay's start barrier, a simulation's time 0 for the job).
  for (const auto& row : f.iterations)
    if (row.end_ns >= row.start_ns) run->iteration_clock.NoteEnd(row.iteration, double(row.end_ns));
  run->iteration_ns = run->iteration_clock.TimesNs(0);
  return true;
}

RunTimes RunFromResults(const std::vector<ResultsFile>& files) {
  RunTimes run;
  std::string ignored;  // files made together from one schedule never disagree
  for (const auto& f : files) AddResults(f, "endpoint " + std::to_string(f.endpoint), &run, &ignored);
  return run;
}

namespace {

std::vector<std::string> ResultsFiles(const std::string& dir) {
  std::vector<std::pair<long, std::string>> found;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* ent = readdir(d)) {
      std::string name = ent->d_name;
      const std::string suffix = ".results.json";
      if (name.rfind("rank", 0) != 0 || name.size() <= 4 + suffix.size() ||
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
        continue;
      std::string number = name.substr(4, name.size() - 4 - suffix.size());
      if (number.empty() || number.find_first_not_of("0123456789") != std::string::npos) continue;
      found.emplace_back(std::atol(number.c_str()), dir + "/" + name);
    }
    closedir(d);
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(f.second);
  return out;
}

// Flow completion times from a flows.csv with an fct_ns column.
void LoadFlows(const std::string& dir, RunTimes* run) {
  std::ifstream in(dir + "/flows.csv");
  if (!in) {
    run->fct_note = "no flows.csv in " + dir;
    return;
  }
  std::string line;
  if (!std::getline(in, line)) {
    run->fct_note = dir + "/flows.csv is empty";
    return;
  }
  std::vector<std::string> header;
  std::stringstream hs(line);
  for (std::string cell; std::getline(hs, cell, ',');) {
    while (!cell.empty() && (cell.back() == '\r' || cell.back() == ' ')) cell.pop_back();
    header.push_back(cell);
  }
  auto it = std::find(header.begin(), header.end(), "fct_ns");
  if (it == header.end()) {
    run->fct_note = dir + "/flows.csv has no fct_ns column";
    return;
  }
  const size_t column = size_t(it - header.begin());
  while (std::getline(in, line)) {
    std::stringstream ls(line);
    std::string cell;
    for (size_t c = 0; c <= column && std::getline(ls, cell, ','); ++c) {
      if (c != column) continue;
      char* end = nullptr;
      double v = std::strtod(cell.c_str(), &end);
      if (end != cell.c_str()) run->fct_ns.push_back(v);
    }
  }
  if (run->fct_ns.empty()) run->fct_note = dir + "/flows.csv lists no flows";
}

// Splits a CSV line (no quoting: dltrace writes none in these files).
std::vector<std::string> CsvCells(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream ls(line);
  for (std::string cell; std::getline(ls, cell, ',');) cells.push_back(cell);
  return cells;
}

// queues.csv (time_s,port,queue_bytes) and pfc.csv of an RDMA run, when present.
// Several jobs' results sit in DIR/job<J>/, the fabric's files in DIR.
void LoadFabric(std::string dir, RunTimes* run) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const size_t slash = dir.rfind('/');
  if (std::ifstream(dir + "/queues.csv").fail() && slash != std::string::npos &&
      dir.compare(slash + 1, 3, "job") == 0)
    dir = dir.substr(0, slash);
  std::ifstream queues(dir + "/queues.csv");
  std::string line;
  if (queues && std::getline(queues, line) && line.rfind("time_s,port,queue_bytes", 0) == 0) {
    std::map<std::string, size_t> index;
    while (std::getline(queues, line)) {
      auto c = CsvCells(line);
      if (c.size() < 3) continue;
      auto [it, added] = index.emplace(c[1], run->queues.size());
      if (added) run->queues.push_back({c[1], {}, {}, 0});
      auto& q = run->queues[it->second];
      q.t_s.push_back(std::strtod(c[0].c_str(), nullptr));
      q.bytes.push_back(std::strtod(c[2].c_str(), nullptr));
      q.peak = std::max(q.peak, q.bytes.back());
    }
    run->queues.erase(std::remove_if(run->queues.begin(), run->queues.end(),
                                     [](const RunTimes::PortQueue& q) { return q.peak <= 0; }),
                      run->queues.end());
  }
  std::ifstream pfc(dir + "/pfc.csv");
  if (pfc && std::getline(pfc, line) && line.rfind("port,priority,", 0) == 0) {
    while (std::getline(pfc, line)) {
      auto c = CsvCells(line);
      if (c.size() < 7) continue;
      double paused = std::strtod(c[6].c_str(), nullptr);
      if (paused > 0) run->paused_s.push_back({c[0] + " prio " + c[1], paused});
    }
  }
}

}  // namespace

bool IsResultsDir(const std::string& path) { return !ResultsFiles(path).empty(); }

bool LoadResultsRun(const std::string& dir, RunTimes* run, std::string* error) {
  std::vector<std::string> files = ResultsFiles(dir);
  if (files.empty()) {
    *error = dir + ": no rank*.results.json files (not a replay or simulate results directory)";
    return false;
  }
  run->path = dir;
  for (size_t k = 0; k < files.size(); ++k) {
    ResultsFile f;
    if (!ReadResultsFile(files[k], &f, error)) return false;
    if (!AddResults(f, files[k], run, error)) {
      *error = files[k] + ": from another run than " + files[0] + " (schedule hash or source differs)";
      return false;
    }
  }
  if (int32_t(files.size()) != run->endpoints) {
    run->complete = false;
    if (run->error.empty())
      run->error = dir + ": " + std::to_string(files.size()) + " results files, the run had " +
                   std::to_string(run->endpoints) + " endpoints";
  }
  LoadFlows(dir, run);
  LoadFabric(dir, run);
  return true;
}

}  // namespace dltrace::runs
