// SPDX-License-Identifier: GPL-2.0-only
// dltrace-replay-bench: the socket replayer's data path over 127.0.0.1, printed
// against baselines measured in the same run: one large transfer against
// iperf3 (throughput, one TCP stream each), and small messages against a plain
// blocking TCP ping-pong (microseconds per round trip; the goal's baseline) and
// the same ping-pong through epoll (what any event loop pays). CPU seconds of
// both ends beside each, and the load average: on a shared machine the rate
// moves with the load, the CPU per byte or per message much less. Asserts nothing.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "dltrace/models/schedule.h"
#include "dltrace/replay/rendezvous.h"
#include "dltrace/executor/schedule_tools.h"
#include "dltrace/replay/socket_replay.h"

using namespace dltrace;

namespace {

struct Options {
  uint64_t bytes = 8ull << 30;  // the large transfer
  int iperf_seconds = 3;
  int repeat = 3;               // large transfer and iperf3 runs; the best of each is compared
  int messages = 20000;         // round trips of the small-message test
  uint64_t message_bytes = 64;
  // The replayer's SO_SNDBUF/SO_RCVBUF, as dltrace replay sets them by default.
  int send_buffer = replay::SocketOptions().send_buffer;
  int receive_buffer = replay::SocketOptions().receive_buffer;
  std::string only;  // "large" or "small": run that part alone (profiling)
};

double CpuSeconds(const rusage& ru) {
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

int ListenLoopback(uint16_t* port) {
  std::string error;
  int fd = replay::ListenOn("127.0.0.1", 0, port, &error);
  if (fd < 0) {
    std::fprintf(stderr, "dltrace-replay-bench: %s\n", error.c_str());
    std::exit(1);
  }
  return fd;
}

// A two-endpoint schedule of one synthetic op; STEPS fills both endpoints' steps.
models::Schedule TwoEndpoints(uint64_t op_bytes) {
  models::Schedule s;
  s.endpoints = {{models::EndpointRole::kWorker, 0, 0}, {models::EndpointRole::kWorker, 1, 1}};
  s.ranks.resize(2);
  s.hosts = {"a", "b"};
  s.world_size = 2;
  s.iterations = 1;
  models::ScheduleOp op;
  op.source = models::ScheduleOp::Source::kSynthetic;
  op.bytes = op_bytes;
  op.algorithm = "bench";
  s.ops.push_back(op);
  return s;
}

void AddStep(models::RankSchedule* r, models::StepType type, int32_t peer, uint64_t bytes, uint64_t tag,
             int64_t dep = -1) {
  models::Step st;
  st.type = type;
  st.peer = peer;
  st.bytes = bytes;
  st.tag = tag;
  st.deps_end = uint32_t(r->deps.size());
  if (dep >= 0) {
    r->deps.push_back(uint32_t(dep));
    st.deps_end = uint32_t(r->deps.size());
  }
  r->steps.push_back(st);
}

// Endpoint 0 sends BYTES to endpoint 1 in one message.
models::Schedule OneTransfer(uint64_t bytes) {
  models::Schedule s = TwoEndpoints(bytes);
  AddStep(&s.ranks[0], models::StepType::kSend, 1, bytes, models::MakeTag(0, 0));
  AddStep(&s.ranks[1], models::StepType::kRecv, 0, bytes, models::MakeTag(0, 0));
  return s;
}

// N round trips of BYTES: 0 sends, 1 receives and answers, 0 receives, then the next.
models::Schedule PingPong(int n, uint64_t bytes) {
  models::Schedule s = TwoEndpoints(bytes);
  for (int k = 0; k < n; ++k) {
    uint64_t ping = models::MakeTag(0, uint32_t(2 * k)), pong = models::MakeTag(0, uint32_t(2 * k + 1));
    AddStep(&s.ranks[0], models::StepType::kSend, 1, bytes, ping, k ? int64_t(s.ranks[0].steps.size()) - 1 : -1);
    AddStep(&s.ranks[0], models::StepType::kRecv, 1, bytes, pong);
    AddStep(&s.ranks[1], models::StepType::kRecv, 0, bytes, ping);
    AddStep(&s.ranks[1], models::StepType::kSend, 0, bytes, pong, int64_t(s.ranks[1].steps.size()) - 1);
  }
  return s;
}

struct EndpointReport {
  int complete = 0;
  uint64_t op_ns = 0;
  uint64_t bytes_received = 0;
  double cpu_s = 0;  // user + system seconds of the endpoint's process
  char error[256] = {};
};

// Runs both endpoints of SCHEDULE through the socket replayer, each in a
// forked process as `dltrace replay --local` does; false with a message on failure.
bool RunReplay(const models::Schedule& schedule, const Options& o, EndpointReport out[2]) {
  auto problems = models::CheckSchedule(schedule, 1);
  if (!problems.empty()) {
    std::fprintf(stderr, "dltrace-replay-bench: bad schedule: %s\n", problems[0].c_str());
    return false;
  }
  replay::SocketOptions so;
  so.schedule_hash = executor::ScheduleHash(schedule);
  so.send_buffer = o.send_buffer;
  so.receive_buffer = o.receive_buffer;
  int fds[2];
  for (int e = 0; e < 2; ++e) {
    uint16_t port = 0;
    fds[e] = ListenLoopback(&port);
    so.hosts.push_back({"127.0.0.1", port});
  }
  std::fflush(stdout);
  pid_t pids[2];
  int pipes[2][2];
  for (int e = 0; e < 2; ++e) {
    if (::pipe(pipes[e]) != 0) return false;
    pids[e] = ::fork();
    if (pids[e] < 0) return false;
    if (pids[e] == 0) {
      ::close(fds[1 - e]);
      ::close(pipes[e][0]);
      so.self = e;
      so.listen_fd = fds[e];
      executor::RankResult r = replay::RunSocketReplay(schedule, so, executor::ExecutorOptions{});
      EndpointReport rep;
      rep.complete = r.complete;
      if (!r.ops.empty() && r.ops[0].valid) rep.op_ns = r.ops[0].end_ns - r.ops[0].start_ns;
      rep.bytes_received = r.bytes_received;
      rusage ru{};
      ::getrusage(RUSAGE_SELF, &ru);
      rep.cpu_s = CpuSeconds(ru);
      std::snprintf(rep.error, sizeof rep.error, "%s", r.error.c_str());
      ssize_t w = ::write(pipes[e][1], &rep, sizeof rep);
      _exit(w == ssize_t(sizeof rep) ? 0 : 1);
    }
    ::close(pipes[e][1]);
  }
  ::close(fds[0]);
  ::close(fds[1]);
  bool ok = true;
  for (int e = 0; e < 2; ++e) {
    ssize_t n = ::read(pipes[e][0], &out[e], sizeof out[e]);
    ::close(pipes[e][0]);
    int status = 0;
    ::waitpid(pids[e], &status, 0);
    if (n != ssize_t(sizeof out[e]) || !out[e].complete) {
      std::fprintf(stderr, "dltrace-replay-bench: endpoint %d failed: %s\n", e,
                   n == ssize_t(sizeof out[e]) ? out[e].error : "no report");
      ok = false;
    }
  }
  return ok;
}

// --- baselines ---------------------------------------------------------------

// Runs CMD (argv) with stdout captured; its exit status in *status.
std::string Capture(const std::vector<std::string>& cmd, int* status) {
  int p[2];
  if (::pipe(p) != 0) return {};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(p[1], STDOUT_FILENO);
    ::close(p[0]);
    ::close(p[1]);
    std::vector<char*> argv;
    for (const auto& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    _exit(127);
  }
  ::close(p[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(p[0], buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
  ::close(p[0]);
  ::waitpid(pid, status, 0);
  return text;
}

// Number after "KEY": at or after FROM in JSON; 0 when absent.
double JsonNumber(const std::string& json, const char* key, size_t from = 0) {
  size_t at = json.find(std::string("\"") + key + "\"", from);
  if (at == std::string::npos) return 0;
  return std::strtod(json.c_str() + json.find(':', at) + 1, nullptr);
}

// Receiver-side throughput of `iperf3 -c 127.0.0.1 -t SECONDS -J`, bits/s; 0
// on failure. *CPU_S: client plus server CPU seconds, as iperf3 reports them.
double Iperf3(int seconds, double* cpu_s) {
  uint16_t port = 0;
  ::close(ListenLoopback(&port));  // a port that was free a moment ago
  const std::string p = std::to_string(port);
  std::fflush(stdout);
  pid_t server = ::fork();
  if (server == 0) {
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
    ::execlp("iperf3", "iperf3", "-s", "-1", "-p", p.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::string json;
  int status = 0;
  // The server needs a moment to listen; a refused client exits at once.
  for (int attempt = 0; attempt < 30; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    json = Capture({"iperf3", "-c", "127.0.0.1", "-p", p, "-t", std::to_string(seconds), "-J"}, &status);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) break;
    if (json.find("unable to connect") == std::string::npos) break;
  }
  ::kill(server, SIGTERM);
  ::waitpid(server, nullptr, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "dltrace-replay-bench: iperf3 client failed (status %d)\n", status);
    return 0;
  }
  size_t at = json.find("\"sum_received\"");
  if (at == std::string::npos || json.find("\"bits_per_second\"", at) == std::string::npos) {
    std::fprintf(stderr, "dltrace-replay-bench: no sum_received.bits_per_second in iperf3's JSON\n");
    return 0;
  }
  const double wall = JsonNumber(json, "seconds", at);
  *cpu_s = (JsonNumber(json, "host_total") + JsonNumber(json, "remote_total")) / 100 * wall;
  return JsonNumber(json, "bits_per_second", at);
}

// Sends or receives N bytes. With EPOLL (>= 0, FD registered edge-triggered)
// a receive is an event loop's: try at once, else wait in epoll_wait and retry.
bool IoAll(int fd, void* buf, size_t n, bool write, int epoll = -1) {
  auto* p = static_cast<uint8_t*>(buf);
  while (n > 0) {
    ssize_t k = write ? ::send(fd, p, n, MSG_NOSIGNAL) : ::recv(fd, p, n, epoll >= 0 ? MSG_DONTWAIT : 0);
    if (k <= 0) {
      if (k < 0 && errno == EINTR) continue;
      if (k < 0 && epoll >= 0 && !write && errno == EAGAIN) {
        epoll_event ev;
        if (::epoll_wait(epoll, &ev, 1, -1) < 0 && errno != EINTR) return false;
        continue;
      }
      return false;
    }
    p += k;
    n -= size_t(k);
  }
  return true;
}

void NoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// Edge-triggered epoll set of FD alone; -1 when not EVENT_LOOP.
int EpollOf(int fd, bool event_loop) {
  if (!event_loop) return -1;
  int e = ::epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLET;
  ::epoll_ctl(e, EPOLL_CTL_ADD, fd, &ev);
  return e;
}

// Plain TCP ping-pong between two processes, TCP_NODELAY: blocking calls, or
// with EVENT_LOOP the syscalls an event loop makes (a receive tried at once,
// then epoll_wait, then the receive). Us per round trip, and in *CPU_US the
// CPU microseconds of both ends per round trip.
double PlainPingPong(int n, uint64_t bytes, bool event_loop, double* cpu_us) {
  uint16_t port = 0;
  int listener = ListenLoopback(&port);
  std::fflush(stdout);
  pid_t echo = ::fork();
  if (echo == 0) {
    int fd = ::accept(listener, nullptr, nullptr);
    NoDelay(fd);
    const int epoll = EpollOf(fd, event_loop);
    std::vector<uint8_t> buf(bytes);
    for (int k = 0; k < n; ++k)
      if (!IoAll(fd, buf.data(), bytes, false, epoll) || !IoAll(fd, buf.data(), bytes, true)) _exit(1);
    _exit(0);
  }
  ::close(listener);
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  double us = 0;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    NoDelay(fd);
    const int epoll = EpollOf(fd, event_loop);
    std::vector<uint8_t> buf(bytes, 0);
    rusage before{}, after{};
    ::getrusage(RUSAGE_THREAD, &before);
    auto t = std::chrono::steady_clock::now();
    bool ok = true;
    for (int k = 0; k < n && ok; ++k)
      ok = IoAll(fd, buf.data(), bytes, true) && IoAll(fd, buf.data(), bytes, false, epoll);
    if (ok) us = Seconds(t) * 1e6 / n;
    ::getrusage(RUSAGE_THREAD, &after);
    if (epoll >= 0) ::close(epoll);
    *cpu_us = (CpuSeconds(after) - CpuSeconds(before)) * 1e6 / n;
  }
  ::close(fd);
  int status = 0;
  rusage echo_ru{};
  ::wait4(echo, &status, 0, &echo_ru);
  *cpu_us += CpuSeconds(echo_ru) * 1e6 / n;
  return us;
}

// The first three fields of /proc/loadavg: figures on a shared machine need them beside.
std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return in ? one + " " + five + " " + fifteen : "unknown";
}

bool HaveIperf3() {
  int status = 0;
  Capture({"iperf3", "--version"}, &status);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    double v = std::atof(argv[i + 1]);
    if (a == "--only" && (std::string(argv[i + 1]) == "large" || std::string(argv[i + 1]) == "small"))
      o.only = argv[i + 1];
    else if (a == "--bytes" && v >= 1) o.bytes = uint64_t(v);
    else if (a == "--iperf-seconds" && v >= 1) o.iperf_seconds = int(v);
    else if (a == "--repeat" && v >= 1) o.repeat = int(v);
    else if (a == "--messages" && v >= 1) o.messages = int(v);
    else if (a == "--message-bytes" && v >= 1) o.message_bytes = uint64_t(v);
    else if (a == "--sndbuf" && v >= 0) o.send_buffer = int(v);
    else if (a == "--rcvbuf" && v >= 0) o.receive_buffer = int(v);
    else {
      std::fprintf(stderr, "usage: dltrace-replay-bench [--bytes N] [--iperf-seconds S] [--repeat R] "
                           "[--messages N] [--message-bytes B] [--sndbuf B] [--rcvbuf B] [--only large|small]\n");
      return 2;
    }
  }
  if ((argc - 1) % 2) {
    std::fprintf(stderr, "dltrace-replay-bench: option %s needs a value\n", argv[argc - 1]);
    return 2;
  }
  unsigned cores = std::thread::hardware_concurrency();
  std::printf("# dltrace-replay-bench: 127.0.0.1, %u cores, load average %s; best of %d runs each\n", cores,
              LoadAverage().c_str(), o.repeat);
  double ratio = -1, overhead_us = 0;
  bool small_done = false;

  // (a) One large transfer, one TCP stream, against iperf3; runs alternate so
  // both see the same background load.
  if (o.only != "small") {
    const models::Schedule transfer = OneTransfer(o.bytes);
    const bool iperf3 = HaveIperf3();
    if (!iperf3) std::printf("iperf3: not installed (apt-get install iperf3), no baseline\n");
    double best_replay = 0, best_iperf = 0;
    for (int i = 0; i < o.repeat; ++i) {
      EndpointReport rep[2];
      if (!RunReplay(transfer, o, rep)) return 1;
      if (rep[1].bytes_received != o.bytes) {
        std::fprintf(stderr, "dltrace-replay-bench: received %llu of %llu bytes\n",
                     static_cast<unsigned long long>(rep[1].bytes_received),
                     static_cast<unsigned long long>(o.bytes));
        return 1;
      }
      double gbps = o.bytes * 8.0 / rep[1].op_ns;
      // CPU seconds of both ends per GB moved: what limits a loopback stream,
      // and less dependent on the machine's load than the rate.
      double cpu_per_gb = (rep[0].cpu_s + rep[1].cpu_s) / (o.bytes / 1e9);
      std::printf("run %d: replay %.3f GB in %.3f s at the receiver, %.2f Gbit/s, %.3f CPU s/GB", i + 1,
                  o.bytes / 1e9, rep[1].op_ns / 1e9, gbps, cpu_per_gb);
      best_replay = std::max(best_replay, gbps);
      if (iperf3) {
        double iperf_cpu_s = 0;
        double iperf_gbps = Iperf3(o.iperf_seconds, &iperf_cpu_s) / 1e9;
        std::printf("; iperf3 %d s, %.2f Gbit/s received, %.3f CPU s/GB", o.iperf_seconds, iperf_gbps,
                    iperf_gbps > 0 ? iperf_cpu_s / (iperf_gbps / 8 * o.iperf_seconds) : 0.0);
        best_iperf = std::max(best_iperf, iperf_gbps);
      }
      std::printf("\n");
      std::fflush(stdout);
    }
    if (best_iperf > 0) ratio = best_replay / best_iperf;
    std::printf("large transfer: replay %.2f Gbit/s, iperf3 %.2f Gbit/s (best runs)\n", best_replay, best_iperf);
  }

  // (b) Small messages: round trips through the replayer against a plain
  // ping-pong, alternating; the fastest of each is compared.
  if (o.only != "large") {
    double best_replay = 0, best_plain = 0, best_loop = 0;
    for (int i = 0; i < o.repeat; ++i) {
      EndpointReport rep[2];
      if (!RunReplay(PingPong(o.messages, o.message_bytes), o, rep)) return 1;
      double replay_us = rep[0].op_ns / 1e3 / o.messages;
      double replay_cpu_us = (rep[0].cpu_s + rep[1].cpu_s) * 1e6 / o.messages;
      double plain_cpu_us = 0, loop_cpu_us = 0;
      double plain_us = PlainPingPong(o.messages, o.message_bytes, false, &plain_cpu_us);
      double loop_us = PlainPingPong(o.messages, o.message_bytes, true, &loop_cpu_us);
      if (plain_us <= 0 || loop_us <= 0) {
        std::fprintf(stderr, "dltrace-replay-bench: plain ping-pong failed\n");
        return 1;
      }
      std::printf("run %d: %d round trips of %llu B: replay %.2f us (%.2f CPU us), plain TCP %.2f us (%.2f CPU us), "
                  "plain TCP through epoll %.2f us (%.2f CPU us) per round trip\n",
                  i + 1, o.messages, static_cast<unsigned long long>(o.message_bytes), replay_us, replay_cpu_us,
                  plain_us, plain_cpu_us, loop_us, loop_cpu_us);
      std::fflush(stdout);
      best_replay = i ? std::min(best_replay, replay_us) : replay_us;
      best_plain = i ? std::min(best_plain, plain_us) : plain_us;
      best_loop = i ? std::min(best_loop, loop_us) : loop_us;
    }
    overhead_us = (best_replay - best_plain) / 2;
    small_done = true;
    std::printf("small messages: replay %.2f us, plain TCP %.2f us, plain TCP through epoll %.2f us per round trip "
                "(best runs); replay - epoll %+.2f us per message\n",
                best_replay, best_plain, best_loop, (best_replay - best_loop) / 2);
  }

  std::printf("# load average at the end: %s\n", LoadAverage().c_str());
  if (ratio >= 0)
    std::printf("GOAL large transfer: replay / iperf3 = %.3f (goal >= 0.95)\n", ratio);
  if (small_done)
    std::printf("GOAL small messages: replay - plain TCP = %+.2f us per message (goal <= +5)\n", overhead_us);
  return 0;
}
