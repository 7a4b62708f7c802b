// SPDX-License-Identifier: GPL-2.0-only
// The socket transport as the executor sees it: sends and same-host
// notices, timers, the stall watchdog and shutdown.
#include "socket_transport.h"

namespace dltrace::replay::detail {

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

}  // namespace dltrace::replay::detail
