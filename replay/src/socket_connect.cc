// SPDX-License-Identifier: GPL-2.0-only
// Connection set-up of the socket transport: listening, connecting with
// retries, the handshake (schedule hash, endpoints, token), socket options,
// control frames, the job-wide start barrier and peers ending.
#include "socket_transport.h"

namespace dltrace::replay::detail {

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

}  // namespace dltrace::replay::detail
