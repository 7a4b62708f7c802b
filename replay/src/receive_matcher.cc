// Receive matching by (peer, tag): one entry per message, created by whichever
// of the post and the first arrival comes first, removed when complete.
#include "dltrace/replay/receive_matcher.h"

#include <algorithm>

namespace dltrace::replay {

namespace {
std::string Describe(int32_t peer, uint64_t tag) {
  return "peer " + std::to_string(peer) + " tag " + std::to_string(tag >> 32) + ":" +
         std::to_string(tag & 0xFFFFFFFFu);
}
}  // namespace

bool ReceiveMatcher::Post(int32_t peer, uint64_t tag, uint64_t bytes, uint32_t id,
                          std::string* error) {
  auto it = entries_.try_emplace(Key{peer, tag}).first;
  Entry& e = it->second;
  if (e.posted) {
    *error = "receive from " + Describe(peer, tag) + " posted twice";
    return false;
  }
  if (e.received > bytes) {
    *error = "received " + std::to_string(e.received) + " bytes from " + Describe(peer, tag) +
             ", expected " + std::to_string(bytes);
    return false;
  }
  e.posted = true;
  e.expected = bytes;
  e.id = id;
  MaybeComplete(it);
  return true;
}

bool ReceiveMatcher::Arrive(int32_t peer, uint64_t tag, uint64_t bytes, std::string* error) {
  auto it = entries_.try_emplace(Key{peer, tag}).first;
  Entry& e = it->second;
  if (!e.arrived && e.posted && on_first_arrival_) on_first_arrival_(e.id);
  e.arrived = true;
  e.received += bytes;
  if (e.posted && e.received > e.expected) {
    *error = "received " + std::to_string(e.received) + " bytes from " + Describe(peer, tag) +
             ", expected " + std::to_string(e.expected);
    return false;
  }
  MaybeComplete(it);
  return true;
}

bool ReceiveMatcher::MaybeComplete(std::unordered_map<Key, Entry, KeyHash>::iterator it) {
  const Entry& e = it->second;
  if (!e.posted || !e.arrived || e.received < e.expected) return false;
  uint32_t id = e.id;
  entries_.erase(it);  // before the callback, which may post again (no second lookup)
  on_complete_(id);
  return true;
}

size_t ReceiveMatcher::early() const {
  size_t n = 0;
  for (const auto& kv : entries_) n += kv.second.posted ? 0 : 1;
  return n;
}

size_t ReceiveMatcher::waiting() const { return entries_.size() - early(); }

std::vector<int32_t> ReceiveMatcher::waiting_peers() const {
  std::vector<int32_t> peers;
  for (const auto& kv : entries_)
    if (kv.second.posted) peers.push_back(kv.first.peer);
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  return peers;
}

}  // namespace dltrace::replay
