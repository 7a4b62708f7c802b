// SPDX-License-Identifier: GPL-2.0-only
// dltrace record [-o DIR] [--sample-ms N] [--flush-ms N] [--] CMD...: runs CMD
// with the recorder preloaded (for it and every process it starts, mpirun
// ranks included), then says where the traces went and summarises them.
// Run by srun as each task of a Slurm job step, its tasks share one
// directory, named after the job and step, and one summary.
#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "commands.h"
#include "host_profile.h"
#include "dltrace/formats/trace_set.h"
#include "dltrace/record/output_naming.h"
#include "trace_summary.h"

namespace dltrace::cli {

namespace {

pid_t g_child = -1;

// A terminal's Ctrl-C already reaches the child (same process group); only
// signals sent to dltrace itself (kill, a batch system) are passed on.
void ForwardSignal(int sig, siginfo_t* info, void*) {
  if (g_child > 0 && info && (info->si_code == SI_USER || info->si_code == SI_QUEUE))
    ::kill(g_child, sig);
}

bool Exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

// A library of the recorder: $ENV_NAME, else NAME next to this program in
// the build tree (../record) or an install tree (../lib).
std::string FindLibrary(const char* env_name, const std::string& name) {
  const std::string build = "/../record/" + name, install = "/../lib/" + name, beside = "/" + name;
  return FindBesideProgram(env_name, {build.c_str(), install.c_str(), beside.c_str()});
}

std::string Absolute(const std::string& p) {
  if (!p.empty() && p[0] == '/') return p;
  char cwd[PATH_MAX];
  return std::string(::getcwd(cwd, sizeof(cwd)) ? cwd : ".") + "/" + p;
}

void AppendEnv(const char* name, const std::string& value, const char* sep) {
  const char* old = std::getenv(name);
  std::string v = (old && *old) ? value + sep + old : value;
  ::setenv(name, v.c_str(), 1);
}

struct RecordOptions {
  std::string out;
  // How NCCL is recorded: the interposer (LD_PRELOAD), NCCL's profiler
  // plugin, or both offered (auto: the plugin records only where the
  // interposer cannot see NCCL, i.e. NCCL linked in statically).
  std::string nccl = "auto";
  int sample_ms = -1;  // -1: the recorder's default
  int flush_ms = -1;
  Args command;
};

// ---- one task of a Slurm job step (srun -n 4 dltrace record -- ./app) ----

// Every task runs its own `dltrace record`; they agree without talking to
// each other, through files in the directory (on a file system all tasks
// share): its .slurm-step/claim names the step that owns it, each task adds
// done.<task> when its command has ended, and the task that completes the
// set (and creates .slurm-step/summary first) summarises.
struct SlurmTask {
  int task = 0;   // SLURM_PROCID
  int tasks = 1;  // SLURM_STEP_NUM_TASKS
  // Names this step's launch: equal in all its tasks, and different for a
  // job id that a controller started afresh hands out again.
  std::string key;
};

constexpr const char* kStepDir = ".slurm-step";
constexpr const char* kDefaultStepName = "dltrace-%j.%s";

const char* NonEmptyEnv(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

// Set where this process is a task of a job step. A batch script has no
// SLURM_STEP_ID, so `dltrace record -- srun ...` in an sbatch script is not one.
std::optional<SlurmTask> ThisSlurmTask() {
  const char* job = NonEmptyEnv("SLURM_JOB_ID");
  const char* step = NonEmptyEnv(record::kStepIdVariable);
  const char* procid = NonEmptyEnv("SLURM_PROCID");
  const char* tasks = NonEmptyEnv("SLURM_STEP_NUM_TASKS");
  if (!tasks) tasks = NonEmptyEnv("SLURM_NTASKS");
  if (!job || !step || !procid || !tasks) return std::nullopt;
  SlurmTask t;
  t.task = std::atoi(procid);
  t.tasks = std::max(1, std::atoi(tasks));
  t.key = std::string("job ") + job + " step " + step;
  for (const char* v : {"SLURM_CLUSTER_NAME", "SLURM_SRUN_COMM_HOST", "SLURM_SRUN_COMM_PORT"})
    t.key += std::string(" ") + (NonEmptyEnv(v) ? NonEmptyEnv(v) : "-");
  t.key += "\n";
  return t;
}

bool ReadWholeFile(const std::string& path, std::string* text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *text = ss.str();
  return true;
}

bool WriteNewFile(const std::string& path, const std::string& text, int flags) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0644);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  return ::close(fd) == 0 && ok;
}

enum class Claim { kOurs, kAnotherRun, kError };

// Whether DIR is this step's: claimed now by this task, or earlier by
// another task of the step. A directory with traces and no claim belongs to
// an earlier run.
Claim ClaimForStep(const std::string& dir, const SlurmTask& t, std::string* error) {
  const std::string claim = dir + "/" + kStepDir + "/claim";
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string held;
    if (ReadWholeFile(claim, &held)) return held == t.key ? Claim::kOurs : Claim::kAnotherRun;
    if (!formats::ListTraceFiles(dir).empty()) return Claim::kAnotherRun;
    if (!MakeDirs(dir + "/" + kStepDir, error)) return Claim::kError;
    // Written aside and linked in whole, so no task reads half a claim.
    const std::string aside = claim + "." + std::to_string(t.task);
    if (!WriteNewFile(aside, t.key, O_TRUNC)) {
      *error = "cannot write " + aside + ": " + std::strerror(errno);
      return Claim::kError;
    }
    int rc = ::link(aside.c_str(), claim.c_str());
    int link_errno = errno;
    ::unlink(aside.c_str());
    if (rc == 0) return Claim::kOurs;
    if (link_errno != EEXIST) {
      *error = "cannot create " + claim + ": " + std::strerror(link_errno);
      return Claim::kError;
    }
  }
  *error = "cannot read " + claim;
  return Claim::kError;
}

// The step's directory: OUT if given (it must be new or this step's), else
// the first of dltrace-<job>.<step>, -2, -3, ... that is new or this step's.
std::optional<std::string> StepDirectory(const std::string& out, const SlurmTask& t) {
  std::string error;
  if (!out.empty()) {
    Claim c = ClaimForStep(out, t, &error);
    if (c == Claim::kOurs) return out;
    Fail(c == Claim::kError ? error
                            : out + " already holds another run's traces; choose another -o "
                                    "(a run never overwrites another)");
    return std::nullopt;
  }
  record::OutputNameValues v;
  v.job = record::JobIdFromEnvironment();
  v.step = record::StepIdFromEnvironment();
  const std::string base = Absolute(record::ExpandOutputTemplate(kDefaultStepName, v));
  for (int n = 1; n <= 1000; ++n) {
    std::string dir = n == 1 ? base : base + "-" + std::to_string(n);
    Claim c = ClaimForStep(dir, t, &error);
    if (c == Claim::kOurs) return dir;
    if (c == Claim::kError) {
      Fail(error);
      return std::nullopt;
    }
  }
  Fail("no free directory name after " + base + "-1000");
  return std::nullopt;
}

// Marks this task's command as ended; true for exactly one task, the first
// to see every task ended, which then summarises the step.
bool EndTaskAndTakeSummary(const std::string& dir, const SlurmTask& t) {
  const std::string meta = dir + "/" + kStepDir + "/";
  if (!WriteNewFile(meta + "done." + std::to_string(t.task), "", O_TRUNC)) {
    Warn("cannot write " + meta + "done." + std::to_string(t.task) + ": " + std::strerror(errno) +
         "; the step's summary will be missing");
    return false;
  }
  int done = 0;
  if (DIR* d = ::opendir(meta.c_str())) {
    while (dirent* e = ::readdir(d)) done += std::strncmp(e->d_name, "done.", 5) == 0;
    ::closedir(d);
  }
  return done >= t.tasks && WriteNewFile(meta + "summary", std::to_string(t.task) + "\n", O_EXCL);
}

// ---- -o with %-codes: each rank names its own directory ----

// Codes `-o` takes: the directory is named per job, step or host, never per rank.
bool CheckDirectoryCodes(const std::string& out, std::string* error) {
  for (size_t i = 0; i + 1 < out.size(); ++i) {
    if (out[i] != '%') continue;
    char c = out[++i];
    if (c == 'r' || c == 'p') {
      *error = std::string("-o names a directory: %") + c +
               " names files (set DLTRACE_OUTPUT to a file template instead)";
      return false;
    }
  }
  return true;
}

// The directories a -o template can expand to (each code a wildcard).
std::set<std::string> TemplateMatches(const std::string& tmpl) {
  std::string pattern;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    char c = tmpl[i];
    if (c == '%' && i + 1 < tmpl.size()) {
      pattern += tmpl[++i] == '%' ? "%" : "*";
      continue;
    }
    if (c == '*' || c == '?' || c == '[' || c == '\\') pattern += '\\';
    pattern += c;
  }
  std::set<std::string> dirs;
  glob_t g{};
  if (::glob(pattern.c_str(), GLOB_ONLYDIR, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) dirs.insert(g.gl_pathv[i]);
  ::globfree(&g);
  return dirs;
}

// ---- the summary ----

void Summarise(const std::string& out, int code) {
  // The recording host's rates, for the lowering's --host-profile (after the
  // run, so the measurement does not compete with it; the MPI per-message
  // cost, seconds of ping-pong, is `dltrace calibrate`'s).
  if (formats::ListTraceFiles(out).empty()) {
    Warn("no traces were written to " + out + " (did the command call MPI or NCCL?)");
    return;
  }
  std::string error;
  if (!WriteHostProfile(MeasureHostProfile(), out + "/" + kHostProfileFile, &error)) Warn(error);
  formats::TraceSet set;
  if (!formats::LoadTraceSet(out, &set, &error)) {
    Warn("cannot summarise the traces: " + error);
    return;
  }
  TraceSummary s = Summarize(set);
  std::fprintf(stderr, "\ndltrace: traces in %s\n", out.c_str());
  std::fprintf(stderr, "  ranks %zu of %d on %zu host(s), %llu events (%llu dropped), %s, %.3f s\n",
               s.ranks_found, s.world_size, s.hosts.size(), (unsigned long long)s.events,
               (unsigned long long)s.dropped, HumanBytes(double(s.bytes)).c_str(), s.time_span_s);
  // Ranks whose recorder could not write (disk full, I/O error, file
  // removed), grouped by cause; their footers count what was not written.
  std::map<std::string, std::pair<std::vector<int32_t>, uint64_t>> failed;
  for (const auto& r : set.ranks) {
    if (!r.footer || r.footer->write_error.empty()) continue;
    std::string cause = r.footer->write_error;
    if (cause.rfind(r.path + ": ", 0) == 0) cause = cause.substr(r.path.size() + 2);
    failed[cause].first.push_back(r.header.global_rank);
    failed[cause].second += r.footer->events_dropped;
  }
  for (const auto& [cause, f] : failed)
    std::fprintf(stderr, "  recording stopped early on rank%s %s: %s (%llu events not written)\n",
                 f.first.size() == 1 ? "" : "s", RankList(f.first).c_str(), cause.c_str(),
                 (unsigned long long)f.second);
  if (!s.unrecorded.empty())
    std::fprintf(stderr, "  calls that move data, seen but not recorded: %s\n",
                 UnrecordedText(s).c_str());
  size_t shown = 0;
  for (const auto& k : s.op_kinds) {
    if (shown++ == 8) break;
    std::fprintf(stderr, "  %-24s %10llu calls %14s\n", k.kind.c_str(), (unsigned long long)k.calls,
                 HumanBytes(double(k.bytes)).c_str());
  }
  for (const auto& w : set.warnings) Warn(w);
  std::fprintf(stderr, "  more: dltrace info %s\n", out.c_str());
  if (code != 0) std::fprintf(stderr, "dltrace: the command exited with status %d\n", code);
}

int RunRecord(RecordOptions o) {
  std::string& out = o.out;
  const Args& cmd = o.command;
  const std::string sample_ms = o.sample_ms < 0 ? "" : std::to_string(o.sample_ms);
  const std::string flush_ms = o.flush_ms < 0 ? "" : std::to_string(o.flush_ms);
  const bool preload = o.nccl != "profiler";
  const bool plugin = o.nccl != "interposer";
  std::string lib = FindLibrary("DLTRACE_RECORD_LIB", "libdltrace-record.so");
  if (preload && (lib.empty() || !Exists(lib)))
    return Fail("cannot find libdltrace-record.so (set DLTRACE_RECORD_LIB, or build with MPI "
                "headers present)");
  std::string profiler = FindLibrary("DLTRACE_PROFILER_LIB", "libdltrace-nccl-profiler.so");
  if (plugin && (profiler.empty() || !Exists(profiler))) {
    if (o.nccl == "profiler")
      return Fail("cannot find libdltrace-nccl-profiler.so (set DLTRACE_PROFILER_LIB)");
    profiler.clear();  // auto: the interposer alone
  }

  std::string error;
  if (!CheckDirectoryCodes(out, &error)) return UsageError("record", error);
  const std::optional<SlurmTask> slurm = ThisSlurmTask();
  // With %-codes in -o the ranks name the directory (the launcher's job and
  // step are theirs); a task of a step knows them and names it itself.
  bool per_rank_dir = out.find('%') != std::string::npos;
  std::map<std::string, size_t> earlier;  // trace files in each match before the run
  if (slurm) {
    if (per_rank_dir) {
      record::OutputNameValues v;
      v.job = record::JobIdFromEnvironment();
      v.step = record::StepIdFromEnvironment();
      char host[256] = {};
      ::gethostname(host, sizeof host - 1);
      v.host = host;
      out = record::ExpandOutputTemplate(out, v);
      per_rank_dir = false;
    }
    std::optional<std::string> dir = StepDirectory(out.empty() ? out : Absolute(out), *slurm);
    if (!dir) return 1;
    out = *dir;
  } else if (per_rank_dir) {
    out = Absolute(out);
    for (const std::string& dir : TemplateMatches(out))
      earlier[dir] = formats::ListTraceFiles(dir).size();
  } else {
    // A fresh directory: never record into an earlier run's.
    if (out.empty()) out = FreshDirName("dltrace-");
    out = Absolute(out);
    if (Exists(out) && !formats::ListTraceFiles(out).empty())
      return Fail(out + " already holds traces; choose another -o (a run never overwrites another)");
    if (::mkdir(out.c_str(), 0755) != 0 && errno != EEXIST)
      return Fail("cannot create " + out + ": " + std::strerror(errno));
  }

  if (preload) AppendEnv("LD_PRELOAD", lib, ":");
  // NCCL 2.23 and later load the plugin by themselves; older ones ignore it.
  // A plugin the user named stays.
  if (plugin && !profiler.empty() && !std::getenv("NCCL_PROFILER_PLUGIN"))
    ::setenv("NCCL_PROFILER_PLUGIN", profiler.c_str(), 1);
  const std::string output =
      per_rank_dir ? out + "/rank%r" + formats::kTraceFileSuffix : out;
  ::setenv("DLTRACE_OUTPUT", output.c_str(), 1);
  if (!sample_ms.empty()) ::setenv("DLTRACE_SAMPLE_MS", sample_ms.c_str(), 1);
  if (!flush_ms.empty()) ::setenv("DLTRACE_FLUSH_MS", flush_ms.c_str(), 1);
  // Open MPI's mpirun passes these to ranks on every host.
  std::string forward = preload ? "LD_PRELOAD;DLTRACE_OUTPUT" : "DLTRACE_OUTPUT";
  if (std::getenv("NCCL_PROFILER_PLUGIN")) forward += ";NCCL_PROFILER_PLUGIN";
  for (const char* v : {"DLTRACE_SAMPLE_MS", "DLTRACE_FLUSH_MS", "DLTRACE_BUFFER_EVENTS",
                        "DLTRACE_QUIET", "DLTRACE_GPU_TIMING", "DLTRACE_CLOCK", "DLTRACE_RAW"})
    if (std::getenv(v)) forward += std::string(";") + v;
  AppendEnv("OMPI_MCA_mca_base_env_list", forward, ";");

  if (!slurm || slurm->task == 0) {
    const std::string tasks = slurm ? ", with the step's " + std::to_string(slurm->tasks) + " tasks" : "";
    std::fprintf(stderr, "dltrace: recording '%s' into %s%s\n", cmd[0].c_str(), out.c_str(),
                 tasks.c_str());
    std::fflush(stderr);
  }
  g_child = ::fork();
  if (g_child < 0) return Fail(std::string("fork failed: ") + std::strerror(errno));
  if (g_child == 0) {
    std::vector<char*> argv;
    for (auto& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "dltrace: error: cannot run %s: %s\n", cmd[0].c_str(), std::strerror(errno));
    ::_exit(127);
  }
  struct sigaction sa {};
  sa.sa_sigaction = ForwardSignal;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaction(sig, &sa, nullptr);
  int status = 0;
  while (::waitpid(g_child, &status, 0) < 0 && errno == EINTR) {
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

  if (slurm) {
    if (EndTaskAndTakeSummary(out, *slurm)) Summarise(out, code);
    return code;
  }
  if (!per_rank_dir) {
    Summarise(out, code);
    return code;
  }
  // Every directory this run wrote: new ones, and earlier ones it added traces to.
  std::vector<std::string> written;
  for (const std::string& dir : TemplateMatches(out)) {
    const size_t files = formats::ListTraceFiles(dir).size();
    auto before = earlier.find(dir);
    if (files > (before == earlier.end() ? 0 : before->second)) written.push_back(dir);
  }
  if (written.empty()) Warn("no traces were written to " + out + " (did the command call MPI or NCCL?)");
  for (const std::string& dir : written) Summarise(dir, code);
  return code;
}

}  // namespace

Command AddRecordCommand(CLI::App& dltrace) {
  auto o = std::make_shared<RecordOptions>();
  CLI::App* cmd = dltrace.add_subcommand("record", "run a command with the MPI/NCCL recorder preloaded");
  AddOutputDirOption(cmd, &o->out, "where the traces go", "dltrace-");
  cmd->add_option("--sample-ms", o->sample_ms, "resource sample interval in ms, 0 = off")
      ->check(NonNegative())
      ->default_str("100");
  cmd->add_option("--flush-ms", o->flush_ms, "flush interval in ms; a SIGKILL loses at most this much")
      ->check(Positive())
      ->default_str("200");
  cmd->add_option("--nccl", o->nccl,
                  "how NCCL is recorded: interposer (LD_PRELOAD, libnccl.so only), profiler (NCCL's "
                  "profiler plugin, NCCL >= 2.23, also static NCCL; records NCCL's algorithm, protocol "
                  "and channels; no MPI), auto (both offered: the plugin records where the "
                  "interposer sees no libnccl.so)")
      ->check(CLI::IsMember({"auto", "interposer", "profiler"}))
      ->default_str("auto");
  // The program starts at the first argument that is not an option, "--" or not.
  cmd->prefix_command();
  cmd->footer(
      "CMD [ARGS...]: the program to record, after the options (and an optional --).\n"
      "Examples:\n"
      "  dltrace record -- mpirun -np 4 ./app\n"
      "  dltrace record -o run1 -- torchrun --nproc_per_node=8 train.py\n"
      "  dltrace record --nccl profiler -- python train.py   # NCCL's own algorithm choices\n"
      "  dltrace record -o 'run-%j.%s' -- srun -n 4 --mpi=pmix ./app   # named by Slurm job and step\n"
      "  srun -n 4 --mpi=pmix dltrace record -- ./app   # each task: one dltrace-<job>.<step> directory\n"
      "-o DIR may hold %j (job id), %s (Slurm step id), %h (host): each rank expands them.\n"
      "The command's exit status is passed through.");
  return {cmd,
          [o, cmd](const Args& rest) {
            // Without "--" the program is what CLI11 left over, and a "--" after it is the program's.
            o->command = cmd->remaining();
            if (!o->command.empty() && o->command[0].size() > 1 && o->command[0][0] == '-')
              return UsageError("record", "unknown option " + o->command[0]);
            if (!o->command.empty() && !rest.empty()) o->command.push_back("--");
            o->command.insert(o->command.end(), rest.begin(), rest.end());
            if (o->command.empty()) return UsageError("record", "missing the command to run");
            return RunRecord(*o);
          },
          true};
}

}  // namespace dltrace::cli
