// The one writer of a simulation's outputs: results files through
// results_file.h, flows.csv and links.csv through atomic_file.h, and the
// summary through comparison.h, from the records any backend hands back.
#include "dltrace/runs/simulation_output.h"

#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <utility>

#include "dltrace/runs/atomic_file.h"
#include "dltrace/runs/comparison.h"
#include "dltrace/runs/results_file.h"
#include "dltrace/runs/run.h"

namespace dltrace::runs {

void AppendFlowsFromResults(uint32_t job, const models::Schedule& schedule,
                            const std::vector<executor::RankResult>& results, uint64_t job_start_ns,
                            std::vector<FlowRecord>* flows) {
  // Per receiver: (sender, tag) -> its receive step.
  std::vector<std::map<std::pair<int32_t, uint64_t>, size_t>> recv_step(schedule.ranks.size());
  for (size_t e = 0; e < schedule.ranks.size(); ++e) {
    const auto& steps = schedule.ranks[e].steps;
    for (size_t i = 0; i < steps.size(); ++i)
      if (steps[i].type == models::StepType::kRecv) recv_step[e][{steps[i].peer, steps[i].tag}] = i;
  }
  for (size_t e = 0; e < schedule.ranks.size() && e < results.size(); ++e) {
    const auto& steps = schedule.ranks[e].steps;
    for (size_t i = 0; i < steps.size(); ++i) {
      const auto& s = steps[i];
      if (s.type != models::StepType::kSend || !results[e].steps[i].valid || size_t(s.peer) >= results.size())
        continue;
      auto it = recv_step[size_t(s.peer)].find({int32_t(e), s.tag});
      if (it == recv_step[size_t(s.peer)].end()) continue;
      const auto& t = results[size_t(s.peer)].steps[it->second];
      const uint64_t send_start = results[e].steps[i].start_ns;
      if (!t.valid || t.end_ns < t.start_ns || t.end_ns == 0 || t.end_ns < send_start) continue;
      flows->push_back({job, s.op, int32_t(e), s.peer, s.channel, s.bytes, s.local, job_start_ns + send_start,
                        job_start_ns + t.end_ns});
    }
  }
}

std::vector<ResultsFile> JobResultsFiles(const SimulationRecords& records, size_t j) {
  const SimulatedJob& job = records.jobs.at(j);
  return MakeResultsFiles(*job.schedule, job.results, records.source, job.trace, job.algorithm);
}

namespace {

bool WriteFlows(const std::vector<FlowRecord>& flows, const std::string& path, std::string* error) {
  AtomicFile out(path);
  if (!out.Open(error)) return false;
  std::fputs("job,op,src,dst,channel,bytes,local,start_s,end_s,fct_ns\n", out.get());
  for (const FlowRecord& f : flows)
    std::fprintf(out.get(), "%u,%u,%d,%d,%u,%" PRIu64 ",%d,%.9f,%.9f,%" PRIu64 "\n", f.job, f.op, f.src, f.dst,
                 unsigned(f.channel), f.bytes, f.local ? 1 : 0, double(f.start_ns) * 1e-9, double(f.end_ns) * 1e-9,
                 f.end_ns - f.start_ns);
  return out.Commit(error);
}

bool WriteLinks(const LinkSamples& links, const std::string& path, std::string* error) {
  AtomicFile out(path);
  if (!out.Open(error)) return false;
  std::fputs("time_s,link,bytes,utilisation\n", out.get());
  for (size_t i = 0; i < links.time_s.size(); ++i) {
    const double dt = links.time_s[i] - (i ? links.time_s[i - 1] : 0.0);
    for (size_t d = 0; d < links.names.size(); ++d) {
      const double b = links.bytes[i][d];
      std::fprintf(out.get(), "%.9g,%s,%.0f,%.4g\n", links.time_s[i], links.names[d].c_str(), b,
                   dt > 0 ? b * 8.0 / (links.rate_bps[d] * dt) : 0.0);
    }
  }
  return out.Commit(error);
}

}  // namespace

bool WriteSimulationOutputs(const SimulationRecords& records, const std::string& dir, std::string* error) {
  for (size_t j = 0; j < records.jobs.size(); ++j) {
    std::string job_dir = dir;
    if (records.jobs.size() > 1) {
      job_dir = dir + "/job" + std::to_string(j);
      if (mkdir(job_dir.c_str(), 0777) != 0 && errno != EEXIST) {
        *error = job_dir + ": " + std::strerror(errno);
        return false;
      }
    }
    for (const auto& f : JobResultsFiles(records, j))
      if (!WriteResultsFile(f, job_dir + "/" + ResultsFileName(f.endpoint), error)) return false;
  }
  return WriteFlows(records.flows, dir + "/flows.csv", error) && WriteLinks(records.links, dir + "/links.csv", error);
}

std::string FormatSimulationSummary(const SimulationRecords& records) {
  std::string out;
  for (const auto& line : records.header) out += line + "\n";
  char line[512];
  for (size_t j = 0; j < records.jobs.size(); ++j) {
    const SimulatedJob& job = records.jobs[j];
    const RunTimes simulated = RunFromResults(JobResultsFiles(records, j));
    uint32_t complete = 0;
    uint64_t end_ns = 0;
    std::string first_error;
    for (const auto& r : job.results) {
      complete += r.complete ? 1 : 0;
      end_ns = std::max(end_ns, r.end_ns);
      if (!r.complete && first_error.empty()) first_error = "endpoint " + std::to_string(r.endpoint) + ": " + r.error;
    }
    const auto& h = job.hosts;
    const std::string hosts =
        h.empty() ? "-" : std::to_string(h.front()) + (h.size() > 1 ? "-" + std::to_string(h.back()) : "");
    std::snprintf(line, sizeof line, "\njob %zu: %s, algorithm %s, %zu endpoints on hosts %s, start %g s, %u/%zu "
                  "endpoints complete\n", j, job.trace.empty() ? "(schedule)" : job.trace.c_str(),
                  job.algorithm.c_str(), job.schedule->ranks.size(), hosts.c_str(), double(job.start_ns) * 1e-9,
                  complete, job.results.size());
    out += line;
    if (!first_error.empty()) out += "  first error: " + first_error + "\n";
    out += FormatAgainstRecorded(*job.schedule, job.recorded, simulated, "simulated_ms");
    std::snprintf(line, sizeof line, "job time %.3f ms; %s\n", double(end_ns) / 1e6, FormatBytes(simulated).c_str());
    out += line;
  }
  out += "\n";
  for (const auto& l : records.network) out += l + "\n";
  const double wall = records.wall_s;
  std::snprintf(line, sizeof line,
                "speed: %.6f simulated s in %.3f wall s: %.4g simulated s per wall s, %" PRIu64
                " %s, %.4g %s per wall s, peak memory %.0f MiB\n",
                records.simulated_s, wall, wall > 0 ? records.simulated_s / wall : 0.0, records.events,
                records.event_unit.c_str(), wall > 0 ? double(records.events) / wall : 0.0,
                records.event_unit.c_str(), double(records.peak_rss_kb) / 1024);
  out += line;
  return out;
}

long PeakRssKb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

}  // namespace dltrace::runs
