// SPDX-License-Identifier: GPL-2.0-only
// dltrace report PATH -o report.html: one self-contained HTML file with the
// job's traffic matrix, timeline, per-kind totals, message sizes, resource
// use and (given results) recorded vs replayed vs simulated; --png renders
// each chart to an image with headless Chromium.
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "commands.h"
#include "dltrace/views/report.h"

extern char** environ;

namespace dltrace::cli {

namespace {

// The first of DLTRACE_CHROMIUM, chromium, chromium-browser, google-chrome on PATH.
std::string FindChromium() {
  if (const char* env = std::getenv("DLTRACE_CHROMIUM"); env && *env) return env;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    size_t start = 0;
    while (start <= dirs.size()) {
      size_t end = dirs.find(':', start);
      if (end == std::string::npos) end = dirs.size();
      std::string candidate = dirs.substr(start, end - start) + "/" + name;
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
      start = end + 1;
    }
  }
  return "";
}

// Runs ARGV with output discarded; false when it fails or outlives TIMEOUT_S.
bool RunQuietly(const std::vector<std::string>& argv, int timeout_s, std::string* error) {
  std::vector<char*> cargs;
  for (const auto& a : argv) cargs.push_back(const_cast<char*>(a.c_str()));
  cargs.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, cargs[0], &actions, nullptr, cargs.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    *error = argv[0] + ": " + std::strerror(rc);
    return false;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      *error = argv[0] + " took longer than " + std::to_string(timeout_s) + " s";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *error = argv[0] + " failed (status " + std::to_string(status) + ")";
    return false;
  }
  return true;
}

// One PNG per chart: Chromium opens the report with #chart=ID (only that chart,
// sized to the window) and screenshots it.
bool RenderPngs(const std::string& html, const std::vector<std::string>& ids, const std::string& dir,
                std::string* error) {
  std::string chromium = FindChromium();
  if (chromium.empty()) {
    *error = "--png needs Chromium (apt-get install chromium, or set DLTRACE_CHROMIUM)";
    return false;
  }
  if (mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) {
    *error = dir + ": " + std::strerror(errno);
    return false;
  }
  char resolved[PATH_MAX];
  if (!realpath(html.c_str(), resolved)) {
    *error = html + ": " + std::strerror(errno);
    return false;
  }
  for (const auto& id : ids) {
    const std::string png = dir + "/" + id + ".png", tmp = dir + "/." + id + ".tmp.png";
    std::vector<std::string> argv = {chromium, "--headless", "--no-sandbox", "--disable-gpu",
                                     "--hide-scrollbars", "--window-size=1000,640",
                                     "--virtual-time-budget=5000", "--screenshot=" + tmp,
                                     std::string("file://") + resolved + "#chart=" + id};
    std::remove(tmp.c_str());
    if (!RunQuietly(argv, 120, error)) return false;
    struct stat st;
    if (stat(tmp.c_str(), &st) != 0 || st.st_size == 0) {
      *error = chromium + " wrote no screenshot for chart " + id;
      return false;
    }
    if (std::rename(tmp.c_str(), png.c_str()) != 0) {
      *error = png + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

struct ReportOptions {
  std::string path, out, png_dir;
  std::vector<std::string> results;
  views::ReportOptions report;
};

int RunReport(ReportOptions o) {
  const std::string &path = o.path, &out = o.out, &png_dir = o.png_dir;
  views::ReportOptions& options = o.report;
  std::string error;
  std::unique_ptr<models::Job> job = models::LoadJob(path, models::LowerOptions(), &error);
  if (!job) return Fail(error);
  for (const auto& w : job->set.warnings) Warn(w);
  for (const auto& dir : o.results) {
    runs::RunTimes run;
    if (!runs::LoadResultsRun(dir, &run, &error)) return Fail(error);
    if (!run.complete) Warn(run.error + " (drawn as far as it got)");
    if (run.iteration_ns.size() > size_t(std::max(job->schedule.iterations, 1)) ||
        run.ops.size() > job->schedule.ops.size())
      return Fail(dir + ": results of another job than " + path + " (" + std::to_string(run.ops.size()) +
                  " ops, the trace has " + std::to_string(job->schedule.ops.size()) + ")");
    options.runs.push_back(std::move(run));
  }
  std::vector<std::string> notes;
  if (!views::WriteReport(*job, options, out, &notes, &error)) return Fail(error);
  for (const auto& n : notes) std::printf("note: %s\n", n.c_str());
  if (!png_dir.empty()) {
    auto ids = views::ReportChartIds(options);
    if (!RenderPngs(out, ids, png_dir, &error)) return Fail(error);
    std::printf("wrote %zu charts as PNG into %s\n", ids.size(), png_dir.c_str());
  }
  std::printf("report: %s\n", out.c_str());
  return StatusOf(job->set.warnings);
}

}  // namespace

Command AddReportCommand(CLI::App& dltrace) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* cmd = dltrace.add_subcommand(
      "report", "write a self-contained HTML report (traffic matrix, timeline, resources, runs)");
  AddTraceArgument(cmd, &o->path);
  cmd->add_option("-o,--output", o->out, "the report: one HTML file, no network needed to open it")
      ->type_name("FILE")
      ->required();
  cmd->add_option("--results", o->results,
                  "a dltrace replay or simulate results directory of the same job: adds its iteration times, and "
                  "flow completion times from DIR/flows.csv (repeatable)")
      ->type_name("DIR")
      ->default_str("")
      ->allow_extra_args(false);
  cmd->add_option("--png", o->png_dir, "also each chart as DIR/<chart>.png (headless Chromium)")->type_name("DIR");
  cmd->add_option("--timeline-ops", o->report.timeline_ops, "ops drawn in the timeline, the earliest of each rank")
      ->check(Positive());
  cmd->footer("Exit status: 0 ok, 1 error, 2 usage, 3 written but the trace set is incomplete.");
  return {cmd, [o](const Args&) { return RunReport(*o); }};
}

}  // namespace dltrace::cli
