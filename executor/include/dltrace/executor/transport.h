// SPDX-License-Identifier: GPL-2.0-only
// The transport interface the schedule executor runs over: send, timer, clock,
// delivery of incoming bytes, and notices of same-host transfers the model
// times. Sockets (Asio), ns-3 and the in-memory test network implement it;
// the executor never sees which one it has.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

namespace dltrace::executor {

class Transport {
 public:
  // Incoming payload: (peer endpoint, channel, tag, bytes). A message may come
  // in several chunks, and before its receive step was issued; a zero-byte
  // message comes as one chunk of zero bytes.
  using DataFn = std::function<void(int32_t peer, uint16_t channel, uint64_t tag, uint64_t bytes)>;
  // A transport that cannot go on (a peer died, a connection dropped): one
  // line naming the peer and the cause.
  using ErrorFn = std::function<void(const std::string& message)>;

  virtual ~Transport() = default;

  // Sends BYTES to PEER on CHANNEL; ON_SENT runs once the transport took all of it.
  virtual void Send(int32_t peer, uint16_t channel, uint64_t tag, uint64_t bytes,
                    std::function<void()> on_sent) = 0;
  // Runs CB after DURATION_NS (on the transport's clock).
  virtual void StartTimer(uint64_t duration_ns, std::function<void()> cb) = 0;
  virtual uint64_t NowNs() const = 0;

  // Tells PEER that BYTES of (CHANNEL, TAG) went over a link the model times
  // (a same-host step): only the count travels, and PEER's executor waits the
  // model's time. A transport that cannot carry notices sends the bytes.
  virtual void SendNotice(int32_t peer, uint16_t channel, uint64_t tag, uint64_t bytes,
                          std::function<void()> on_sent) {
    Send(peer, channel, tag, bytes, std::move(on_sent));
  }

  void set_on_data(DataFn fn) { on_data_ = std::move(fn); }
  // Incoming notice: (peer endpoint, channel, tag, bytes the model moves).
  void set_on_notice(DataFn fn) { on_notice_ = std::move(fn); }
  void set_on_error(ErrorFn fn) { on_error_ = std::move(fn); }

 protected:
  void Deliver(int32_t peer, uint16_t channel, uint64_t tag, uint64_t bytes) {
    if (on_data_) on_data_(peer, channel, tag, bytes);
  }
  void DeliverNotice(int32_t peer, uint16_t channel, uint64_t tag, uint64_t bytes) {
    if (on_notice_) on_notice_(peer, channel, tag, bytes);
  }
  void ReportError(const std::string& message) {
    if (on_error_) on_error_(message);
  }

 private:
  DataFn on_data_;
  DataFn on_notice_;
  ErrorFn on_error_;
};

}  // namespace dltrace::executor
