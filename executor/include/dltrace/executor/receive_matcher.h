// SPDX-License-Identifier: GPL-2.0-only
// Matches incoming bytes to receive steps by (peer, tag): data may arrive
// before its receive is posted, in several parts, and in any order across tags.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dltrace::executor {

class ReceiveMatcher {
 public:
  // Runs when a posted receive has all its bytes: the id given to Post.
  using CompleteFn = std::function<void(uint32_t id)>;
  explicit ReceiveMatcher(CompleteFn on_complete) : on_complete_(std::move(on_complete)) {}
  // Runs when the first bytes of a receive already posted arrive (not for
  // data that came before its post): the id given to Post.
  void set_on_first_arrival(CompleteFn fn) { on_first_arrival_ = std::move(fn); }

  // A receive step is issued: ID expects BYTES from PEER with TAG. Completes
  // at once when they already arrived. Returns false (and says why in *error)
  // when (peer, tag) was already posted.
  bool Post(int32_t peer, uint64_t tag, uint64_t bytes, uint32_t id, std::string* error);
  // BYTES of (PEER, TAG) arrived (a whole message or a part). Returns false
  // (and says why) when more arrived than the posted receive expects.
  bool Arrive(int32_t peer, uint64_t tag, uint64_t bytes, std::string* error);

  // Messages that arrived (at least in part) with no receive posted yet.
  size_t early() const;
  // Receives posted and not yet complete.
  size_t waiting() const;
  // The peers of receives posted and not yet complete, ascending, each once.
  std::vector<int32_t> waiting_peers() const;

 private:
  struct Entry {
    int32_t peer = 0;
    uint64_t tag = 0;
    bool used = false;     // the slot holds a message
    bool posted = false;
    bool arrived = false;  // some chunk (maybe of zero bytes) came
    uint64_t expected = 0;
    uint64_t received = 0;
    uint32_t id = 0;
  };
  // Open addressing with linear probing in one array (a message's lookup
  // touches one or two cache lines, not a bucket and a heap node each; the
  // matcher is on every message's path), backward-shift erase, no tombstones.
  size_t Home(int32_t peer, uint64_t tag) const {
    return size_t(((tag ^ uint64_t(uint32_t(peer)) * 0xC2B2AE3D27D4EB4Full) * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  size_t FindOrAdd(int32_t peer, uint64_t tag);
  void Erase(size_t slot);
  bool MaybeComplete(size_t slot);

  CompleteFn on_complete_;
  CompleteFn on_first_arrival_;
  std::vector<Entry> slots_ = std::vector<Entry>(64);
  int shift_ = 64 - 6;  // 64 - log2(slots_.size())
  size_t used_ = 0;
};

}  // namespace dltrace::executor
