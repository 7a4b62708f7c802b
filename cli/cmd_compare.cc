// SPDX-License-Identifier: GPL-2.0-only
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
#include "dltrace/models/job.h"
#include "dltrace/runs/comparison.h"
#include "dltrace/runs/json.h"

namespace dltrace::cli {

namespace {

struct Run {
  std::string path;
  runs::RunTimes times;
};

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

struct CompareOptions {
  std::vector<std::string> paths, algos;
  std::string with, out_dir;
  bool csv = false, json = false;
};

int RunCompare(CompareOptions options, const Args& extra) {
  const char* self = "compare";
  std::vector<std::string>& paths = options.paths;
  const std::vector<std::string>& algos = options.algos;
  const std::string& with = options.with;
  std::string& out_dir = options.out_dir;
  const bool csv = options.csv, json = options.json;
  if (csv && json) return UsageError(self, "give --csv or --json, not both");
  if (algos.empty() && (!with.empty() || !out_dir.empty() || !extra.empty()))
    return UsageError(self, "--with, -o and options after -- go with --algos");
  if (!algos.empty()) {
    if (paths.size() != 1) return UsageError(self, "--algos takes one TRACE");
    if (with.empty()) return UsageError(self, "--algos needs --with replay, simulate or flow");
    std::set<std::string> seen;
    for (const auto& a : algos)
      if (!seen.insert(a).second) return UsageError(self, "algorithm '" + a + "' given twice");
    if (out_dir.empty()) out_dir = FreshDirName("dltrace-compare-");
    if (mkdir(out_dir.c_str(), 0777) != 0 && errno != EEXIST) return Fail(out_dir + ": " + std::strerror(errno));
    const std::string trace = paths[0];
    for (const auto& algo : algos) {
      const std::string dir = out_dir + "/" + algo, log = out_dir + "/" + algo + ".log";
      if (access(dir.c_str(), F_OK) == 0)
        return Fail(dir + " exists: results of an earlier run are never overwritten");
      std::vector<std::string> argv;
      if (with == "replay") argv = {"replay", trace, "--local", "--no-progress", "--algo", algo, "-o", dir};
      else if (with == "flow") argv = {"simulate", trace, "--engine", "flow", "--algo", algo, "-o", dir};
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
  std::unique_ptr<models::Job> job;
  for (const auto& p : paths) {
    Run run;
    run.path = p;
    if (runs::IsResultsDir(p)) {
      if (!runs::LoadResultsRun(p, &run.times, &error)) return Fail(error);
      if (!run.times.complete) Warn(run.times.error);
    } else {
      std::unique_ptr<models::Job> j = models::LoadJob(p, models::LowerOptions(), &error);
      if (!j) return Fail(p + " is neither a results directory (rank*.results.json) nor a trace set: " + error);
      for (const auto& w : j->set.warnings) Warn(w);
      run.times = runs::RecordedRun(*j);
      if (!job) job = std::move(j);
    }
    runs.push_back(std::move(run));
  }
  if (!job)
    for (const auto& r : runs)
      if (!r.times.trace.empty() && access(r.times.trace.c_str(), F_OK) == 0) {
        job = models::LoadJob(r.times.trace, models::LowerOptions(), &error);
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

  std::vector<runs::RunTimes> times;
  for (const auto& r : runs) times.push_back(r.times);
  const runs::Comparison c = runs::CompareRuns(times, job.get());
  const size_t common_iterations = c.iterations, from = c.mean_from;
  const std::vector<double>& mean = c.mean_ns;
  auto label = [&](size_t k) { return c.labels[k]; };

  auto ms = [](double ns) { return ns / 1e6; };
  if (csv) {
    std::printf("section,key,run,ops,bytes,time_ms,diff_percent,busbw_gbps\n");
    auto num = [](double v) { return std::isfinite(v) ? std::to_string(v) : std::string(); };
    for (const auto& r : c.kinds)
      std::printf("kind,%s,%s,%" PRIu64 ",%" PRIu64 ",%s,%s,%s\n", r.kind.c_str(), label(r.run).c_str(), r.ops,
                  r.bytes, num(ms(r.ns)).c_str(), num(r.diff_percent).c_str(), num(r.busbw_gbps).c_str());
    for (size_t k = 0; k < runs.size(); ++k)
      std::printf("setup,,%s,%d,0,%s,,\n", label(k).c_str(), runs[k].times.setup_ops,
                  num(ms(runs[k].times.setup_ns)).c_str());
    for (size_t i = 0; i < common_iterations; ++i)
      for (size_t k = 0; k < runs.size(); ++k)
        std::printf("iteration,%zu,%s,0,0,%s,%s,\n", i, label(k).c_str(), num(ms(c.iteration_ns[k][i])).c_str(),
                    num(runs::Percent(c.iteration_ns[k][i], c.iteration_ns[0][i])).c_str());
    for (size_t k = 0; k < runs.size(); ++k)
      std::printf("summary,mean_iteration,%s,0,0,%s,%s,\n", label(k).c_str(), num(ms(mean[k])).c_str(),
                  num(runs::Percent(mean[k], mean[0])).c_str());
    return kExitOk;
  }
  if (json) {
    // NaN (no baseline time) becomes null, as JSON has no NaN.
    using runs::Json;
    auto number = [](double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); };
    Json doc = {{"runs", Json::array()}, {"kinds", Json::array()}, {"iterations", Json::array()}};
    for (size_t k = 0; k < runs.size(); ++k) {
      const auto& t = runs[k].times;
      Json iterations = Json::array();
      for (size_t i = 0; i < common_iterations; ++i) iterations.push_back(number(ms(c.iteration_ns[k][i])));
      doc["runs"].push_back({{"label", label(k)}, {"path", runs[k].path}, {"source", t.source},
                             {"algorithm", t.algorithm}, {"complete", t.complete}, {"endpoints", t.endpoints},
                             {"setup_ms", number(ms(t.setup_ns))}, {"setup_ops", t.setup_ops},
                             {"mean_iteration_ms", number(ms(mean[k]))},
                             {"diff_percent", number(runs::Percent(mean[k], mean[0]))},
                             {"iteration_ms", std::move(iterations)}});
    }
    for (const auto& r : c.kinds)
      doc["kinds"].push_back({{"kind", r.kind}, {"run", label(r.run)}, {"ops", r.ops}, {"bytes", r.bytes},
                              {"time_ms", number(ms(r.ns))}, {"diff_percent", number(r.diff_percent)},
                              {"busbw_gbps", number(r.busbw_gbps)}});
    for (size_t i = 0; i < common_iterations; ++i)
      for (size_t k = 0; k < runs.size(); ++k)
        doc["iterations"].push_back({{"iteration", i}, {"run", label(k)}, {"time_ms", number(ms(c.iteration_ns[k][i]))},
                                     {"diff_percent", number(runs::Percent(c.iteration_ns[k][i], c.iteration_ns[0][i]))}});
    std::printf("%s\n", runs::JsonText(doc).c_str());
    return kExitOk;
  }

  // Text: the runs, per op kind (one line per run), per iteration (one column per run).
  std::printf("# dltrace compare: %zu runs; op time = the longest endpoint's, iteration time = from the previous "
              "iteration being done on every rank (docs: explanation/lowering, Iteration time)\n",
              runs.size());
  std::printf("%-22s %-9s %-10s %-9s %s\n", "run", "source", "algorithm", "complete", "path");
  for (size_t k = 0; k < runs.size(); ++k)
    std::printf("%-22s %-9s %-10s %-9s %s\n", label(k).c_str(), runs[k].times.source.c_str(),
                runs[k].times.algorithm.c_str(), runs[k].times.complete ? "yes" : "NO", runs[k].path.c_str());
  std::printf("\nper op kind (iterations 0..%zu; diff vs %s)\n", common_iterations ? common_iterations - 1 : 0,
              label(0).c_str());
  std::printf("%-18s %-22s %7s %15s %12s %8s %11s\n", "op_kind", "run", "ops", "bytes", "time_ms", "diff_%", "busbw_GB/s");
  std::string last;
  for (const auto& r : c.kinds) {
    std::printf("%-18s %-22s %7" PRIu64 " %15" PRIu64 " %12.3f %+8.1f %11.2f\n", r.kind == last ? "" : r.kind.c_str(),
                label(r.run).c_str(), r.ops, r.bytes, ms(r.ns), r.diff_percent, r.busbw_gbps);
    last = r.kind;
  }
  std::printf("\nper iteration: time_ms (diff_%% vs %s)\n%-9s", label(0).c_str(), "iteration");
  for (size_t k = 0; k < runs.size(); ++k) std::printf(" %22s", label(k).c_str());
  std::printf("\n");
  auto cell = [&](size_t k, double v, double base) {
    char text[64];
    if (k == 0) std::snprintf(text, sizeof text, "%.3f", ms(v));
    else std::snprintf(text, sizeof text, "%.3f (%+.1f%%)", ms(v), runs::Percent(v, base));
    std::printf(" %22s", text);
  };
  std::printf("%-9s", "set-up");
  for (size_t k = 0; k < runs.size(); ++k) {
    char text[64];
    std::snprintf(text, sizeof text, "%.3f", ms(runs[k].times.setup_ns));
    std::printf(" %22s", text);
  }
  std::printf("\n");
  for (size_t i = 0; i < common_iterations; ++i) {
    std::printf("%-9zu", i);
    for (size_t k = 0; k < runs.size(); ++k) cell(k, c.iteration_ns[k][i], c.iteration_ns[0][i]);
    std::printf("\n");
  }
  std::printf("%-9s", from ? "mean 1.." : "mean");
  for (size_t k = 0; k < runs.size(); ++k) cell(k, mean[k], mean[0]);
  std::printf("\n");
  if (from) std::printf("(iteration 0 includes start-up; the mean is over iterations 1..%zu)\n", common_iterations - 1);
  for (size_t k = 0; k < runs.size(); ++k)
    if (runs[k].times.setup_ops)
      std::printf("(set-up of %s: connection set-up in the %d ops of iteration 0 that first used a peer pair, "
                  "taken out of iteration 0; docs: explanation/lowering, Set-up)\n",
                  label(k).c_str(), runs[k].times.setup_ops);
  if (!out_dir.empty()) std::printf("results: %s\n", out_dir.c_str());
  bool complete = true;
  for (const auto& r : runs) complete = complete && r.times.complete;
  return complete ? kExitOk : kExitIncomplete;
}

}  // namespace

Command AddCompareCommand(CLI::App& dltrace) {
  auto o = std::make_shared<CompareOptions>();
  CLI::App* cmd =
      dltrace.add_subcommand("compare", "put recorded, replayed and simulated runs of one job side by side");
  cmd->add_option("RUN", o->paths,
                  "a trace set (the recorded run) or a results directory (rank*.results.json of dltrace replay or "
                  "dltrace simulate); the first RUN is the baseline; with --algos: the one TRACE")
      ->default_str("");
  cmd->add_option("--algos", o->algos, "run TRACE under each algorithm first (A,B,...) and compare them with the "
                                       "recorded run: " + models::AlgorithmNamesJoined())
      ->default_str("")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->check(AlgorithmName());
  cmd->add_option("--with", o->with,
                  "how --algos runs: replay (dltrace replay --local), simulate (ns-3) or flow (dltrace simulate "
                  "--engine flow)")
      ->check(CLI::IsMember({"replay", "simulate", "flow"}));
  AddOutputDirOption(cmd, &o->out_dir, "with --algos: each algorithm's results (DIR/ALGO, log in DIR/ALGO.log)",
                     "dltrace-compare-");
  cmd->add_flag("--csv", o->csv, "rows for scripts instead of the text tables");
  cmd->add_flag("--json", o->json, "one JSON document instead of the text tables");
  cmd->footer(
      "dltrace compare --algos A,B,... TRACE --with replay|simulate|flow [-o DIR] -- OPTIONS: OPTIONS go to\n"
      "every replay/simulate run (e.g. -- --iterations 3 --channels 2).\n"
      "Per op kind: ops, bytes, time (the longest endpoint's per op, summed), difference to the\n"
      "first RUN in percent, bus bandwidth (nccl-tests); per iteration: time and difference.\n"
      "Exit status: 0 ok, 1 error (a run of another job, a failed run), 2 usage, 3 a run is incomplete.");
  return {cmd, [o](const Args& rest) { return RunCompare(*o, rest); }, true};
}

}  // namespace dltrace::cli
