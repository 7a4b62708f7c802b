// SPDX-License-Identifier: GPL-2.0-only
// One connection of the socket transport: frames out without blocking (one
// gathered sendmsg, sendfile for large payloads), frames in through a staging
// buffer, large payloads spliced into /dev/null.
#include "socket_transport.h"

namespace dltrace::replay::detail {

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
                                in_reduce_ == ReduceType::kNone && in_begin_ == in_end_ && t_->can_splice())
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
      in_reduce_ = in_frame_.kind == kData ? t_->ReduceTypeOf(in_frame_.tag) : ReduceType::kNone;
      in_element_ = std::max<size_t>(1, ElementBytes(in_reduce_));
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
    uint64_t take = std::min<uint64_t>(avail, in_left_);
    // The arithmetic takes whole elements; a split one waits for its rest.
    if (take < in_left_) take -= take % in_element_;
    if (take == 0) break;
    const uint8_t* data = in_.data() + in_begin_;
    const uint64_t offset = in_frame_.length - in_left_;
    in_begin_ += size_t(take);
    in_left_ -= take;
    in_frame_open_ = in_left_ > 0;
    t_->OnPayload(this, in_frame_, take, data, offset, in_reduce_);
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

}  // namespace dltrace::replay::detail
