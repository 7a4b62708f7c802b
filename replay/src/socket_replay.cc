// The socket transport: one io_context per rank process, a session per
// connection with a fixed frame header and one write in flight, payloads
// gathered from one shared zero buffer; plus connection set-up and handshake.
#include "dltrace/replay/socket_replay.h"

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

namespace dltrace::replay {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;
using executor::ConnectedEndpoints;
using executor::ExecutorOptions;
using executor::PeersOf;
using executor::RankResult;
using executor::ScheduleExecutor;
using executor::Transport;

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

namespace {

constexpr size_t kHeaderBytes = 24;
// Payload is zeros nobody reads. Small ones are copied: the sender gathers
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

void Put(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = uint8_t(v >> (8 * i));
}
uint64_t Get(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}
void Encode(const Frame& f, uint8_t* p) {
  Put(p, f.tag, 8);
  Put(p + 8, f.channel, 2);
  Put(p + 10, f.kind, 2);
  Put(p + 12, 0, 4);
  Put(p + 16, f.length, 8);
}
Frame Decode(const uint8_t* p) {
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

uint64_t TokenHash(const std::string& token) {
  if (token.empty()) return 0;
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : token) h = (h ^ uint8_t(c)) * 0x100000001b3ull;
  return (h & 0xFFFFFFFFu) | 1;  // never 0, which means "no token"
}

uint64_t MonotonicNs() {
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
};

class SocketTransport : public Transport {
 public:
  SocketTransport(asio::io_context& io, const models::Schedule& schedule, const SocketOptions& o)
      : io_(io), schedule_(schedule), o_(o), acceptor_(io), zero_(kZeroBytes, 0) {
    OpenZeroCopy();
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
  void OnPayload(Session* s, const Frame& f, uint64_t bytes) {
    if (!s->ready) return Lost(s, "sent data before its handshake");
    Deliver(s->peer, f.channel, f.tag, bytes);
  }
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

Session::Session(SocketTransport* t, tcp::socket socket)
    : t_(t), socket_(std::move(socket)), in_(t->StageBytes()) {}

// Writes queued frames until the socket is full (then again once it is
// writable) or a burst is spent (then again after the others had a turn).
void Session::Flush() {
  if (flushing_ || write_pending_ || closed) return;  // an on_sent that queued more: the loop below takes it
  auto self = shared_from_this();
  flushing_ = true;
  uint64_t budget = kBurstBytes;
  while (!out_.empty() && !closed) {
    const Wrote w = WriteFront(&budget);
    if (w == Wrote::kFailed) break;
    if (w == Wrote::kBlocked) {
      write_pending_ = true;
      socket_.async_wait(tcp::socket::wait_write, [this, self](const error_code& ec) {
        write_pending_ = false;
        if (closed) return;
        if (ec) return t_->Lost(this, ec, "write failed: ");
        Flush();
      });
      break;
    }
    if (w == Wrote::kYield) {
      write_pending_ = true;
      asio::post(socket_.get_executor(), [this, self] {
        write_pending_ = false;
        Flush();
      });
      break;
    }
    auto done = std::move(out_.front().on_sent);
    out_.pop_front();
    out_done_ = 0;
    if (done) done();
  }
  flushing_ = false;
}

// Writes what the socket takes of the front frame without blocking.
Session::Wrote Session::WriteFront(uint64_t* budget) {
  const Out& out = out_.front();
  const bool data = out.frame.kind == kData;
  const uint64_t payload = data ? out.frame.length : out.control.size();
  if (out_done_ == 0) Encode(out.frame, out_header_.data());
  const int fd = socket_.native_handle();
  while (out_done_ < kHeaderBytes + payload) {
    if (*budget == 0) return Wrote::kYield;
    const uint64_t at = out_done_ > kHeaderBytes ? out_done_ - kHeaderBytes : 0;  // payload bytes written
    const bool zero_copy = data && payload - at >= kZeroCopyBytes && t_->zero_file() >= 0;
    ssize_t n;
    if (zero_copy && out_done_ >= kHeaderBytes) {
      off_t offset = off_t(at % kZeroFileBytes);
      size_t want = size_t(std::min<uint64_t>({payload - at, kZeroFileBytes - uint64_t(offset), *budget}));
      n = ::sendfile(fd, t_->zero_file(), &offset, want);
      if (n < 0 && (errno == EINVAL || errno == ENOSYS)) {  // not on this kernel or socket: copy instead
        t_->NoSendfile();
        continue;
      }
    } else {
      std::array<iovec, kMaxIovecs> iov;
      size_t k = 0;
      if (out_done_ < kHeaderBytes) iov[k++] = {out_header_.data() + out_done_, kHeaderBytes - out_done_};
      if (!data) {
        if (at < payload) iov[k++] = {const_cast<char*>(out.control.data()) + at, size_t(payload - at)};
      } else if (!zero_copy) {
        for (uint64_t left = std::min(payload - at, *budget); left && k < kMaxIovecs; ++k) {
          size_t m = size_t(std::min<uint64_t>(left, kZeroBytes));
          iov[k] = {const_cast<uint8_t*>(t_->zero().data()), m};
          left -= m;
        }
      }
      msghdr msg{};
      msg.msg_iov = iov.data();
      msg.msg_iovlen = k;
      // A header before a sendfile()d payload waits for it (one segment, not two).
      n = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT | (zero_copy ? MSG_MORE : 0));
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Wrote::kBlocked;
      t_->Lost(this, error_code(errno, boost::system::system_category()), "write failed: ");
      return Wrote::kFailed;
    }
    out_done_ += uint64_t(n);
    *budget -= std::min<uint64_t>(*budget, uint64_t(n));
    t_->Wrote(this);
  }
  return Wrote::kAll;
}

void Session::Continue(void (Session::*step)()) {
  auto self = shared_from_this();
  asio::post(socket_.get_executor(), [this, self, step] {
    if (!closed) (this->*step)();
  });
}

// Reads what is there into the staging buffer (Asio tries at once, and after
// a short read waits for the socket without another try).
void Session::Read() {
  auto self = shared_from_this();
  socket_.async_read_some(asio::buffer(in_.data() + in_end_, in_.size() - in_end_),
                          [this, self](const error_code& ec, size_t n) {
                            if (closed) return;
                            if (ec) return t_->Lost(this, ec);
                            t_->Heard(this);
                            in_end_ += n;
                            if (!Parse()) return;
                            // The rest of a large payload bypasses the buffer.
                            if (in_frame_open_ && in_frame_.kind == kData && in_left_ >= kZeroCopyBytes &&
                                in_begin_ == in_end_ && t_->can_splice())
                              return Drain();
                            Read();
                          });
}

// Hands every frame (and payload part) in the staging buffer to the
// transport; keeps an incomplete header or control frame at the front.
// False once the session closed.
bool Session::Parse() {
  auto self = shared_from_this();
  for (;;) {
    const size_t avail = in_end_ - in_begin_;
    if (!in_frame_open_) {
      if (avail < kHeaderBytes) break;
      in_frame_ = Decode(in_.data() + in_begin_);
      in_begin_ += kHeaderBytes;
      in_frame_open_ = true;
      in_left_ = in_frame_.length;
      if (in_frame_.kind != kData && in_left_ > t_->MaxControlBytes()) {
        t_->Lost(this, "sent a malformed frame");
        return false;
      }
      if (in_frame_.kind == kData && in_left_ == 0) {
        in_frame_open_ = false;
        t_->OnPayload(this, in_frame_, 0);
        if (closed) return false;
      }
      continue;
    }
    if (in_frame_.kind != kData) {
      if (avail < in_left_) break;
      const uint8_t* payload = in_.data() + in_begin_;
      in_begin_ += size_t(in_left_);
      in_frame_open_ = false;
      t_->OnControl(self, in_frame_, payload, size_t(in_left_));
      if (closed) return false;
      continue;
    }
    const uint64_t take = std::min<uint64_t>(avail, in_left_);
    if (take == 0) break;
    in_begin_ += size_t(take);
    in_left_ -= take;
    in_frame_open_ = in_left_ > 0;
    t_->OnPayload(this, in_frame_, take);
    if (closed) return false;
  }
  if (in_begin_ == in_end_) {
    in_begin_ = in_end_ = 0;
  } else if (in_begin_ > 0) {
    std::memmove(in_.data(), in_.data() + in_begin_, in_end_ - in_begin_);
    in_end_ -= in_begin_;
    in_begin_ = 0;
  }
  return true;
}

// Splices the rest of a large payload into /dev/null, then reads on.
void Session::Drain() {
  auto self = shared_from_this();
  uint64_t budget = kBurstBytes;
  while (in_left_ >= kZeroCopyBytes) {
    if (budget == 0) return Continue(&Session::Drain);
    ssize_t n = t_->SpliceAway(socket_.native_handle(), std::min(in_left_, budget));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        socket_.async_wait(tcp::socket::wait_read, [this, self](const error_code& ec) {
          if (closed) return;
          if (ec) return t_->Lost(this, ec);
          Drain();
        });
        return;
      }
      if (errno == EINVAL || errno == ENOSYS) {  // not on this kernel or socket: copy instead
        t_->NoSplice();
        break;
      }
      return t_->Lost(this, error_code(errno, boost::system::system_category()));
    }
    if (n == 0) return t_->Lost(this, asio::error::eof);
    t_->Heard(this);
    in_left_ -= uint64_t(n);
    budget -= std::min<uint64_t>(budget, uint64_t(n));
    in_frame_open_ = in_left_ > 0;
    t_->OnPayload(this, in_frame_, uint64_t(n));
    if (closed) return;
  }
  Read();  // what is left of it comes with the next frames
}

void SocketTransport::OpenZeroCopy() {
  // Both are optional: without them payloads are copied as small ones are.
  zero_file_fd_.fd = ::memfd_create("dltrace-replay-zeros", MFD_CLOEXEC);
  if (zero_file_fd_.fd >= 0 && ::ftruncate(zero_file_fd_.fd, off_t(kZeroFileBytes)) == 0) zero_file_ = zero_file_fd_.fd;
  int p[2];
  if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) return;
  pipe_read_.fd = p[0];
  pipe_write_.fd = p[1];
  ::fcntl(p[1], F_SETPIPE_SZ, kPipeBytes);  // may be refused: the default then
  int size = ::fcntl(p[1], F_GETPIPE_SZ);
  null_fd_fd_.fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (size > 0 && null_fd_fd_.fd >= 0) {
    pipe_bytes_ = size_t(size);
    null_fd_ = null_fd_fd_.fd;
  }
}

ssize_t SocketTransport::SpliceAway(int fd, uint64_t bytes) {
  ssize_t n = ::splice(fd, nullptr, pipe_write_.fd, nullptr, size_t(std::min<uint64_t>(bytes, pipe_bytes_)),
                       SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
  // The pipe is empty between calls: /dev/null takes everything at once.
  for (ssize_t out = 0; n > 0 && out < n;) {
    ssize_t m = ::splice(pipe_read_.fd, nullptr, null_fd_, nullptr, size_t(n - out), SPLICE_F_MOVE);
    if (m <= 0) {
      if (m < 0 && errno == EINTR) continue;
      errno = m < 0 ? errno : EIO;
      NoSplice();  // a pipe that cannot be emptied cannot be used again
      return -1;
    }
    out += m;
  }
  return n;
}

std::string SocketTransport::MyHello(int32_t peer, uint16_t index) const {
  Hello h;
  h.from = o_.self;
  h.to = peer;
  h.endpoints = uint32_t(schedule_.ranks.size());
  h.index = index;
  h.channels = uint16_t(peers_.at(peer).size());
  h.schedule_hash = o_.schedule_hash;
  h.token_hash = TokenHash(o_.token);
  std::string out(Hello::kBytes, '\0');
  h.Encode(reinterpret_cast<uint8_t*>(&out[0]));
  return out;
}

std::string SocketTransport::Check(const Hello& h, int32_t expect_from) const {
  if (h.magic != kHandshakeMagic || h.version != kProtocolVersion) return "not a dltrace replay peer of this version";
  if (h.token_hash != TokenHash(o_.token)) return "DLTRACE_REPLAY_TOKEN does not match";
  if (h.schedule_hash != o_.schedule_hash || h.endpoints != schedule_.ranks.size())
    return "it replays a different schedule (trace set, algorithm or options differ)";
  if (h.to != o_.self) return "it expected endpoint " + std::to_string(h.to) + ", this is " + std::to_string(o_.self);
  if (expect_from >= 0 && h.from != expect_from) return "it says it is endpoint " + std::to_string(h.from);
  auto it = peers_.find(h.from);
  if (it == peers_.end()) return "endpoint " + std::to_string(h.from) + " exchanges nothing with this one";
  if (h.channels != it->second.size() || h.index >= it->second.size()) return "connection counts disagree";
  if (expect_from < 0 && it->second[h.index]) return "duplicate connection";
  return "";
}

bool SocketTransport::Configure(tcp::socket& s, std::string* error) {
  error_code ec;
  s.set_option(tcp::no_delay(true), ec);
  // Writes, sendfile() and splice() are tried from the caller and must not block.
  if (!ec) s.non_blocking(true, ec);
  if (!ec && o_.send_buffer > 0) s.set_option(asio::socket_base::send_buffer_size(o_.send_buffer), ec);
  if (!ec && o_.receive_buffer > 0)
    s.set_option(asio::socket_base::receive_buffer_size(o_.receive_buffer), ec);
  if (!ec) s.set_option(asio::socket_base::keep_alive(true), ec);
  const int fd = s.native_handle();
  if (!ec && (::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &kKeepIdleS, sizeof kKeepIdleS) != 0 ||
              ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &kKeepIntervalS, sizeof kKeepIntervalS) != 0 ||
              ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &kKeepCount, sizeof kKeepCount) != 0))
    ec = error_code(errno, boost::system::system_category());
  if (ec) {
    *error = "socket option: " + ec.message();
    return false;
  }
  if (!o_.congestion.empty() &&
      ::setsockopt(s.native_handle(), IPPROTO_TCP, TCP_CONGESTION, o_.congestion.data(),
                   socklen_t(o_.congestion.size())) != 0)
    return CheckCongestionControl(o_.congestion, error);
  return true;
}

bool SocketTransport::Open(std::function<void()> ready, std::string* error) {
  ready_ = std::move(ready);
  error_code ec;
  const HostPort& me = o_.hosts[size_t(o_.self)];
  const std::string bind_host = o_.listen_host.empty() ? me.host : o_.listen_host;
  if (o_.listen_fd >= 0) {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    ::getsockname(o_.listen_fd, reinterpret_cast<sockaddr*>(&a), &len);
    acceptor_.assign(a.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), o_.listen_fd, ec);
  } else {
    tcp::resolver resolver(io_);
    auto found = resolver.resolve(bind_host, std::to_string(me.port), ec);
    if (!ec) {
      tcp::endpoint at = *found.begin();
      acceptor_.open(at.protocol(), ec);
      if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
      if (!ec) acceptor_.bind(at, ec);
      if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    }
  }
  if (ec) {
    *error = "cannot listen on " + bind_host + ":" + std::to_string(me.port) + ": " + ec.message();
    return false;
  }
  Accept();
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(int64_t(o_.connect_timeout_s * 1000));
  for (auto& kv : peers_)
    if (kv.first > o_.self)
      for (uint16_t k = 0; k < kv.second.size(); ++k) Connect(kv.first, k, deadline);
  // Waits for peers that never connect, as long as connecting to them would.
  auto timer = std::make_shared<asio::steady_timer>(io_, deadline);
  timer->async_wait([this, timer](const error_code& e) {
    if (e || is_ready_) return;
    for (auto& kv : peers_)
      for (auto& s : kv.second)
        if (!s || !s->ready)
          return SetupFailed(Name(kv.first) + " did not connect within " +
                             std::to_string(int(o_.connect_timeout_s)) + " s");
  });
  // The others' connections may come up later than ours, but not much later
  // than they would give up themselves.
  auto barrier = std::make_shared<asio::steady_timer>(io_, deadline + (deadline - std::chrono::steady_clock::now()) +
                                                               std::chrono::seconds(5));
  barrier->async_wait([this, barrier](const error_code& e) {
    if (e || started_ || setup_failed_) return;
    std::string missing;
    size_t count = 0;
    for (int32_t m : barrier_members_)
      if (!(known_ready_[size_t(m) / 8] >> (m % 8) & 1) && ++count <= 8)
        missing += (missing.empty() ? "" : ", ") + std::to_string(m);
    if (count > 8) missing += " and " + std::to_string(count - 8) + " more";
    SetupFailed("start barrier: endpoint(s) " + missing + " never had all their connections up");
  });
  CheckReady();
  return true;
}

void SocketTransport::Accept() {
  acceptor_.async_accept([this](const error_code& ec, tcp::socket socket) {
    if (ec) {
      if (ec != asio::error::operation_aborted) SetupFailed("accept failed: " + ec.message());
      return;
    }
    auto s = std::make_shared<Session>(this, std::move(socket));
    std::string error;
    if (!Configure(s->socket(), &error)) return SetupFailed(error);
    pending_.push_back(s);
    s->StartReading();
    Accept();
  });
}

void SocketTransport::Connect(int32_t peer, uint16_t index, std::chrono::steady_clock::time_point deadline) {
  auto s = std::make_shared<Session>(this, tcp::socket(io_));
  const HostPort& hp = o_.hosts[size_t(peer)];
  tcp::resolver resolver(io_);
  error_code ec;
  auto found = resolver.resolve(hp.host, std::to_string(hp.port), ec);
  if (ec) return SetupFailed("cannot resolve " + Name(peer) + ": " + ec.message());
  tcp::endpoint at = *found.begin();
  s->socket().async_connect(at, [this, s, peer, index, deadline](const error_code& e) {
    if (setup_failed_) return;
    if (e) {
      s->closed = true;
      if (std::chrono::steady_clock::now() >= deadline)
        return SetupFailed("cannot connect to " + Name(peer) + ": " + e.message() + " (gave up after " +
                           std::to_string(int(o_.connect_timeout_s)) + " s)");
      // The peer may not listen yet: try again shortly.
      auto retry = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(50));
      retry->async_wait([this, retry, peer, index, deadline](const error_code&) { Connect(peer, index, deadline); });
      return;
    }
    std::string error;
    if (!Configure(s->socket(), &error)) return SetupFailed(error);
    s->peer = peer;
    s->index = index;
    peers_[peer][index] = s;
    s->Queue(Frame{0, index, kHello, Hello::kBytes}, MyHello(peer, index), nullptr);
    s->StartReading();
  });
}

void SocketTransport::OnControl(const std::shared_ptr<Session>& s, const Frame& f, const uint8_t* payload,
                                size_t bytes) {
  if (f.kind == kRefuse) {
    std::string why(reinterpret_cast<const char*>(payload), bytes);
    s->Close();
    return SetupFailed(Name(s->peer) + " refused the connection: " + why);
  }
  if (f.kind == kHeartbeat) return;
  if (f.kind == kReady) {
    if (!s->ready) return Lost(s.get(), "sent data before its handshake");
    if (bytes != known_ready_.size()) return Lost(s.get(), "sent a malformed frame");
    MarkReady(payload, bytes);
    return;
  }
  if (f.kind == kNotice) {
    if (!s->ready) return Lost(s.get(), "sent data before its handshake");
    if (bytes != 8) return Lost(s.get(), "sent a malformed frame");
    return DeliverNotice(s->peer, f.channel, f.tag, Get(payload, 8));
  }
  if (f.kind != kHello || bytes != Hello::kBytes) return Lost(s.get(), "sent a malformed handshake");
  Hello h = Hello::Decode(payload);
  if (s->peer >= 0) {  // our connection: this is the peer's answer
    std::string why = Check(h, s->peer);
    if (!why.empty()) {
      s->Close();
      return SetupFailed("handshake with " + Name(s->peer) + " failed: " + why);
    }
    s->ready = true;
    return CheckReady();
  }
  // An accepted connection introducing itself.
  std::string why = Check(h, -1);
  if (!why.empty()) {
    // Refused peers are told why; this endpoint goes on waiting for the right one.
    std::fprintf(stderr, "dltrace replay: endpoint %d: refused a connection from %s: %s\n", o_.self,
                 s->socket().remote_endpoint().address().to_string().c_str(), why.c_str());
    s->Queue(Frame{0, 0, kRefuse, why.size()}, why, [s] { s->Close(); });
    return;
  }
  s->peer = h.from;
  s->index = h.index;
  peers_[h.from][h.index] = s;
  s->Queue(Frame{0, h.index, kHello, Hello::kBytes}, MyHello(h.from, h.index), nullptr);
  s->ready = true;
  CheckReady();
}

void SocketTransport::CheckReady() {
  if (is_ready_ || setup_failed_) return;
  for (auto& kv : peers_)
    for (auto& s : kv.second)
      if (!s || !s->ready) return;
  is_ready_ = true;
  pending_.clear();
  std::vector<uint8_t> bits(known_ready_.size(), 0);
  bits[size_t(o_.self) / 8] = uint8_t(1u << (o_.self % 8));
  MarkReady(bits.data(), bits.size());
}

void SocketTransport::MarkReady(const uint8_t* bits, size_t bytes) {
  bool changed = false;
  for (size_t i = 0; i < bytes && i < known_ready_.size(); ++i) {
    const uint8_t merged = known_ready_[i] | bits[i];
    changed = changed || merged != known_ready_[i];
    known_ready_[i] = merged;
  }
  if (!changed || !is_ready_) return;  // before our own connections are up, we only listen
  // Coalesce what several frames taught us into one frame per peer.
  asio::post(io_, [this] { SendKnownReady(); });
  CheckBarrier();
}

void SocketTransport::SendKnownReady() {
  if (sent_ready_ == known_ready_ || setup_failed_ || finishing_) return;
  sent_ready_ = known_ready_;
  const std::string bits(known_ready_.begin(), known_ready_.end());
  for (auto& kv : peers_) {
    auto& first = kv.second.front();
    if (first && first->ready && !first->closed) first->Queue(Frame{0, 0, kReady, bits.size()}, bits, nullptr);
  }
}

void SocketTransport::CheckBarrier() {
  if (started_ || !is_ready_ || setup_failed_) return;
  for (int32_t m : barrier_members_)
    if (!(known_ready_[size_t(m) / 8] >> (m % 8) & 1)) return;
  started_ = true;
  // Peers learn it before any data of ours: the frame goes ahead of it.
  SendKnownReady();
  if (ready_) ready_();
}

void SocketTransport::Lost(Session* s, const std::string& cause) {
  s->Close();
  if (finishing_) {
    return FinishIfAllPeersDone();
  }
  if (s->peer < 0 || !s->ready) {
    if (s->peer >= 0) SetupFailed(Name(s->peer) + " " + cause + " during the handshake");
    return;  // an unidentified connection that went away: not a peer of ours
  }
  ReportError(Name(s->peer) + " " + cause + " while the replay still needed it");
}

void SocketTransport::PeerDone(Session* s) {
  // Keep the socket open: our last writes to the peer may still be completing.
  s->peer_done = true;
  if (finishing_) {
    return FinishIfAllPeersDone();
  }
  if (!s->ready) return Lost(s, "closed the connection");
  // Data owed on the peer's other channels may still be on its way: only
  // once every connection to it ended is missing data an error.
  for (const auto& c : peers_[s->peer])
    if (c && !c->peer_done && !c->closed) return;
  if (expects_from && expects_from(s->peer)) Lost(s, "closed the connection");
}

// Calls the Finish() callback, once, when every connection has ended.
void SocketTransport::FinishIfAllPeersDone() {
  if (!finished_ || !AllPeersDone()) return;
  auto done = std::move(finished_);
  finished_ = nullptr;
  done();
}

bool SocketTransport::AllPeersDone() const {
  for (const auto& kv : peers_)
    for (const auto& c : kv.second)
      if (c && !c->closed && !c->peer_done) return false;
  return true;
}

void SocketTransport::Send(int32_t peer, uint16_t channel, uint64_t tag, uint64_t bytes,
                           std::function<void()> on_sent) {
  if (peer == o_.self) {  // a step to itself never touches the network
    asio::post(io_, [this, channel, tag, bytes, on_sent = std::move(on_sent)] {
      on_sent();
      Deliver(o_.self, channel, tag, bytes);
    });
    return;
  }
  auto& conns = peers_.at(peer);
  conns[channel % conns.size()]->Queue(Frame{tag, channel, kData, bytes}, std::string(), std::move(on_sent));
}

void SocketTransport::SendNotice(int32_t peer, uint16_t channel, uint64_t tag, uint64_t bytes,
                                 std::function<void()> on_sent) {
  if (peer == o_.self) {
    asio::post(io_, [this, channel, tag, bytes, on_sent = std::move(on_sent)] {
      on_sent();
      DeliverNotice(o_.self, channel, tag, bytes);
    });
    return;
  }
  std::string count(8, '\0');
  Put(reinterpret_cast<uint8_t*>(&count[0]), bytes, 8);
  auto& conns = peers_.at(peer);
  conns[channel % conns.size()]->Queue(Frame{tag, channel, kNotice, 8}, std::move(count), std::move(on_sent));
}

void SocketTransport::StartWatchdog(std::function<std::vector<int32_t>()> awaited,
                                    std::function<void(const std::string&)> stalled) {
  if (o_.peer_timeout_s <= 0) return;
  awaited_ = std::move(awaited);
  stalled_ = std::move(stalled);
  timeout_ns_ = uint64_t(o_.peer_timeout_s * 1e9);
  // Checks (and heartbeats) several times per timeout, at most once a second.
  period_ns_ = std::clamp<uint64_t>(timeout_ns_ / 5, 20'000'000, 1'000'000'000);
  const uint64_t start = MonotonicNs();
  for (auto& kv : peers_) {
    last_heard_[size_t(kv.first)] = start;
    last_wrote_[size_t(kv.first)] = start;
  }
  last_tick_ns_ = start;
  WatchdogTick();
}

void SocketTransport::WatchdogTick() {
  watchdog_.expires_after(std::chrono::nanoseconds(period_ns_));
  watchdog_.async_wait([this](const error_code& ec) {
    if (ec || finishing_) return;
    const uint64_t now = MonotonicNs();
    // Traffic since the last tick: heard as of now (never blames a peer
    // early), wrote as of the last tick (never skips a heartbeat that is due).
    for (size_t p = 0; p < heard_.size(); ++p) {
      if (heard_[p]) last_heard_[p] = now;
      if (wrote_[p]) last_wrote_[p] = last_tick_ns_;
      heard_[p] = wrote_[p] = 0;
    }
    last_tick_ns_ = now;
    std::set<int32_t> waiting;
    for (int32_t p : awaited_()) waiting.insert(p);
    for (auto& kv : peers_) {
      for (auto& s : kv.second)
        if (s && s->busy()) waiting.insert(kv.first);
      // An idle connection tells the peer this endpoint is alive.
      auto& first = kv.second.front();
      if (first && first->ready && !first->closed && !first->busy() &&
          now - last_wrote_[size_t(kv.first)] >= period_ns_)
        first->Queue(Frame{0, 0, kHeartbeat, 0}, std::string(), nullptr);
    }
    std::string silent;
    int count = 0;
    for (int32_t p : waiting) {
      if (p == o_.self || now - last_heard_[size_t(p)] < timeout_ns_) continue;
      silent += (silent.empty() ? "" : ", ") + Name(p);
      ++count;
    }
    if (count) {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%g", o_.peer_timeout_s);
      return stalled_("nothing came from " + silent + " for " + secs + " s while waiting on " +
                      (count > 1 ? "them" : "it") + " (stopped or hung? see --peer-timeout)");
    }
    WatchdogTick();
  });
}

void SocketTransport::StartTimer(uint64_t duration_ns, std::function<void()> cb) {
  // Sleep until shortly before the deadline, then spin: compute gaps of tens
  // of microseconds stay precise without a busy core for long ones.
  const uint64_t deadline = MonotonicNs() + duration_ns;
  constexpr uint64_t kSpinNs = 50'000;
  auto spin = [deadline, cb = std::move(cb)] {
    while (MonotonicNs() < deadline) {
    }
    cb();
  };
  if (duration_ns <= kSpinNs) return asio::post(io_, std::move(spin));
  auto timer = std::make_shared<asio::steady_timer>(io_, std::chrono::nanoseconds(duration_ns - kSpinNs));
  timer->async_wait([timer, spin = std::move(spin)](const error_code&) { spin(); });
}

void SocketTransport::Finish(std::function<void()> done) {
  finishing_ = true;
  watchdog_.cancel();
  finished_ = std::move(done);
  error_code ignored;
  acceptor_.close(ignored);
  for (auto& kv : peers_)
    for (auto& s : kv.second)
      if (s && !s->closed) s->ShutdownSend();
  FinishIfAllPeersDone();
}

void SocketTransport::CloseAll() {
  finishing_ = true;
  finished_ = nullptr;
  watchdog_.cancel();
  error_code ignored;
  acceptor_.close(ignored);
  for (auto& kv : peers_)
    for (auto& s : kv.second)
      if (s) s->Close();
  for (auto& s : pending_) s->Close();
}

}  // namespace

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
  if (!engine.finished() && r.error.empty()) r.error = "stopped before the schedule finished";
  return r;
}

}  // namespace dltrace::replay
