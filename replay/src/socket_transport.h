// SPDX-License-Identifier: GPL-2.0-only
// Internal to replay/: the socket transport's wire format (frame header,
// handshake), one connection (Session) and the transport over all of them
// (SocketTransport). Implemented in socket_session.cc (framing, zero-copy
// payloads), socket_connect.cc (connection set-up, handshake, start
// barrier) and socket_transport.cc (sends, timers, watchdog, shutdown);
// socket_replay.cc runs the schedule executor over it.
#pragma once

#include <netinet/in.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/asio.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <set>

#include "dltrace/executor/schedule_tools.h"
#include "dltrace/replay/host_reduction.h"
#include "dltrace/replay/socket_replay.h"


namespace dltrace::replay::detail {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;
using executor::ConnectedEndpoints;
using executor::ExecutorOptions;
using executor::PeersOf;
using executor::RankResult;
using executor::ScheduleExecutor;
using executor::Transport;

constexpr size_t kHeaderBytes = 24;
// Payload is zeros nobody reads, except a reduce receive's (HostReduction
// adds it into a local buffer, so it is read through the staging buffer).
// Small ones are copied: the sender gathers
// them from one zero buffer with the header into one sendmsg, the receiver
// reads them with the frames around them into a staging buffer. From
// kZeroCopyBytes on, neither end copies: the sender sendfile()s from a memfd
// of zeros and the receiver splice()s the payload into /dev/null through a
// pipe (about 0.5x the CPU per byte on loopback; dltrace-replay-bench).
constexpr size_t kZeroBytes = 64 << 10;        // the zero buffer sendmsg gathers from
constexpr size_t kMaxIovecs = 64;              // slices of it per sendmsg
constexpr size_t kStageBytes = 64 << 10;       // staging buffer of each connection's reads
constexpr uint64_t kZeroCopyBytes = 64 << 10;  // payloads (or rests of them) this large skip the copies
constexpr size_t kZeroFileBytes = 1 << 20;     // the memfd sendfile reads, offsets wrap
constexpr int kPipeBytes = 1 << 20;            // the splice pipe (default 64 KiB if refused)
// A connection moves at most this much per turn before letting the others
// (and timers) run.
constexpr uint64_t kBurstBytes = 64ull << 20;
constexpr uint64_t kHandshakeMagic = 0x31534852544c44ull;  // "DLTRHS1"
constexpr uint32_t kProtocolVersion = 3;
// Keepalive on every data socket: a peer host that vanished is noticed on an
// idle connection within about idle + interval * count seconds.
constexpr int kKeepIdleS = 5, kKeepIntervalS = 2, kKeepCount = 3;

// kNotice: a same-host step the model times, its payload the byte count (8
// bytes); kHeartbeat: nothing to say, sent on idle connections for the
// watchdog; kReady: the start barrier, its payload a bitmap of the endpoints
// the sender knows to have all their connections up.
enum FrameKind : uint16_t { kData = 0, kHello = 1, kRefuse = 2, kNotice = 3, kHeartbeat = 4, kReady = 5 };

struct Frame {
  uint64_t tag = 0;
  uint16_t channel = 0;
  uint16_t kind = kData;
  uint64_t length = 0;
};

inline void Put(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = uint8_t(v >> (8 * i));
}
inline uint64_t Get(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}
inline void Encode(const Frame& f, uint8_t* p) {
  Put(p, f.tag, 8);
  Put(p + 8, f.channel, 2);
  Put(p + 10, f.kind, 2);
  Put(p + 12, 0, 4);
  Put(p + 16, f.length, 8);
}
inline Frame Decode(const uint8_t* p) {
  return {Get(p, 8), uint16_t(Get(p + 8, 2)), uint16_t(Get(p + 10, 2)), Get(p + 16, 8)};
}

// What each end of a new connection says about itself.
struct Hello {
  uint64_t magic = kHandshakeMagic;
  uint32_t version = kProtocolVersion;
  int32_t from = 0, to = 0;
  uint32_t endpoints = 0;
  uint16_t index = 0, channels = 0;
  uint64_t schedule_hash = 0, token_hash = 0;
  static constexpr size_t kBytes = 40;
  void Encode(uint8_t* p) const {
    Put(p, magic, 8);
    Put(p + 8, version, 4);
    Put(p + 12, uint32_t(from), 4);
    Put(p + 16, uint32_t(to), 4);
    Put(p + 20, endpoints, 4);
    Put(p + 24, index, 2);
    Put(p + 26, channels, 2);
    Put(p + 28, schedule_hash, 8);
    Put(p + 36, uint32_t(token_hash), 4);
  }
  static Hello Decode(const uint8_t* p) {
    Hello h;
    h.magic = Get(p, 8);
    h.version = uint32_t(Get(p + 8, 4));
    h.from = int32_t(Get(p + 12, 4));
    h.to = int32_t(Get(p + 16, 4));
    h.endpoints = uint32_t(Get(p + 20, 4));
    h.index = uint16_t(Get(p + 24, 2));
    h.channels = uint16_t(Get(p + 26, 2));
    h.schedule_hash = Get(p + 28, 8);
    h.token_hash = Get(p + 36, 4);
    return h;
  }
};

inline uint64_t TokenHash(const std::string& token) {
  if (token.empty()) return 0;
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : token) h = (h ^ uint8_t(c)) * 0x100000001b3ull;
  return (h & 0xFFFFFFFFu) | 1;  // never 0, which means "no token"
}

inline uint64_t MonotonicNs() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

class SocketTransport;

// One TCP connection to a peer. Writes go out at once from the caller
// (non-blocking sendmsg/sendfile, callbacks run before Queue returns) and
// wait for the socket only when it is full; reads fill a staging buffer,
// several frames per read, and the rest of a large payload is spliced away.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(SocketTransport* t, tcp::socket socket);

  tcp::socket& socket() { return socket_; }
  int32_t peer = -1;  // known once the handshake named it
  uint16_t index = 0;
  bool ready = false;
  bool closed = false;
  bool peer_done = false;  // the peer shut its sending side
  bool busy() const { return !out_.empty(); }

  void Queue(const Frame& f, std::string control, std::function<void()> on_sent) {
    out_.push_back({f, std::move(control), std::move(on_sent)});
    Flush();
  }
  void StartReading() { Read(); }
  void Close() {
    if (closed) return;
    closed = true;
    error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }
  void ShutdownSend() {
    error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
  }

 private:
  struct Out {
    Frame frame;
    std::string control;  // hello, refusal, notice, ready bits; data frames send zeros instead
    std::function<void()> on_sent;
  };
  enum class Wrote { kAll, kBlocked, kYield, kFailed };
  void Flush();
  Wrote WriteFront(uint64_t* budget);
  void Read();
  bool Parse();
  void Drain();
  void Continue(void (Session::*step)());

  SocketTransport* t_;
  tcp::socket socket_;
  std::deque<Out> out_;
  uint64_t out_done_ = 0;  // bytes of the front frame (header, then payload) written
  bool flushing_ = false, write_pending_ = false;
  std::array<uint8_t, kHeaderBytes> out_header_{};
  std::vector<uint8_t> in_;     // staging buffer: [in_begin_, in_end_) not parsed yet
  size_t in_begin_ = 0, in_end_ = 0;
  bool in_frame_open_ = false;  // in_frame_'s header was read, in_left_ payload bytes to come
  Frame in_frame_;
  uint64_t in_left_ = 0;
  // Of a data frame: the arithmetic its payload gets (kNone: none, it may be
  // spliced away) and its element size, whole elements of which Parse hands on.
  ReduceType in_reduce_ = ReduceType::kNone;
  size_t in_element_ = 1;
};

class SocketTransport : public Transport {
 public:
  SocketTransport(asio::io_context& io, const models::Schedule& schedule, const SocketOptions& o)
      : io_(io), schedule_(schedule), o_(o), acceptor_(io), zero_(kZeroBytes, 0) {
    OpenZeroCopy();
    if (o.reduce) reduction_ = std::make_unique<HostReduction>(schedule, o.self);
    for (const auto& p : PeersOf(schedule, o.self)) peers_[p.peer].resize(p.channels);
    barrier_members_ = ConnectedEndpoints(schedule, o.self);
    known_ready_.assign((schedule.ranks.size() + 7) / 8, 0);
    last_heard_.assign(schedule.ranks.size(), 0);
    last_wrote_.assign(schedule.ranks.size(), 0);
    heard_.assign(schedule.ranks.size(), 0);
    wrote_.assign(schedule.ranks.size(), 0);
  }

  // Starts listening and connecting; READY runs once every connection of
  // every endpoint this one reaches through the schedule's peers is up (the
  // job-wide start barrier), so that no endpoint starts before the others can.
  bool Open(std::function<void()> ready, std::string* error);
  size_t MaxControlBytes() const { return std::max<size_t>(4096, known_ready_.size()); }
  void Send(int32_t peer, uint16_t channel, uint64_t tag, uint64_t bytes,
            std::function<void()> on_sent) override;
  void SendNotice(int32_t peer, uint16_t channel, uint64_t tag, uint64_t bytes,
                  std::function<void()> on_sent) override;
  void StartTimer(uint64_t duration_ns, std::function<void()> cb) override;
  uint64_t NowNs() const override { return MonotonicNs(); }

  // Stall watchdog (SocketOptions::peer_timeout_s): AWAITED lists the peers
  // the engine waits to receive from; STALLED gets the error naming the ones
  // silent for too long. Idle connections carry heartbeats meanwhile.
  void StartWatchdog(std::function<std::vector<int32_t>()> awaited,
                     std::function<void(const std::string&)> stalled);
  void Heard(Session* s) {
    if (s->peer >= 0 && size_t(s->peer) < heard_.size()) heard_[size_t(s->peer)] = 1;
  }
  void Wrote(Session* s) {
    if (s->peer >= 0 && size_t(s->peer) < wrote_.size()) wrote_[size_t(s->peer)] = 1;
  }

  // Session callbacks.
  void OnControl(const std::shared_ptr<Session>& s, const Frame& f, const uint8_t* payload, size_t bytes);
  // BYTES of F's payload arrived, bytes OFFSET.. of it; DATA holds them
  // unless they were spliced away (never for a reduce receive, whose
  // arithmetic runs here, before the executor hears of them).
  void OnPayload(Session* s, const Frame& f, uint64_t bytes, const uint8_t* data = nullptr,
                 uint64_t offset = 0, ReduceType reduce = ReduceType::kNone) {
    if (!s->ready) return Lost(s, "sent data before its handshake");
    if (reduce != ReduceType::kNone && data) reduction_->Add(reduce, offset, data, size_t(bytes));
    Deliver(s->peer, f.channel, f.tag, bytes);
  }
  // The arithmetic a data frame tagged TAG gets (SocketOptions::reduce).
  ReduceType ReduceTypeOf(uint64_t tag) const {
    return reduction_ ? reduction_->TypeOf(tag) : ReduceType::kNone;
  }
  uint64_t bytes_reduced() const { return reduction_ ? reduction_->bytes_reduced() : 0; }
  void Lost(Session* s, const std::string& cause);
  void Lost(Session* s, const error_code& ec, const char* what = "") {
    if (ec == asio::error::eof && !*what) return PeerDone(s);
    Lost(s, std::string(what) + (ec == asio::error::eof ? "closed the connection" : ec.message()));
  }
  // The peer shut its sending side: normal once it sent everything it owed us.
  void PeerDone(Session* s);
  bool AllPeersDone() const;
  void FinishIfAllPeersDone();

  // Shuts the sending side of every connection and calls DONE once peers closed theirs.
  void Finish(std::function<void()> done);
  void CloseAll();

  std::function<bool(int32_t)> expects_from;  // whether a peer still owes us data
  const std::vector<uint8_t>& zero() const { return zero_; }
  // The memfd of zeros large payloads are sendfile()d from; -1: copy them.
  int zero_file() const { return zero_file_; }
  void NoSendfile() { zero_file_ = -1; }
  // Whether large payloads are spliced into /dev/null; SpliceAway moves up to
  // BYTES from FD there: the count, 0 at end of stream, -1 with errno.
  bool can_splice() const { return null_fd_ >= 0; }
  void NoSplice() { null_fd_ = -1; }
  ssize_t SpliceAway(int fd, uint64_t bytes);
  size_t StageBytes() const { return std::max(kStageBytes, 2 * (kHeaderBytes + MaxControlBytes())); }
  std::string Name(int32_t peer) const {
    if (peer < 0 || size_t(peer) >= o_.hosts.size()) return "an unknown peer";
    return "peer " + std::to_string(peer) + " (" + o_.hosts[size_t(peer)].str() + ")";
  }

 private:
  void Accept();
  void Connect(int32_t peer, uint16_t index, std::chrono::steady_clock::time_point deadline);
  bool Configure(tcp::socket& s, std::string* error);
  void WatchdogTick();
  void CheckReady();
  // Start barrier: each endpoint floods what it knows of who is ready to its
  // peers; it starts once every endpoint of its component is known ready.
  void MarkReady(const uint8_t* bits, size_t bytes);
  void SendKnownReady();
  void CheckBarrier();
  std::string MyHello(int32_t peer, uint16_t index) const;
  std::string Check(const Hello& h, int32_t expect_from) const;
  void SetupFailed(const std::string& message) {
    if (!setup_failed_) {
      setup_failed_ = true;
      ReportError(message);
    }
  }

  asio::io_context& io_;
  const models::Schedule& schedule_;
  SocketOptions o_;
  tcp::acceptor acceptor_;
  std::map<int32_t, std::vector<std::shared_ptr<Session>>> peers_;
  std::vector<std::shared_ptr<Session>> pending_;  // accepted, handshake not done
  std::vector<uint8_t> zero_;
  std::unique_ptr<HostReduction> reduction_;  // null with SocketOptions::reduce off
  struct Fd {  // closed with the transport
    int fd = -1;
    ~Fd() {
      if (fd >= 0) ::close(fd);
    }
  };
  void OpenZeroCopy();
  Fd zero_file_fd_, pipe_read_, pipe_write_, null_fd_fd_;
  int zero_file_ = -1, null_fd_ = -1;
  size_t pipe_bytes_ = 0;
  std::function<void()> ready_;
  std::function<void()> finished_;
  asio::steady_timer watchdog_{io_};
  std::function<std::vector<int32_t>()> awaited_;
  std::function<void(const std::string&)> stalled_;
  uint64_t timeout_ns_ = 0, period_ns_ = 0;
  std::vector<uint64_t> last_heard_, last_wrote_;  // per endpoint, monotonic ns, as of the last tick
  // Per endpoint: traffic since the last tick. Flags, not clock reads, on
  // every read and write: the watchdog's resolution is its period anyway.
  std::vector<uint8_t> heard_, wrote_;
  uint64_t last_tick_ns_ = 0;
  bool is_ready_ = false, finishing_ = false, setup_failed_ = false;
  std::vector<int32_t> barrier_members_;  // ascending, self included
  std::vector<uint8_t> known_ready_, sent_ready_;  // bitmaps by endpoint
  bool started_ = false;
};


}  // namespace dltrace::replay::detail
