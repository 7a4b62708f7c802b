// SPDX-License-Identifier: GPL-2.0-only
// Socket replay: host lists, the congestion-control check, and the schedule
// executor run over the socket transport (socket_transport.h) for one endpoint.
#include "dltrace/replay/socket_replay.h"

#include "socket_transport.h"

namespace dltrace::replay {

namespace asio = boost::asio;
using boost::system::error_code;
using detail::SocketTransport;
using executor::ExecutorOptions;
using executor::RankResult;
using executor::ScheduleExecutor;

bool ParseHostList(const std::string& text, std::vector<HostPort>* out, std::string* error) {
  out->clear();
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(pos, comma - pos);
    size_t colon = item.rfind(':');
    char* end = nullptr;
    unsigned long port = colon == std::string::npos ? 0 : std::strtoul(item.c_str() + colon + 1, &end, 10);
    if (colon == std::string::npos || colon == 0 || !end || *end || port == 0 || port > 65535) {
      *error = "bad host:port '" + item + "'";
      return false;
    }
    out->push_back({item.substr(0, colon), uint16_t(port)});
    pos = comma + 1;
  }
  return true;
}

bool CheckCongestionControl(const std::string& name, std::string* error) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  int rc = ::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(), socklen_t(name.size()));
  int err = errno;
  ::close(fd);
  if (rc == 0) return true;
  std::string available;
  std::ifstream in("/proc/sys/net/ipv4/tcp_available_congestion_control");
  std::getline(in, available);
  *error = "TCP congestion control '" + name + "' is not available (" + std::strerror(err) +
           "); this kernel offers: " + (available.empty() ? "unknown" : available) +
           " (/proc/sys/net/ipv4/tcp_available_congestion_control)";
  return false;
}

RankResult RunSocketReplay(const models::Schedule& schedule, const SocketOptions& options,
                           const ExecutorOptions& executor_options, ProgressFn progress) {
  // sendfile() has no MSG_NOSIGNAL: a peer that went away must give EPIPE (and
  // the error naming it), not a SIGPIPE that ends this rank without a word.
  std::signal(SIGPIPE, SIG_IGN);
  asio::io_context io(1);
  SocketTransport transport(io, schedule, options);
  ScheduleExecutor engine(schedule, options.self, transport, executor_options);
  transport.expects_from = [&engine](int32_t peer) { return engine.expects_from(peer); };
  RankResult failed;
  failed.endpoint = options.self;

  asio::signal_set signals(io, SIGINT, SIGTERM);
  asio::steady_timer progress_timer(io);
  asio::steady_timer linger(io);
  bool running = false;
  auto stop = [&] {
    signals.cancel();
    progress_timer.cancel();
    io.stop();
  };
  std::function<void()> tick = [&] {
    progress_timer.expires_after(std::chrono::seconds(1));
    progress_timer.async_wait([&](const error_code& ec) {
      if (ec || engine.finished()) return;
      if (progress) progress(engine.result());
      tick();
    });
  };
  auto on_done = [&](const RankResult& r) {
    progress_timer.cancel();
    if (!r.complete) {
      transport.CloseAll();
      stop();
      return;
    }
    // Peers close their ends too once they are done; wait for that (bounded)
    // so no connection is reset under data still in flight to them.
    linger.expires_after(std::chrono::milliseconds(int64_t(options.linger_s * 1000)));
    linger.async_wait([&](const error_code& ec) {
      if (!ec) {
        transport.CloseAll();
        stop();
      }
    });
    transport.Finish([&] {
      linger.cancel();
      transport.CloseAll();
      stop();
    });
  };
  signals.async_wait([&](const error_code& ec, int signo) {
    if (ec) return;
    std::string why = std::string("interrupted by ") + (signo == SIGINT ? "SIGINT" : "SIGTERM");
    if (running) {
      engine.Fail(why);
    } else {
      failed.error = why;
      transport.CloseAll();
      stop();
    }
  });
  transport.set_on_error([&](const std::string& message) {
    if (running) return engine.Fail(message);
    failed.error = message;
    transport.CloseAll();
    stop();
  });
  // The engine took over the error callback at construction; setup errors
  // come before it runs, so route them here until it starts.
  std::string error;
  if (!transport.Open(
          [&] {
            running = true;
            transport.set_on_error([&](const std::string& message) { engine.Fail(message); });
            transport.StartWatchdog([&engine] { return engine.awaited_peers(); },
                                    [&engine](const std::string& message) { engine.Fail(message); });
            if (progress) tick();
            engine.Start(on_done);
          },
          &error)) {
    failed.error = error;
    return failed;
  }
  io.run();
  if (!running) {
    if (failed.error.empty()) failed.error = "stopped before every peer connected";
    return failed;
  }
  RankResult r = engine.result();
  r.bytes_reduced = transport.bytes_reduced();
  if (!engine.finished() && r.error.empty()) r.error = "stopped before the schedule finished";
  return r;
}

}  // namespace dltrace::replay
