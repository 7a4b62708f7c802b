// SPDX-License-Identifier: GPL-2.0-only
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
#include <functional>
#include <map>
#include <utility>

#include "dltrace/executor/schedule_tools.h"
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
      flows->push_back({job, s.op(), int32_t(e), s.peer, s.channel, s.bytes, s.local, job_start_ns + send_start,
                        job_start_ns + t.end_ns});
    }
  }
}

bool ForEachJobResultsFile(const SimulationRecords& records, size_t j,
                           const std::function<bool(const ResultsFile&)>& fn) {
  const SimulatedJob& job = records.jobs.at(j);
  const uint64_t hash = job.schedule_hash ? *job.schedule_hash : executor::ScheduleHash(*job.schedule);
  for (const auto& r : job.results) {
    ResultsFile f = MakeResultsFile(*job.schedule, r);
    f.source = records.source;
    f.trace = job.trace;
    f.algorithm = job.algorithm;
    f.schedule_hash = hash;
    if (!fn(f)) return false;
  }
  return true;
}

std::vector<ResultsFile> JobResultsFiles(const SimulationRecords& records, size_t j) {
  std::vector<ResultsFile> files;
  ForEachJobResultsFile(records, j, [&files](const ResultsFile& f) {
    files.push_back(f);
    return true;
  });
  return files;
}

bool FlowsCsvWriter::Open(std::string* error) {
  if (!out_.Open(error)) return false;
  std::fputs("job,op,src,dst,channel,bytes,local,start_s,end_s,fct_ns\n", out_.get());
  return true;
}

namespace {

char* PutUnsigned(char* p, uint64_t v) {
  char digits[20];
  int n = 0;
  do {
    digits[n++] = char('0' + v % 10);
    v /= 10;
  } while (v > 0);
  while (n > 0) *p++ = digits[--n];
  return p;
}

char* PutSigned(char* p, int64_t v) {
  if (v < 0) {
    *p++ = '-';
    return PutUnsigned(p, uint64_t(0) - uint64_t(v));
  }
  return PutUnsigned(p, uint64_t(v));
}

// NS as printf's "%.9f" of double(NS) * 1e-9, without printf. Below 1e15 ns
// (a million seconds) that double is within 2.3e-16 of NS / 1e9 relative, far
// less than the half nanosecond that would change the ninth decimal, so the
// digits are NS's own; above, printf does it.
char* PutSeconds(char* p, uint64_t ns) {
  constexpr uint64_t kExactBelowNs = 1000000000000000;
  if (ns >= kExactBelowNs) return p + std::snprintf(p, 40, "%.9f", double(ns) * 1e-9);
  p = PutUnsigned(p, ns / 1000000000);
  *p++ = '.';
  uint64_t frac = ns % 1000000000;
  for (int i = 8; i >= 0; --i) {
    p[i] = char('0' + frac % 10);
    frac /= 10;
  }
  return p + 9;
}

}  // namespace

size_t FormatFlowsCsvRow(const FlowRecord& f, char* row) {
  char* p = row;
  p = PutUnsigned(p, f.job);
  *p++ = ',';
  p = PutUnsigned(p, f.op);
  *p++ = ',';
  p = PutSigned(p, f.src);
  *p++ = ',';
  p = PutSigned(p, f.dst);
  *p++ = ',';
  p = PutUnsigned(p, f.channel);
  *p++ = ',';
  p = PutUnsigned(p, f.bytes);
  *p++ = ',';
  *p++ = f.local ? '1' : '0';
  *p++ = ',';
  p = PutSeconds(p, f.start_ns);
  *p++ = ',';
  p = PutSeconds(p, f.end_ns);
  *p++ = ',';
  p = PutUnsigned(p, f.end_ns - f.start_ns);
  *p++ = '\n';
  return size_t(p - row);
}

void FlowsCsvWriter::Add(const FlowRecord& f) {
  char row[kFlowsCsvRowMax];
  std::fwrite(row, 1, FormatFlowsCsvRow(f, row), out_.get());
  ++rows_;
}

bool FlowsCsvWriter::Commit(std::string* error) { return out_.Commit(error); }

bool LinksCsvWriter::Open(std::vector<std::string> names, std::vector<double> rate_bps, std::string* error) {
  names_ = std::move(names);
  rate_bps_ = std::move(rate_bps);
  if (!out_.Open(error)) return false;
  std::fputs("time_s,link,bytes,utilisation\n", out_.get());
  return true;
}

void LinksCsvWriter::Add(double time_s, const std::vector<double>& bytes) {
  const double dt = time_s - last_time_s_;
  for (size_t d = 0; d < names_.size(); ++d) {
    const double b = bytes[d];
    std::fprintf(out_.get(), "%.9g,%s,%.0f,%.4g\n", time_s, names_[d].c_str(), b,
                 dt > 0 ? b * 8.0 / (rate_bps_[d] * dt) : 0.0);
  }
  last_time_s_ = time_s;
}

bool LinksCsvWriter::Commit(std::string* error) { return out_.Commit(error); }

namespace {

bool WriteFlows(const std::vector<FlowRecord>& flows, const std::string& path, std::string* error) {
  FlowsCsvWriter out(path);
  if (!out.Open(error)) return false;
  for (const FlowRecord& f : flows) out.Add(f);
  return out.Commit(error);
}

bool WriteLinks(const LinkSamples& links, const std::string& path, std::string* error) {
  LinksCsvWriter out(path);
  if (!out.Open(links.names, links.rate_bps, error)) return false;
  for (size_t i = 0; i < links.time_s.size(); ++i) out.Add(links.time_s[i], links.bytes[i]);
  return out.Commit(error);
}

}  // namespace

namespace {

// A fabric of hosts with several GPUs, NIC ports or planes: one whose NICs
// are worth a file of their own (a classic one-link-per-host topology's are
// its links.csv host links).
bool HasNicsToReport(const SimulationRecords& records) {
  if (!records.fabric || records.link_bytes.empty()) return false;
  const models::TopologyGraph& g = *records.fabric;
  size_t ports = 0;
  for (const auto& l : g.links) ports += l.host_link;
  return g.gpus_per_host > 1 || g.planes > 1 || ports > g.hosts;
}

bool WriteNics(const SimulationRecords& records, const std::string& path, std::string* error) {
  if (!HasNicsToReport(records)) return true;
  const models::TopologyGraph& g = *records.fabric;
  const models::FabricLoad load = models::ComputeFabricLoad(g, records.link_bytes);
  if (load.ports.empty()) return true;
  AtomicFile out(path);
  if (!out.Open(error)) return false;
  std::fputs("port,gpu,host,rail,plane,rate_bps,sent_bytes,received_bytes\n", out.get());
  for (const auto& p : load.ports)
    std::fprintf(out.get(), "%s,%s,%u,%d,%d,%" PRIu64 ",%.0f,%.0f\n", g.links[p.link].name.c_str(),
                 g.names[p.gpu].c_str(), g.MachineOf(p.gpu), p.rail, p.plane, g.links[p.link].rate_bps, p.sent,
                 p.received);
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
    if (!ForEachJobResultsFile(records, j, [&](const ResultsFile& f) {
          return WriteResultsFile(f, job_dir + "/" + ResultsFileName(f.endpoint), error);
        }))
      return false;
  }
  return (records.flows_written || WriteFlows(records.flows, dir + "/flows.csv", error)) &&
         (records.links_written || WriteLinks(records.links, dir + "/links.csv", error)) &&
         WriteNics(records, dir + "/nics.csv", error);
}

std::vector<std::string> FormatFabricLoad(const SimulationRecords& records) {
  std::vector<std::string> lines;
  if (!HasNicsToReport(records)) return lines;
  const models::TopologyGraph& g = *records.fabric;
  const models::FabricLoad load = models::ComputeFabricLoad(g, records.link_bytes);
  if (load.ports.empty()) return lines;
  char line[256];
  auto gb = [](double b) { return b / 1e9; };
  std::snprintf(line, sizeof line,
                "fabric: %.6g GB sent through %zu NIC ports of %u GPUs on %u hosts, %.6g GB over NVLink; "
                "NIC imbalance (max/mean) %.3f",
                gb(load.nic_sent), load.ports.size(), g.hosts, g.Machines(), gb(load.nvlink_sent),
                models::FabricLoad::Imbalance(load.per_nic));
  lines.push_back(line);
  auto per = [&](const char* what, const std::vector<double>& v) {
    if (v.size() < 2) return;
    std::string l = std::string("fabric: per ") + what + " GB sent:";
    for (size_t i = 0; i < v.size(); ++i) {
      std::snprintf(line, sizeof line, " %s%zu %.6g", what[0] == 'r' ? "r" : "p", i, gb(v[i]));
      l += line;
    }
    std::snprintf(line, sizeof line, "; imbalance %.3f", models::FabricLoad::Imbalance(v));
    lines.push_back(l + line);
  };
  per("rail", load.per_rail);
  per("plane", load.per_plane);
  return lines;
}

std::string FormatSimulationSummary(const SimulationRecords& records) {
  std::string out;
  for (const auto& line : records.header) out += line + "\n";
  char line[512];
  for (size_t j = 0; j < records.jobs.size(); ++j) {
    const SimulatedJob& job = records.jobs[j];
    RunTimes simulated;
    std::string ignored;  // files made together from one schedule never disagree
    ForEachJobResultsFile(records, j, [&](const ResultsFile& f) {
      AddResults(f, "endpoint " + std::to_string(f.endpoint), &simulated, &ignored);
      return true;
    });
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
    out += FormatAgainstRecorded(CompareRuns({job.recorded, simulated}, nullptr), "simulated_ms");
    std::snprintf(line, sizeof line, "job time %.3f ms; %s\n", double(end_ns) / 1e6, FormatBytes(simulated).c_str());
    out += line;
  }
  out += "\n";
  for (const auto& l : records.network) out += l + "\n";
  for (const auto& l : FormatFabricLoad(records)) out += l + "\n";
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
