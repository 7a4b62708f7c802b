// dltrace compare RUN...: the recorded run, socket replays and ns-3
// simulations of one job side by side, per op kind and per iteration, with
// the difference to the first run and bus bandwidth. With --algos it first
// runs the job under each algorithm (dltrace replay --local or dltrace simulate).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <set>

#include "commands.h"
#include "dltrace/formats/op_kind.h"
#include "dltrace/views/json.h"
#include "dltrace/views/runs.h"

namespace dltrace::cli {

namespace {

struct KindRow {
  uint64_t ops = 0, bytes = 0;
  double ns = 0;
  double bus_bytes = 0;  // bytes * bus-bandwidth factor, summed
};

struct Run {
  std::string label;
  views::RunTimes times;
  std::map<std::string, KindRow> kinds;
};

formats::Collective CollectiveByName(const std::string& name) {
  for (int c = int(formats::Collective::kNone); c <= int(formats::Collective::kScan); ++c)
    if (name == formats::CollectiveName(formats::Collective(c))) return formats::Collective(c);
  return formats::Collective::kNone;
}

double Percent(double value, double base) { return base > 0 ? (value - base) / base * 100 : NAN; }

std::string LastLine(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

// Runs this program again with ARGV (after the program name), output into LOG.
int RunSelf(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> cargs;
  static char self[] = "/proc/self/exe";
  cargs.push_back(self);
  for (const auto& a : argv) cargs.push_back(const_cast<char*>(a.c_str()));
  cargs.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      close(fd);
    }
    execv("/proc/self/exe", cargs.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// Rows a CSV or JSON consumer reads: one per (section, key, run).
struct Row {
  std::string section, key, run;
  uint64_t ops = 0, bytes = 0;
  double ms = NAN, diff = NAN, busbw = NAN;
};

}  // namespace

int RunCompare(const Args& args) {
  const Command& self = FindCommand("compare");
  std::vector<std::string> paths, extra, algos;
  std::string with, out_dir;
  bool csv = false, json = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      extra.assign(args.begin() + long(i) + 1, args.end());
      break;
    } else if (a == "--csv") {
      csv = true;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--algos" && i + 1 < args.size()) {
      std::string list = args[++i];
      for (size_t start = 0; start <= list.size();) {
        size_t end = list.find(',', start);
        if (end == std::string::npos) end = list.size();
        if (end > start) algos.push_back(list.substr(start, end - start));
        start = end + 1;
      }
    } else if (a == "--with" && i + 1 < args.size()) {
      with = args[++i];
    } else if ((a == "-o" || a == "--output") && i + 1 < args.size()) {
      out_dir = args[++i];
    } else if (!a.empty() && a[0] == '-') {
      return UsageError(self, "bad option or value: " + a);
    } else {
      paths.push_back(a);
    }
  }
  if (csv && json) return UsageError(self, "give --csv or --json, not both");
  if (algos.empty() && (!with.empty() || !out_dir.empty() || !extra.empty()))
    return UsageError(self, "--with, -o and options after -- go with --algos");
  if (!algos.empty()) {
    if (paths.size() != 1) return UsageError(self, "--algos takes one TRACE");
    if (with != "replay" && with != "simulate") return UsageError(self, "--algos needs --with replay or --with simulate");
    std::set<std::string> seen;
    for (const auto& a : algos) {
      if (!models::FindAlgorithm(a)) return UsageError(self, "unknown algorithm '" + a + "'");
      if (!seen.insert(a).second) return UsageError(self, "algorithm '" + a + "' given twice");
    }
    if (out_dir.empty()) out_dir = FreshDirName("dltrace-compare-");
    if (mkdir(out_dir.c_str(), 0777) != 0 && errno != EEXIST) return Fail(out_dir + ": " + std::strerror(errno));
    const std::string trace = paths[0];
    for (const auto& algo : algos) {
      const std::string dir = out_dir + "/" + algo, log = out_dir + "/" + algo + ".log";
      if (access(dir.c_str(), F_OK) == 0)
        return Fail(dir + " exists: results of an earlier run are never overwritten");
      std::vector<std::string> argv;
      if (with == "replay") argv = {"replay", trace, "--local", "--no-progress", "--algo", algo, "-o", dir};
      else argv = {"simulate", trace, "--algo", algo, "-o", dir};
      argv.insert(argv.end(), extra.begin(), extra.end());
      std::fprintf(stderr, "dltrace compare: %s %s ... ", with == "replay" ? "replaying" : "simulating", algo.c_str());
      std::fflush(stderr);
      const auto start = std::chrono::steady_clock::now();
      int status = RunSelf(argv, log);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (status != 0) {
        std::fprintf(stderr, "failed\n");
        return Fail(algo + ": dltrace " + with + " exited with " + std::to_string(status) + " (" + log + "): " +
                    LastLine(log));
      }
      std::fprintf(stderr, "%.1f s\n", secs);
      paths.push_back(dir);
    }
  }
  if (paths.empty()) return UsageError(self, "give at least one RUN (a trace set or a results directory)");

  // Load every run; the first trace set (or the trace a results file names) is the job.
  std::string error;
  std::vector<Run> runs;
  std::unique_ptr<views::Job> job;
  for (const auto& p : paths) {
    Run run;
    if (views::IsResultsDir(p)) {
      if (!views::LoadResultsRun(p, &run.times, &error)) return Fail(error);
      if (!run.times.complete) Warn(run.times.error);
    } else {
      std::unique_ptr<views::Job> j = views::LoadJob(p, models::LowerOptions(), &error);
      if (!j) return Fail(p + " is neither a results directory (rank*.results.json) nor a trace set: " + error);
      for (const auto& w : j->set.warnings) Warn(w);
      run.times = views::RecordedRun(*j);
      if (!job) job = std::move(j);
    }
    runs.push_back(std::move(run));
  }
  if (!job)
    for (const auto& r : runs)
      if (!r.times.trace.empty() && access(r.times.trace.c_str(), F_OK) == 0) {
        job = views::LoadJob(r.times.trace, models::LowerOptions(), &error);
        if (job) break;
      }

  // Same job: every op seen in two runs has the same kind and size.
  const Run& base = runs[0];
  for (size_t k = 1; k < runs.size(); ++k) {
    const auto& a = base.times.ops;
    const auto& b = runs[k].times.ops;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
      if (!a[i].seen || !b[i].seen) continue;
      if (a[i].kind != b[i].kind || a[i].bytes != b[i].bytes || a[i].iteration != b[i].iteration)
        return Fail(paths[k] + " is not a run of the same job as " + paths[0] + ": op " + std::to_string(i) + " is " +
                    b[i].kind + " " + std::to_string(b[i].bytes) + " B in iteration " + std::to_string(b[i].iteration) +
                    " there, " + a[i].kind + " " + std::to_string(a[i].bytes) + " B in iteration " +
                    std::to_string(a[i].iteration) + " here");
    }
    if (!base.times.trace.empty() && !runs[k].times.trace.empty()) {
      char ra[4096], rb[4096];
      if (realpath(base.times.trace.c_str(), ra) && realpath(runs[k].times.trace.c_str(), rb) && std::strcmp(ra, rb) != 0)
        Warn(paths[k] + " replayed " + runs[k].times.trace + ", not " + base.times.trace + " (the ops match)");
    }
  }

  // Labels: "recorded", "replay:ring", "ns3:ps", made unique.
  std::map<std::string, int> used;
  for (auto& r : runs) {
    std::string l = r.times.source == "recorded" ? "recorded" : r.times.source + ":" + r.times.algorithm;
    if (++used[l] > 1) l += "#" + std::to_string(used[l]);
    r.label = l;
  }
  // Per op kind, over the ops every run saw (iterations a run left out are left out of all).
  size_t common_iterations = SIZE_MAX;
  for (const auto& r : runs) common_iterations = std::min(common_iterations, r.times.iteration_ns.size());
  std::set<std::string> kind_names;
  for (auto& r : runs) {
    for (size_t i = 0; i < r.times.ops.size(); ++i) {
      const views::OpTime& o = r.times.ops[i];
      if (!o.seen || o.iteration < 0 || size_t(o.iteration) >= common_iterations) continue;
      int n = r.times.endpoints;
      if (job && i < job->schedule.ops.size() && job->schedule.ops[i].comm >= 0)
        n = int(job->merged.comms[size_t(job->schedule.ops[i].comm)].members.size());
      KindRow& k = r.kinds[o.kind];
      ++k.ops;
      k.bytes += o.bytes;
      k.ns += o.ns;
      k.bus_bytes += double(o.bytes) * formats::BusBandwidthFactor(CollectiveByName(o.collective), n);
      kind_names.insert(o.kind);
    }
  }
  std::vector<Row> rows;
  for (const auto& kind : kind_names) {
    const auto& b = runs[0].kinds.count(kind) ? runs[0].kinds.at(kind) : KindRow();
    for (const auto& r : runs) {
      auto it = r.kinds.find(kind);
      if (it == r.kinds.end()) continue;
      Row row{"kind", kind, r.label, it->second.ops, it->second.bytes};
      row.ms = it->second.ns / 1e6;
      row.diff = Percent(it->second.ns, b.ns);
      row.busbw = it->second.ns > 0 ? it->second.bus_bytes / it->second.ns : NAN;  // bytes/ns = GB/s
      rows.push_back(row);
    }
  }
  // Mean iteration time from iteration 1 on (iteration 0 holds start-up), or iteration 0 alone.
  const size_t from = common_iterations > 1 ? 1 : 0;
  std::vector<double> mean(runs.size(), NAN);
  for (size_t k = 0; k < runs.size(); ++k) {
    double sum = 0;
    for (size_t i = from; i < common_iterations; ++i) sum += runs[k].times.iteration_ns[i];
    if (common_iterations > from) mean[k] = sum / double(common_iterations - from);
  }
  for (size_t i = 0; i < common_iterations; ++i)
    for (size_t k = 0; k < runs.size(); ++k) {
      Row row{"iteration", std::to_string(i), runs[k].label};
      row.ms = runs[k].times.iteration_ns[i] / 1e6;
      row.diff = Percent(runs[k].times.iteration_ns[i], runs[0].times.iteration_ns[i]);
      rows.push_back(row);
    }
  for (size_t k = 0; k < runs.size(); ++k) {
    Row row{"summary", "mean_iteration", runs[k].label};
    row.ms = mean[k] / 1e6;
    row.diff = Percent(mean[k], mean[0]);
    rows.push_back(row);
  }

  if (csv) {
    std::printf("section,key,run,ops,bytes,time_ms,diff_percent,busbw_gbps\n");
    auto num = [](double v) { return std::isfinite(v) ? std::to_string(v) : std::string(); };
    for (const auto& r : rows)
      std::printf("%s,%s,%s,%" PRIu64 ",%" PRIu64 ",%s,%s,%s\n", r.section.c_str(), r.key.c_str(), r.run.c_str(), r.ops,
                  r.bytes, num(r.ms).c_str(), num(r.diff).c_str(), num(r.busbw).c_str());
    return kExitOk;
  }
  if (json) {
    views::Json run_rows = views::Json::array(), kind_rows = views::Json::array(),
                iteration_rows = views::Json::array();
    for (size_t k = 0; k < runs.size(); ++k) {
      const auto& t = runs[k].times;
      std::vector<double> iteration_ms;
      for (size_t i = 0; i < common_iterations; ++i) iteration_ms.push_back(t.iteration_ns[i] / 1e6);
      run_rows.push_back({{"label", runs[k].label}, {"path", paths[k]}, {"source", t.source},
                          {"algorithm", t.algorithm}, {"complete", t.complete}, {"endpoints", t.endpoints},
                          {"mean_iteration_ms", mean[k] / 1e6}, {"diff_percent", Percent(mean[k], mean[0])},
                          {"iteration_ms", iteration_ms}});
    }
    for (const auto& r : rows) {
      if (r.section == "kind")
        kind_rows.push_back({{"kind", r.key}, {"run", r.run}, {"ops", r.ops}, {"bytes", r.bytes}, {"time_ms", r.ms},
                             {"diff_percent", r.diff}, {"busbw_gbps", r.busbw}});
      else if (r.section == "iteration")
        iteration_rows.push_back({{"iteration", std::stol(r.key)}, {"run", r.run}, {"time_ms", r.ms},
                                  {"diff_percent", r.diff}});
    }
    const views::Json doc = {{"runs", std::move(run_rows)}, {"kinds", std::move(kind_rows)},
                             {"iterations", std::move(iteration_rows)}};
    std::printf("%s\n", views::JsonText(doc).c_str());
    return kExitOk;
  }

  // Text: the runs, per op kind (one line per run), per iteration (one column per run).
  std::printf("# dltrace compare: %zu runs; op time = the longest endpoint's, iteration time = the longest rank's\n",
              runs.size());
  std::printf("%-22s %-9s %-10s %-9s %s\n", "run", "source", "algorithm", "complete", "path");
  for (size_t k = 0; k < runs.size(); ++k)
    std::printf("%-22s %-9s %-10s %-9s %s\n", runs[k].label.c_str(), runs[k].times.source.c_str(),
                runs[k].times.algorithm.c_str(), runs[k].times.complete ? "yes" : "NO", paths[k].c_str());
  std::printf("\nper op kind (iterations 0..%zu; diff vs %s)\n", common_iterations ? common_iterations - 1 : 0,
              runs[0].label.c_str());
  std::printf("%-18s %-22s %7s %15s %12s %8s %11s\n", "op_kind", "run", "ops", "bytes", "time_ms", "diff_%", "busbw_GB/s");
  std::string last;
  for (const auto& r : rows) {
    if (r.section != "kind") continue;
    std::printf("%-18s %-22s %7" PRIu64 " %15" PRIu64 " %12.3f %+8.1f %11.2f\n", r.key == last ? "" : r.key.c_str(),
                r.run.c_str(), r.ops, r.bytes, r.ms, r.diff, r.busbw);
    last = r.key;
  }
  std::printf("\nper iteration: time_ms (diff_%% vs %s)\n%-9s", runs[0].label.c_str(), "iteration");
  for (const auto& r : runs) std::printf(" %22s", r.label.c_str());
  std::printf("\n");
  for (size_t i = 0; i < common_iterations; ++i) {
    std::printf("%-9zu", i);
    for (size_t k = 0; k < runs.size(); ++k) {
      char cell[64];
      const double v = runs[k].times.iteration_ns[i];
      if (k == 0) std::snprintf(cell, sizeof cell, "%.3f", v / 1e6);
      else std::snprintf(cell, sizeof cell, "%.3f (%+.1f%%)", v / 1e6, Percent(v, runs[0].times.iteration_ns[i]));
      std::printf(" %22s", cell);
    }
    std::printf("\n");
  }
  std::printf("%-9s", from ? "mean 1.." : "mean");
  for (size_t k = 0; k < runs.size(); ++k) {
    char cell[64];
    if (k == 0) std::snprintf(cell, sizeof cell, "%.3f", mean[k] / 1e6);
    else std::snprintf(cell, sizeof cell, "%.3f (%+.1f%%)", mean[k] / 1e6, Percent(mean[k], mean[0]));
    std::printf(" %22s", cell);
  }
  std::printf("\n");
  if (from) std::printf("(iteration 0 includes start-up; the mean is over iterations 1..%zu)\n", common_iterations - 1);
  if (!out_dir.empty()) std::printf("results: %s\n", out_dir.c_str());
  bool complete = true;
  for (const auto& r : runs) complete = complete && r.times.complete;
  return complete ? kExitOk : kExitIncomplete;
}

}  // namespace dltrace::cli
