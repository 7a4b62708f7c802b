// SPDX-License-Identifier: GPL-2.0-only
// Replays one endpoint of a schedule over real TCP connections (Boost.Asio):
// connection set-up with a handshake, then the schedule executor over the sockets.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dltrace/executor/schedule_executor.h"
#include "dltrace/models/schedule.h"

namespace dltrace::replay {

struct HostPort {
  std::string host;
  uint16_t port = 0;
  std::string str() const { return host + ":" + std::to_string(port); }
};
// "h0:p0,h1:p1,..." -> list; false with *error on a malformed entry.
bool ParseHostList(const std::string& text, std::vector<HostPort>* out, std::string* error);

struct SocketOptions {
  std::vector<HostPort> hosts;  // index = endpoint
  int32_t self = 0;
  // A socket already bound and listening (the --local launcher opens them
  // before forking, so ports are never raced); -1: bind hosts[self].
  int listen_fd = -1;
  // Where to bind when listen_fd is -1 (with hosts[self]'s port); empty:
  // hosts[self]'s address, never every interface unless asked.
  std::string listen_host;
  uint64_t schedule_hash = 0;
  std::string token;        // DLTRACE_REPLAY_TOKEN; peers must present the same one
  std::string congestion;   // TCP_CONGESTION per socket; empty: the system default
  // SO_SNDBUF / SO_RCVBUF (the kernel caps them at net.core.wmem_max/rmem_max);
  // 0 leaves the kernel's autotuning, which grows the receive buffer to
  // tcp_rmem's maximum (32 MiB here) as iperf3's does. With the zero-copy
  // payload path fixed 4 MiB buffers measured 0.33-0.88 of iperf3 on a loaded
  // loopback, autotuning 1.18-1.21 in the same runs (dltrace-replay-bench
  // --sndbuf/--rcvbuf; README "Benchmarks", "Replay").
  int send_buffer = 0, receive_buffer = 0;
  double connect_timeout_s = 30;  // how long to retry while peers start
  double linger_s = 5;            // after finishing, how long to wait for peers to close
  // Stall watchdog: while this endpoint waits on a peer (a posted receive, or
  // a send it has not taken) and nothing came from that peer (data or the
  // heartbeat idle connections carry) for this long, the run stops with an
  // error naming it. 0: off. Every data socket also has TCP keepalive.
  double peer_timeout_s = 30;
  // The host's reduction arithmetic: each reduce receive's payload
  // (Step::reduce) is added into a local buffer of the op's datatype before
  // the receive counts as done (HostReduction); off: it is only received.
  bool reduce = true;
};

// Called about once a second while the schedule runs.
using ProgressFn = std::function<void(const executor::RankResult& progress)>;

// Connects to every peer the endpoint exchanges messages with (one
// connection per channel; the lower endpoint connects to the higher), runs
// the schedule and returns the result: complete, or with one error line
// naming the peer and the cause.
executor::RankResult RunSocketReplay(const models::Schedule& schedule, const SocketOptions& options,
                                     const executor::ExecutorOptions& executor_options, ProgressFn progress = nullptr);

// Checks that the kernel offers congestion control NAME; else false with one
// line listing the ones it does offer.
bool CheckCongestionControl(const std::string& name, std::string* error);

}  // namespace dltrace::replay
