// SPDX-License-Identifier: GPL-2.0-only
// Launcher-driven start: ranks from the environment, and a one-shot coordinator
// (a thread of rank 0) that collects every rank's data address and hands out the list.
#include "dltrace/replay/rendezvous.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <sstream>
#include <thread>

#include "dltrace/formats/rank_env.h"

namespace dltrace::replay {

namespace {

constexpr char kMagic[] = "DLTRACE-RENDEZVOUS";
constexpr int kVersion = 1;

using Clock = std::chrono::steady_clock;

int MsLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : int(std::min<int64_t>(left, 1 << 30));
}

std::string Seconds(double s) {
  std::ostringstream out;
  out << s << " s";
  return out.str();
}

uint64_t TokenFingerprint(const std::string& token) {
  if (token.empty()) return 0;
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : token) h = (h ^ uint8_t(c)) * 0x100000001b3ull;
  return h | 1;
}

bool Resolve(const std::string& host, uint16_t port, bool passive, sockaddr_storage* out, socklen_t* len,
             std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* found = nullptr;
  int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0 || !found) {
    *error = "cannot resolve '" + host + "': " + ::gai_strerror(rc);
    return false;
  }
  std::memcpy(out, found->ai_addr, found->ai_addrlen);
  *len = found->ai_addrlen;
  ::freeaddrinfo(found);
  return true;
}

std::string AddressOf(const sockaddr_storage& a) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, buf, sizeof buf);
  else
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, buf, sizeof buf);
  return buf;
}

bool IsWildcard(const std::string& host) { return host == "0.0.0.0" || host == "::" || host == "*"; }

bool SendAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

// Reads one '\n'-terminated line (without it) before DEADLINE.
bool ReadLine(int fd, Clock::time_point deadline, std::string* line, std::string* error) {
  line->clear();
  char c = 0;
  while (true) {
    pollfd p{fd, POLLIN, 0};
    int rc = ::poll(&p, 1, MsLeft(deadline));
    if (rc < 0 && errno == EINTR) continue;
    if (rc == 0) {
      *error = "no answer";
      return false;
    }
    ssize_t n = ::recv(fd, &c, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = n == 0 ? "it closed the connection" : std::strerror(errno);
      return false;
    }
    if (c == '\n') return true;
    if (line->size() > 65536) {
      *error = "malformed answer";
      return false;
    }
    line->push_back(c);
  }
}

// Connects to HOST:PORT, retrying while it does not listen yet, until DEADLINE.
int ConnectRetrying(const HostPort& to, Clock::time_point deadline, std::string* error) {
  std::string last = "timed out";
  do {
    sockaddr_storage a{};
    socklen_t len = 0;
    if (!Resolve(to.host, to.port, false, &a, &len, error)) return -1;
    int fd = ::socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
      *error = std::string("socket: ") + std::strerror(errno);
      return -1;
    }
    int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), len);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      rc = ::poll(&p, 1, std::min(MsLeft(deadline), 2000));
      int err = 0;
      socklen_t el = sizeof err;
      if (rc == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0) {
        rc = 0;
      } else {
        errno = rc == 0 ? ETIMEDOUT : err;
        rc = -1;
      }
    }
    if (rc == 0) {
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      return fd;
    }
    last = std::strerror(errno);
    ::close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  } while (Clock::now() < deadline);
  *error = last;
  return -1;
}

// The coordinator: accepts one report per rank, checks that they agree, and
// answers every rank with the full list once all reported (or with the reason it cannot).
class Coordinator {
 public:
  Coordinator(const RendezvousOptions& o, int listen_fd) : o_(o), fd_(listen_fd) {}
  ~Coordinator() {
    Stop();
    ::close(fd_);
  }
  void Start() { thread_ = std::thread([this] { Run(); }); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  struct Client {
    int fd = -1;
    std::string in;
    int32_t rank = -1;
    std::string peer;
  };

  void Run() {
    const auto deadline = Clock::now() + std::chrono::milliseconds(int64_t(o_.timeout_s * 1000));
    std::vector<HostPort> hosts(size_t(o_.ranks));
    std::vector<bool> reported(size_t(o_.ranks), false);
    std::string run_name;
    int count = 0;
    while (!stop_) {
      if (Clock::now() >= deadline) {
        std::string missing;
        for (size_t r = 0; r < reported.size(); ++r)
          if (!reported[r]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        return Close("ERR rank" + std::string(o_.ranks - count > 1 ? "s " : " ") + missing +
                     " did not report within " + Seconds(o_.timeout_s));
      }
      std::vector<pollfd> polls{{fd_, POLLIN, 0}};
      for (auto& c : clients_) polls.push_back({c.fd, POLLIN, 0});
      int rc = ::poll(polls.data(), polls.size(), std::min(MsLeft(deadline), 100));
      if (rc <= 0) continue;
      if (polls[0].revents & POLLIN) {
        sockaddr_storage a{};
        socklen_t len = sizeof a;
        int fd = ::accept4(fd_, reinterpret_cast<sockaddr*>(&a), &len, SOCK_CLOEXEC);
        if (fd >= 0) clients_.push_back({fd, "", -1, AddressOf(a)});
      }
      for (size_t i = 1; i < polls.size(); ++i) {
        if (!polls[i].revents) continue;
        Client& c = clients_[i - 1];
        char buf[512];
        ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
        if (n <= 0 || c.in.size() > 4096) {
          Drop(c, "");
          continue;
        }
        c.in.append(buf, size_t(n));
        size_t eol = c.in.find('\n');
        if (eol == std::string::npos || c.rank >= 0) continue;
        HostPort hp;
        std::string name;
        std::string why = Check(c.in.substr(0, eol), reported, &c.rank, &hp, &name);
        if (!why.empty()) {
          Drop(c, "ERR refused this rank: " + why);
          continue;
        }
        reported[size_t(c.rank)] = true;
        hosts[size_t(c.rank)] = hp;
        if (c.rank == 0) run_name = name;
        ++count;
      }
      clients_.erase(std::remove_if(clients_.begin(), clients_.end(), [](const Client& c) { return c.fd < 0; }),
                     clients_.end());
      if (count == o_.ranks) {
        std::string list;
        for (const auto& h : hosts) list += (list.empty() ? "" : ",") + h.str();
        return Close("OK " + list + " " + run_name);
      }
    }
    Close("ERR the coordinator stopped: rank 0 failed");
  }

  // Parses one report; an empty string when it is sound, else why not.
  std::string Check(const std::string& line, const std::vector<bool>& reported, int32_t* rank, HostPort* hp,
                    std::string* name) {
    std::istringstream in(line);
    std::string magic, hash, token;
    int version = 0;
    long long r = -1, ranks = 0, port = 0;
    in >> magic >> version >> r >> ranks >> hash >> token >> hp->host >> port;
    if (!in || magic != kMagic || version != kVersion) return "not a dltrace replay rank of this version";
    std::getline(in, *name);
    if (!name->empty() && (*name)[0] == ' ') name->erase(0, 1);
    if (ranks != o_.ranks)
      return "it counts " + std::to_string(ranks) + " ranks, rank 0 counts " + std::to_string(o_.ranks) +
             " (the launcher's world size and the schedule's endpoints must agree)";
    if (hash != Hex(o_.schedule_hash))
      return "it replays a different schedule (trace set, algorithm or options differ)";
    if (token != Hex(TokenFingerprint(o_.token))) return "DLTRACE_REPLAY_TOKEN does not match";
    if (r < 0 || r >= o_.ranks) return "no rank " + std::to_string(r);
    if (reported[size_t(r)]) return "rank " + std::to_string(r) + " reported twice";
    if (port <= 0 || port > 65535) return "bad port";
    *rank = int32_t(r);
    hp->port = uint16_t(port);
    return "";
  }

  void Drop(Client& c, const std::string& answer) {
    if (!answer.empty()) SendAll(c.fd, answer + "\n");
    ::close(c.fd);
    c.fd = -1;
  }
  void Close(const std::string& answer) {
    for (auto& c : clients_)
      if (c.fd >= 0) Drop(c, answer);
    clients_.clear();
  }

  RendezvousOptions o_;
  int fd_;
  std::vector<Client> clients_;
  std::thread thread_;
  std::atomic<bool> stop_{false};

 public:
  static std::string Hex(uint64_t v) {
    char buf[20];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
    return buf;
  }
};

}  // namespace

std::string RankVariableNames() {
  std::string out;
  for (const char* v : formats::kRankVariables) out += (out.empty() ? "" : ", ") + std::string(v);
  return out;
}

bool RankFromEnvironment(LauncherRank* out, std::string* error) {
  *out = LauncherRank();
  auto first = [&](const char* const* names, size_t n, int32_t* value, std::string* which) {
    for (size_t i = 0; i < n; ++i) {
      const char* v = std::getenv(names[i]);
      if (!v || !*v) continue;
      char* end = nullptr;
      long x = std::strtol(v, &end, 10);
      if (*end || x < 0 || x > (1 << 24)) {
        *error = std::string(names[i]) + "='" + v + "' is not a rank number";
        return false;
      }
      *value = int32_t(x);
      *which = names[i];
      return true;
    }
    return true;
  };
  return first(formats::kRankVariables.data(), formats::kRankVariables.size(), &out->rank,
               &out->rank_variable) &&
         first(formats::kWorldSizeVariables.data(), formats::kWorldSizeVariables.size(),
               &out->world_size, &out->size_variable);
}

int ListenOn(const std::string& host, uint16_t port, uint16_t* bound, std::string* error) {
  sockaddr_storage a{};
  socklen_t len = 0;
  const bool any = host.empty() || IsWildcard(host);
  if (!Resolve(any ? "" : host, port, any, &a, &len, error)) return -1;
  int fd = ::socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd < 0 || ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      ::bind(fd, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd, 128) != 0) {
    *error = "cannot listen on " + host + ":" + std::to_string(port) + ": " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return -1;
  }
  sockaddr_storage got{};
  socklen_t got_len = sizeof got;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&got), &got_len);
  *bound = ntohs(got.ss_family == AF_INET ? reinterpret_cast<sockaddr_in&>(got).sin_port
                                          : reinterpret_cast<sockaddr_in6&>(got).sin6_port);
  return fd;
}

bool Rendezvous(const RendezvousOptions& o, RendezvousResult* out, std::string* error) {
  const std::string where = "the coordinator " + o.coordinator.str();
  const auto deadline = Clock::now() + std::chrono::milliseconds(int64_t(o.timeout_s * 1000));
  std::unique_ptr<Coordinator> coordinator;
  if (o.rank == 0) {
    uint16_t port = 0;
    int fd = ListenOn(o.coordinator.host, o.coordinator.port, &port, error);
    if (fd < 0) {
      *error = "rank 0 serves " + where + " but " + *error + " (run rank 0 on that host)";
      return false;
    }
    coordinator = std::make_unique<Coordinator>(o, fd);
    coordinator->Start();
  }
  std::string why;
  int fd = ConnectRetrying(o.coordinator, deadline, &why);
  if (fd < 0) {
    *error = "cannot reach " + where + " (rank 0 serves it): " + why + ", retried for " + Seconds(o.timeout_s);
    return false;
  }
  // The address that reaches the coordinator's host is the one to offer peers.
  sockaddr_storage local{};
  socklen_t local_len = sizeof local;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len);
  const std::string reach = AddressOf(local);
  const std::string bind_host = o.listen_host.empty() ? reach : o.listen_host;
  uint16_t port = 0;
  out->listen_fd = ListenOn(bind_host, o.listen_port, &port, error);
  if (out->listen_fd < 0) {
    ::close(fd);
    return false;
  }
  HostPort me{IsWildcard(bind_host) ? reach : bind_host, port};
  std::string report = std::string(kMagic) + " " + std::to_string(kVersion) + " " + std::to_string(o.rank) + " " +
                       std::to_string(o.ranks) + " " + Coordinator::Hex(o.schedule_hash) + " " +
                       Coordinator::Hex(TokenFingerprint(o.token)) + " " + me.host + " " +
                       std::to_string(me.port) + " " + o.run_name + "\n";
  std::string line;
  bool ok = SendAll(fd, report);
  // The coordinator answers once every rank reported, or when it gives up
  // waiting (its deadline is at most one timeout after this rank's).
  if (ok) ok = ReadLine(fd, Clock::now() + std::chrono::milliseconds(int64_t(o.timeout_s * 1000) + 5000), &line, &why);
  ::close(fd);
  if (coordinator && !ok) coordinator->Stop();
  auto fail = [&](const std::string& message) {
    ::close(out->listen_fd);
    out->listen_fd = -1;
    *error = message;
    return false;
  };
  if (!ok) return fail(where + " did not send every rank's address: " + (why.empty() ? "send failed" : why));
  if (line.compare(0, 4, "ERR ") == 0) return fail(where + ": " + line.substr(4));
  if (line.compare(0, 3, "OK ") != 0) return fail(where + " sent a malformed answer");
  size_t space = line.find(' ', 3);
  std::string list = line.substr(3, space == std::string::npos ? std::string::npos : space - 3);
  out->run_name = space == std::string::npos ? "" : line.substr(space + 1);
  if (!ParseHostList(list, &out->hosts, &why) || out->hosts.size() != size_t(o.ranks))
    return fail(where + " sent a malformed address list");
  return true;
}

}  // namespace dltrace::replay
