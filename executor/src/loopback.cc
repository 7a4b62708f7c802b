// SPDX-License-Identifier: GPL-2.0-only
// The in-memory loopback network: one event queue in simulated nanoseconds,
// one serialised link per (sender, receiver, channel), chunked delivery;
// notices of same-host steps take the link's latency only.
#include "dltrace/executor/loopback.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <tuple>

namespace dltrace::executor {

namespace {

class Network;

class LoopbackTransport : public Transport {
 public:
  LoopbackTransport(Network* net, int32_t self) : net_(net), self_(self) {}
  void Send(int32_t peer, uint16_t channel, uint64_t tag, uint64_t bytes,
            std::function<void()> on_sent) override;
  void SendNotice(int32_t peer, uint16_t channel, uint64_t tag, uint64_t bytes,
                  std::function<void()> on_sent) override;
  void StartTimer(uint64_t duration_ns, std::function<void()> cb) override;
  uint64_t NowNs() const override;
  void Receive(int32_t peer, uint16_t channel, uint64_t tag, uint64_t bytes) {
    Deliver(peer, channel, tag, bytes);
  }
  void ReceiveNotice(int32_t peer, uint16_t channel, uint64_t tag, uint64_t bytes) {
    DeliverNotice(peer, channel, tag, bytes);
  }

 private:
  Network* net_;
  int32_t self_;
};

class Network {
 public:
  explicit Network(const LoopbackOptions& o) : options_(o) {}

  void At(uint64_t t, std::function<void()> fn) { queue_.push({t, seq_++, std::move(fn)}); }
  uint64_t now() const { return now_; }

  void Send(int32_t from, int32_t to, uint16_t channel, uint64_t tag, uint64_t bytes,
            std::function<void()> on_sent) {
    const double ns_per_byte = options_.link.gbps > 0 ? 8.0 / options_.link.gbps : 0;
    uint64_t& free = link_free_[std::make_tuple(from, to, channel)];
    uint64_t start = std::max(now_, free);
    uint64_t finish = start + uint64_t(double(bytes) * ns_per_byte);
    free = finish;
    At(finish, std::move(on_sent));
    const uint64_t latency = uint64_t(options_.link.latency_ns);
    const uint64_t chunk = options_.chunk_bytes ? options_.chunk_bytes : bytes;
    uint64_t done = 0;
    do {
      uint64_t n = std::min(chunk, bytes - done);
      done += n;
      uint64_t when = start + uint64_t(double(done) * ns_per_byte) + latency;
      At(when, [this, from, to, channel, tag, n] { transports_[size_t(to)]->Receive(from, channel, tag, n); });
    } while (done < bytes);
  }

  // A notice is a small frame: it takes the link's latency and no link time.
  void SendNotice(int32_t from, int32_t to, uint16_t channel, uint64_t tag, uint64_t bytes,
                  std::function<void()> on_sent) {
    At(now_, std::move(on_sent));
    At(now_ + uint64_t(options_.link.latency_ns),
       [this, from, to, channel, tag, bytes] { transports_[size_t(to)]->ReceiveNotice(from, channel, tag, bytes); });
  }

  std::vector<RankResult> Run(const models::Schedule& s) {
    const size_t n = s.ranks.size();
    for (size_t e = 0; e < n; ++e) transports_.push_back(std::make_unique<LoopbackTransport>(this, int32_t(e)));
    std::vector<std::unique_ptr<ScheduleExecutor>> executors;
    for (size_t e = 0; e < n; ++e)
      executors.push_back(std::make_unique<ScheduleExecutor>(s, int32_t(e), *transports_[e], options_.executor));
    if (options_.setup)
      for (size_t e = 0; e < n; ++e) options_.setup(int32_t(e), *executors[e]);
    for (auto& executor : executors) executor->Start([](const RankResult&) {});
    while (!queue_.empty()) {
      Event ev = queue_.top();
      queue_.pop();
      now_ = ev.time;
      ev.fn();
    }
    std::vector<RankResult> results;
    for (auto& executor : executors) {
      if (!executor->finished())
        executor->Fail("stalled after " + std::to_string(executor->result().steps_done) + " of " +
                     std::to_string(executor->result().steps_total) + " steps");
      results.push_back(executor->result());
    }
    return results;
  }

 private:
  struct Event {
    uint64_t time, seq;
    std::function<void()> fn;
    bool operator<(const Event& o) const { return std::tie(time, seq) > std::tie(o.time, o.seq); }
  };
  LoopbackOptions options_;
  std::priority_queue<Event> queue_;
  uint64_t now_ = 0, seq_ = 0;
  std::map<std::tuple<int32_t, int32_t, uint16_t>, uint64_t> link_free_;
  std::vector<std::unique_ptr<LoopbackTransport>> transports_;
};

void LoopbackTransport::Send(int32_t peer, uint16_t channel, uint64_t tag, uint64_t bytes,
                             std::function<void()> on_sent) {
  net_->Send(self_, peer, channel, tag, bytes, std::move(on_sent));
}
void LoopbackTransport::SendNotice(int32_t peer, uint16_t channel, uint64_t tag, uint64_t bytes,
                                   std::function<void()> on_sent) {
  net_->SendNotice(self_, peer, channel, tag, bytes, std::move(on_sent));
}
void LoopbackTransport::StartTimer(uint64_t duration_ns, std::function<void()> cb) {
  net_->At(net_->now() + duration_ns, std::move(cb));
}
uint64_t LoopbackTransport::NowNs() const { return net_->now(); }

}  // namespace

std::vector<RankResult> RunLoopback(const models::Schedule& schedule, const LoopbackOptions& options) {
  Network net(options);
  return net.Run(schedule);
}

}  // namespace dltrace::executor
