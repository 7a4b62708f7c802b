// SPDX-License-Identifier: GPL-2.0-only
// Variable-length integers for the packed columns of a version-2 chunk
// (formats/README.md, "Chunk data"): LEB128 for unsigned values, zigzag
// then LEB128 for signed ones. The reader's side checks every byte against
// the end of the buffer, so a damaged or crafted chunk fails cleanly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace dltrace::formats::packed {

// Bytes one varint takes at most (a 64-bit value in 7-bit groups).
constexpr size_t kMaxVarintBytes = 10;

inline uint64_t Zigzag(int64_t v) { return (uint64_t(v) << 1) ^ uint64_t(v >> 63); }
inline int64_t Unzigzag(uint64_t v) { return int64_t(v >> 1) ^ -int64_t(v & 1); }

// a - b without signed overflow (times are int64 or uint64 nanoseconds).
inline int64_t Diff(uint64_t a, uint64_t b) { return int64_t(a - b); }

// Appends varints to a buffer the caller sized beforehand (kMaxVarintBytes
// per value at most): no bounds check or vector growth per byte, and the
// one- and two-byte values a chunk mostly holds (shape ids, time deltas
// under 16 us) take one branch each.
class Writer {
 public:
  explicit Writer(uint8_t* at) : p_(at) {}
  __attribute__((always_inline)) void U(uint64_t v) {
    if (__builtin_expect(v < 0x80, 1)) {
      *p_++ = uint8_t(v);
      return;
    }
    if (v < 0x4000) {
      p_[0] = uint8_t(v | 0x80);
      p_[1] = uint8_t(v >> 7);
      p_ += 2;
      return;
    }
    do {
      *p_++ = uint8_t(v | 0x80);
      v >>= 7;
    } while (v >= 0x80);
    *p_++ = uint8_t(v);
  }
  __attribute__((always_inline)) void S(int64_t v) { U(Zigzag(v)); }
  void Byte(uint8_t b) { *p_++ = b; }
  void Bytes(const uint8_t* from, size_t n) {
    std::memcpy(p_, from, n);
    p_ += n;
  }
  void Fill(uint8_t b, size_t n) {
    std::memset(p_, b, n);
    p_ += n;
  }
  uint8_t* end() const { return p_; }

 private:
  uint8_t* p_;
};

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  bool ok() const { return ok_; }
  bool done() const { return p_ == end_; }
  size_t left() const { return size_t(end_ - p_); }
  uint64_t U() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return Fail();
      uint8_t b = *p_++;
      if (shift == 63 && b > 1) return Fail();  // more than 64 bits
      v |= uint64_t(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    return Fail();
  }
  int64_t S() { return Unzigzag(U()); }
  const uint8_t* Bytes(size_t n) {
    if (left() < n) {
      Fail();
      return nullptr;
    }
    const uint8_t* at = p_;
    p_ += n;
    return at;
  }

 private:
  uint64_t Fail() {
    ok_ = false;
    p_ = end_;
    return 0;
  }
  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

}  // namespace dltrace::formats::packed
