// Reading runs of a job into one shape: recorded times from the trace set,
// replayed and simulated times from results directories.
#include "dltrace/views/runs.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "dltrace/formats/op_kind.h"
#include "dltrace/replay/results.h"

namespace dltrace::views {

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

}  // namespace

bool IsResultsDir(const std::string& path) { return !ResultsFiles(path).empty(); }

RunTimes RecordedRun(const Job& job) {
  RunTimes run;
  run.path = job.set.path;
  run.source = "recorded";
  run.algorithm = "recorded";
  run.trace = job.set.path;
  run.endpoints = job.merged.world_size;
  replay::RecordedTimes t = replay::ComputeRecordedTimes(job.merged, job.schedule);
  run.ops.resize(job.schedule.ops.size());
  for (size_t i = 0; i < job.schedule.ops.size(); ++i) {
    const models::ScheduleOp& op = job.schedule.ops[i];
    OpTime& o = run.ops[i];
    o.kind = formats::OpKindName(op.kind);
    o.collective = formats::CollectiveName(op.collective);
    o.iteration = op.iteration;
    o.bytes = op.bytes;
    o.ns = t.op_ns[i];
    o.seen = op.source == models::ScheduleOp::Source::kCollective ||
             op.source == models::ScheduleOp::Source::kTransfer;
  }
  run.iteration_ns = t.iteration_ns;
  run.fct_note = "a recorded run has no flow-level view";
  // A rank file missing, torn or corrupt: the recorded times lack its ops.
  if (!job.set.warnings.empty()) {
    run.complete = false;
    run.error = job.set.warnings.front();
  }
  return run;
}

bool LoadResultsRun(const std::string& dir, RunTimes* run, std::string* error) {
  std::vector<std::string> files = ResultsFiles(dir);
  if (files.empty()) {
    *error = dir + ": no rank*.results.json files (not a replay or simulate results directory)";
    return false;
  }
  run->path = dir;
  for (size_t k = 0; k < files.size(); ++k) {
    replay::ResultsFile f;
    if (!replay::ReadResultsFile(files[k], &f, error)) return false;
    if (k == 0) {
      run->source = f.source;
      run->algorithm = f.algorithm;
      run->trace = f.trace;
      run->schedule_hash = f.schedule_hash;
      run->endpoints = f.endpoints;
    } else if (f.schedule_hash != run->schedule_hash || f.source != run->source) {
      *error = files[k] + ": from another run than " + files[0] + " (schedule hash or source differs)";
      return false;
    }
    if (!f.complete) {
      run->complete = false;
      if (run->error.empty()) run->error = files[k] + ": " + f.error;
    }
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
    for (const auto& row : f.iterations) {
      if (row.iteration < 0) continue;
      if (size_t(row.iteration) >= run->iteration_ns.size()) run->iteration_ns.resize(size_t(row.iteration) + 1, 0);
      if (row.end_ns >= row.start_ns)
        run->iteration_ns[size_t(row.iteration)] =
            std::max(run->iteration_ns[size_t(row.iteration)], double(row.end_ns - row.start_ns));
    }
  }
  if (int32_t(files.size()) != run->endpoints) {
    run->complete = false;
    if (run->error.empty())
      run->error = dir + ": " + std::to_string(files.size()) + " results files, the run had " +
                   std::to_string(run->endpoints) + " endpoints";
  }
  LoadFlows(dir, run);
  return true;
}

}  // namespace dltrace::views
