// Matches incoming bytes to receive steps by (peer, tag): data may arrive
// before its receive is posted, in several parts, and in any order across tags.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace dltrace::replay {

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
  struct Key {
    int32_t peer;
    uint64_t tag;
    bool operator==(const Key& o) const { return peer == o.peer && tag == o.tag; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>()(k.tag * 0x9E3779B97F4A7C15ull ^ uint32_t(k.peer));
    }
  };
  struct Entry {
    bool posted = false;
    bool arrived = false;  // some chunk (maybe of zero bytes) came
    uint64_t expected = 0;
    uint64_t received = 0;
    uint32_t id = 0;
  };
  bool MaybeComplete(std::unordered_map<Key, Entry, KeyHash>::iterator it);

  CompleteFn on_complete_;
  CompleteFn on_first_arrival_;
  std::unordered_map<Key, Entry, KeyHash> entries_;
};

}  // namespace dltrace::replay
