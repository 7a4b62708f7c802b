// SPDX-License-Identifier: GPL-2.0-only
// dltrace replay TRACE: replays a trace set's lowered schedule over real TCP,
// every rank on this host (--local, forked processes over loopback), one rank
// per host (--rank R --hosts ...), or ranks started by mpirun/srun that find
// each other through a coordinator; then prints replayed vs recorded times.
#include "commands.h"

#ifdef DLTRACE_HAVE_SOCKET_REPLAY
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <thread>

#include "dltrace/executor/schedule_tools.h"
#include "dltrace/models/job.h"
#include "dltrace/models/placement.h"
#include "dltrace/replay/rendezvous.h"
#include "dltrace/replay/socket_replay.h"
#include "dltrace/runs/comparison.h"
#include "dltrace/runs/results_file.h"

namespace dltrace::cli {

namespace {

struct ReplayRun {
  std::string trace;
  std::string out_dir;
  models::LowerOptions lower;
  models::Schedule schedule;
  replay::SocketOptions socket;
  executor::ExecutorOptions executor;
  bool quiet_progress = false;
};

// Runs one endpoint and writes its results file; the process exit status.
int RunEndpoint(const ReplayRun& run) {
  const int32_t e = run.socket.self;
  replay::ProgressFn progress;
  if (e == 0 && !run.quiet_progress) {
    const bool tty = isatty(STDERR_FILENO);
    progress = [&run, tty](const executor::RankResult& r) {
      int32_t iteration = 0;
      for (size_t i = 0; i < r.iterations.size(); ++i)
        if (r.iterations[i].valid) iteration = int32_t(i);
      std::fprintf(stderr, "%sdltrace replay: endpoint 0: step %" PRIu64 "/%" PRIu64
                   ", iteration %d/%d, %.1f MB received%s",
                   tty ? "\r" : "", r.steps_done, r.steps_total, iteration + 1,
                   run.schedule.iterations, r.bytes_received / 1e6, tty ? "" : "\n");
      std::fflush(stderr);
    };
  }
  executor::RankResult r = replay::RunSocketReplay(run.schedule, run.socket, run.executor, progress);
  if (progress && isatty(STDERR_FILENO)) std::fprintf(stderr, "\n");
  runs::ResultsFile f = runs::MakeResultsFile(run.schedule, r);
  f.source = "replay";
  f.trace = run.trace;
  f.algorithm = run.schedule.algorithm;
  f.schedule_hash = run.socket.schedule_hash;
  std::string error;
  const std::string path = run.out_dir + "/" + runs::ResultsFileName(e);
  bool written = runs::WriteResultsFile(f, path, &error);
  if (!r.complete) {
    std::fprintf(stderr, "dltrace: error: endpoint %d: %s\n", e, r.error.c_str());
    return kExitError;
  }
  if (!written) return Fail(error);
  if (r.bytes_received != r.bytes_scheduled_recv)
    return Fail("endpoint " + std::to_string(e) + " received " + std::to_string(r.bytes_received) +
                " bytes, " + std::to_string(r.bytes_scheduled_recv) + " scheduled");
  return kExitOk;
}

void PrintSummary(const ReplayRun& run, const models::Job& job, const runs::RunTimes& replayed) {
  std::printf("# replay of %s: algorithm %s, %zu endpoints, %d iterations, time scale %g\n",
              run.trace.c_str(), run.schedule.algorithm.c_str(), run.schedule.ranks.size(),
              run.schedule.iterations, run.executor.time_scale);
  std::fputs(runs::FormatAgainstRecorded(run.schedule, &job, replayed, "replayed_ms").c_str(), stdout);
  // Each rank starts when its own connections are up, so the first
  // iteration absorbs the ranks' start-up skew (no job-wide start barrier yet).
  if (std::min<size_t>(size_t(run.schedule.iterations), replayed.iteration_ns.size()) > 1)
    std::printf("(iteration 0 includes the ranks' start-up skew; compare from iteration 1)\n");
  std::printf("\n%s\n", runs::FormatBytes(replayed).c_str());
  if (replayed.bytes_local_received)
    std::printf("same-host: %" PRIu64 " of those bytes timed on the model's local link (%g Gbit/s, %g us), "
                "not sent over TCP\n",
                replayed.bytes_local_received, run.schedule.local_link.gbps,
                run.schedule.local_link.latency_ns / 1000);
  if (run.socket.reduce)
    std::printf("reduced: %" PRIu64 " bytes of reduce receives added into local buffers on the host "
                "(--no-reduce: receive only)\n",
                replayed.bytes_reduced);
  else
    std::printf("reduced: %" PRIu64 " bytes (--no-reduce: reduce receives were received, not added)\n",
                replayed.bytes_reduced);
  std::printf("results: %s\n", run.out_dir.c_str());
  std::fflush(stdout);
}

// Forks one process per endpoint; when one fails, the others get a bounded
// time to notice (they do, through their connections) before being stopped.
int RunLocal(ReplayRun& run) {
  const size_t n = run.schedule.ranks.size();
  std::vector<int> fds(n, -1);
  std::string error;
  run.socket.hosts.resize(n);
  for (size_t e = 0; e < n; ++e) {
    uint16_t port = 0;
    fds[e] = replay::ListenOn("127.0.0.1", 0, &port, &error);
    if (fds[e] < 0) return Fail(error);
    run.socket.hosts[e] = {"127.0.0.1", port};
  }
  std::fflush(stdout);
  std::fflush(stderr);
  std::map<pid_t, int32_t> children;
  for (size_t e = 0; e < n; ++e) {
    pid_t pid = fork();
    if (pid < 0) {
      for (auto& kv : children) kill(kv.first, SIGTERM);
      return Fail(std::string("fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
      for (size_t k = 0; k < n; ++k)
        if (k != e) ::close(fds[k]);
      run.socket.self = int32_t(e);
      run.socket.listen_fd = fds[e];
      int status = RunEndpoint(run);
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(status);
    }
    children[pid] = int32_t(e);
  }
  for (int fd : fds) ::close(fd);
  int failures = 0;
  auto deadline = std::chrono::steady_clock::time_point::max();
  bool terminated = false;
  while (!children.empty()) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      auto it = children.find(pid);
      if (it == children.end()) continue;
      bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (!ok) {
        ++failures;
        if (WIFSIGNALED(status))
          std::fprintf(stderr, "dltrace: error: endpoint %d was killed by signal %d\n", it->second,
                       WTERMSIG(status));
        if (deadline == std::chrono::steady_clock::time_point::max())
          deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      }
      children.erase(it);
      continue;
    }
    if (pid < 0 && errno != EINTR) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (auto& kv : children) kill(kv.first, terminated ? SIGKILL : SIGTERM);
      deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      terminated = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (failures) {
    std::fprintf(stderr, "dltrace: error: %d of %zu endpoints failed; results in %s are incomplete\n",
                 failures, n, run.out_dir.c_str());
    return kExitError;
  }
  return kExitOk;
}

// The command line: a run and how its endpoints find each other.
struct ReplayOptions {
  ReplayRun run;
  bool local = false;
  int32_t rank = -1;
  int iterations = 0;
  std::string hosts, coordinator, listen;
};

int RunReplay(ReplayOptions options) {
  ReplayRun& run = options.run;
  const bool local = options.local;
  int32_t rank = options.rank;
  const int iterations = options.iterations;
  const std::string &hosts = options.hosts, &listen = options.listen;
  std::string& coordinator = options.coordinator;
  const char* self = "replay";
  // Which form: --local; --hosts (the rank from --rank or the launcher); or a
  // coordinator (--coordinator or DLTRACE_COORDINATOR) under mpirun/srun.
  if (local && (rank >= 0 || !hosts.empty() || !coordinator.empty() || !listen.empty()))
    return UsageError(self, "--local starts every endpoint itself: no --rank, --hosts, --coordinator or --listen");
  if (!hosts.empty() && !coordinator.empty())
    return UsageError(self, "give either --hosts or --coordinator, not both");
  if (!local && hosts.empty() && coordinator.empty())
    if (const char* env = std::getenv("DLTRACE_COORDINATOR"); env && *env) coordinator = env;
  if (!local && hosts.empty() && coordinator.empty())
    return UsageError(self, rank >= 0 ? "--rank needs --hosts h0:port,h1:port,... (or --coordinator HOST:PORT)"
                                      : "give --local, --rank R --hosts LIST, or --coordinator HOST:PORT "
                                        "(or DLTRACE_COORDINATOR) under mpirun/srun");
  replay::LauncherRank launched;
  std::string error;
  if (!local && !replay::RankFromEnvironment(&launched, &error)) return Fail(error);
  if (!local && rank < 0) {
    if (launched.rank < 0)
      return UsageError(self, "no rank: give --rank R, or run under mpirun/srun (none of " +
                                  replay::RankVariableNames() + " is set)");
    rank = launched.rank;
  }
  std::vector<replay::HostPort> coordinator_at;
  if (!coordinator.empty() &&
      (!replay::ParseHostList(coordinator, &coordinator_at, &error) || coordinator_at.size() != 1))
    return UsageError(self, "--coordinator needs HOST:PORT, got '" + coordinator + "'");
  // --listen ADDR, or ADDR:PORT with a coordinator (peers learn the port from it).
  std::string listen_host = listen;
  uint16_t listen_port = 0;
  if (size_t colon = listen.rfind(':');
      colon != std::string::npos && listen.find(':') == colon && !coordinator.empty()) {
    std::vector<replay::HostPort> hp;
    if (!replay::ParseHostList(listen, &hp, &error)) return UsageError(self, "--listen: " + error);
    listen_host = hp[0].host;
    listen_port = hp[0].port;
  } else if (colon != std::string::npos && listen.find(':') == colon) {
    return UsageError(self, "--listen takes an address with --hosts (the port is this rank's entry in --hosts)");
  }
  run.socket.listen_host = listen_host;
  if (!run.socket.congestion.empty() && !replay::CheckCongestionControl(run.socket.congestion, &error))
    return Fail(error);
  if (const char* token = std::getenv("DLTRACE_REPLAY_TOKEN")) run.socket.token = token;

  models::JobPlacement placement;
  placement.trace = run.trace;
  placement.lower = run.lower;
  placement.iterations = iterations;
  models::PreparedJob prepared;
  if (!models::PrepareJob(placement, &prepared, &error)) return Fail(error);
  const std::unique_ptr<models::Job>& job = prepared.loaded;
  for (const auto& n : job->notes) Warn(n);
  run.schedule = std::move(prepared.schedule);
  run.socket.schedule_hash = executor::ScheduleHash(run.schedule);

  const size_t endpoints = run.schedule.ranks.size();
  if (!coordinator.empty()) {
    if (launched.world_size >= 0 && size_t(launched.world_size) != endpoints)
      return Fail("the launcher started " + std::to_string(launched.world_size) + " ranks (" +
                  launched.size_variable + "), the schedule has " + std::to_string(endpoints) +
                  " endpoints: start " + std::to_string(endpoints) + " (--algo ps adds server endpoints)");
    if (size_t(rank) >= endpoints)
      return Fail("no rank " + std::to_string(rank) + " (the schedule has " + std::to_string(endpoints) + " endpoints)");
    // Rank 0 names the output directory for everyone (one name on a shared file system).
    if (run.out_dir.empty() && rank == 0) run.out_dir = FreshDirName("dltrace-replay-");
    if (!run.out_dir.empty()) {
      std::string path = run.out_dir + "/" + runs::ResultsFileName(rank);
      if (access(path.c_str(), F_OK) == 0)
        return Fail(path + " exists: results of an earlier run are never overwritten");
    }
    replay::RendezvousOptions ro;
    ro.coordinator = coordinator_at[0];
    ro.rank = rank;
    ro.ranks = int32_t(endpoints);
    ro.listen_host = listen_host;
    ro.listen_port = listen_port;
    ro.schedule_hash = run.socket.schedule_hash;
    ro.token = run.socket.token;
    ro.run_name = run.out_dir;
    ro.timeout_s = run.socket.connect_timeout_s;
    replay::RendezvousResult rr;
    if (!replay::Rendezvous(ro, &rr, &error)) return Fail("rank " + std::to_string(rank) + ": " + error);
    if (run.out_dir.empty()) run.out_dir = rr.run_name.empty() ? FreshDirName("dltrace-replay-") : rr.run_name;
    run.socket.hosts = rr.hosts;
    run.socket.listen_fd = rr.listen_fd;
    run.socket.self = rank;
  } else if (rank >= 0) {
    if (!replay::ParseHostList(hosts, &run.socket.hosts, &error)) return UsageError(self, error);
    if (run.socket.hosts.size() != run.schedule.ranks.size())
      return Fail("--hosts lists " + std::to_string(run.socket.hosts.size()) + " addresses, the schedule has " +
                  std::to_string(run.schedule.ranks.size()) + " endpoints");
    if (size_t(rank) >= run.schedule.ranks.size())
      return Fail("no rank " + std::to_string(rank) + " (the schedule has " +
                  std::to_string(run.schedule.ranks.size()) + " endpoints)");
    run.socket.self = rank;
  }
  if (run.out_dir.empty()) run.out_dir = FreshDirName("dltrace-replay-");
  if (!MakeDirs(run.out_dir, &error)) return Fail(error);
  for (size_t e = 0; e < run.schedule.ranks.size(); ++e) {
    if (rank >= 0 && int32_t(e) != rank) continue;
    std::string path = run.out_dir + "/" + runs::ResultsFileName(int32_t(e));
    if (access(path.c_str(), F_OK) == 0) return Fail(path + " exists: results of an earlier run are never overwritten");
  }

  int status = local ? RunLocal(run) : RunEndpoint(run);
  if (status != kExitOk) return status;
  // This host's endpoints, read back from what they wrote.
  runs::RunTimes replayed;
  for (size_t e = 0; e < run.schedule.ranks.size(); ++e) {
    if (rank >= 0 && int32_t(e) != rank) continue;
    runs::ResultsFile f;
    const std::string path = run.out_dir + "/" + runs::ResultsFileName(int32_t(e));
    if (!runs::ReadResultsFile(path, &f, &error) || !runs::AddResults(f, path, &replayed, &error))
      return Fail(error);
  }
  PrintSummary(run, *job, replayed);
  return kExitOk;
}

}  // namespace

Command AddReplayCommand(CLI::App& dltrace) {
  auto o = std::make_shared<ReplayOptions>();
  CLI::App* cmd = dltrace.add_subcommand("replay", "replay a trace set's traffic over real TCP sockets");
  ReplayRun& run = o->run;
  AddTraceArgument(cmd, &run.trace, "TRACE");
  cmd->add_flag("--local", o->local, "every endpoint as a process on this host, over 127.0.0.1");
  cmd->add_option("--rank", o->rank, "this host's endpoint (with --hosts)")
      ->check(NonNegative())
      ->default_str("");
  cmd->add_option("--hosts", o->hosts, "every endpoint's address, H0:PORT,H1:PORT,... (run on each host)");
  cmd->add_option("--coordinator", o->coordinator,
                  "HOST:PORT under mpirun/srun: the rank comes from the launcher's environment, rank 0 serves "
                  "HOST:PORT and every rank reports its address there (or set DLTRACE_COORDINATOR)");
  cmd->add_option("--listen", o->listen,
                  "address this rank's listener binds (ADDR[:PORT] with --coordinator; default: this rank's "
                  "--hosts address, or the one reaching the coordinator)")
      ->check(CLI::Validator([](std::string& v) { return v.empty() ? "needs an address" : ""; }, "ADDR"));
  cmd->add_option("--peer-timeout", run.socket.peer_timeout_s,
                  "stop when a peer awaited sent nothing for S seconds (0: off)")
      ->check(NonNegative());
  AddLowerOptions(cmd, &run.lower);
  cmd->add_option("--iterations", o->iterations, "replay only the first N iterations")
      ->check(Positive())
      ->default_str("");
  cmd->add_option("--time-scale", run.executor.time_scale, "multiply compute gaps (0 skips them)")
      ->check(NonNegative());
  cmd->add_option("--cc", run.socket.congestion, "TCP congestion control per socket (e.g. cubic, reno, bbr)");
  cmd->add_option("--sndbuf", run.socket.send_buffer, "socket send buffer in bytes")
      ->check(NonNegative());
  cmd->add_option("--rcvbuf", run.socket.receive_buffer, "socket receive buffer in bytes")
      ->check(NonNegative());
  cmd->add_option("--connect-timeout", run.socket.connect_timeout_s, "give up connecting to peers after S seconds")
      ->check(Positive());
  cmd->add_flag_callback(
      "--no-reduce", [o] { o->run.socket.reduce = false; },
      "receive the blocks of reductions without adding them into a local buffer (by default the host "
      "sums each in the op's datatype, as an MPI library does; NCCL's reduce on the GPU either way)");
  cmd->add_flag("--no-progress", run.quiet_progress, "no progress lines from endpoint 0");
  AddOutputDirOption(cmd, &run.out_dir, "where rankN.results.json go", "dltrace-replay-");
  cmd->footer(
      "Give --local, --rank R --hosts LIST, or --coordinator HOST:PORT.\n"
      "DLTRACE_REPLAY_TOKEN, when set, must be the same on every endpoint.\n"
      "Exit status: 0 every endpoint finished, 1 error (a peer lost, a bad trace), 2 usage.");
  return {cmd, [o](const Args&) { return RunReplay(*o); }};
}

}  // namespace dltrace::cli

#else  // built without Boost: the command exists and says why it cannot run

namespace dltrace::cli {
Command AddReplayCommand(CLI::App& dltrace) {
  CLI::App* cmd = dltrace.add_subcommand("replay", "replay a trace set's traffic over real TCP sockets");
  cmd->allow_extras();
  return {cmd, [](const Args&) {
            return Fail("this dltrace was built without Boost.Asio, so it cannot replay over sockets "
                        "(apt-get install libboost-dev and rebuild)");
          }};
}
}  // namespace dltrace::cli

#endif
