// SPDX-License-Identifier: GPL-2.0-only
// Receive matching by (peer, tag): one entry per message, created by whichever
// of the post and the first arrival comes first, removed when complete.
#include "dltrace/executor/receive_matcher.h"

#include <algorithm>

namespace dltrace::executor {

namespace {
std::string Describe(int32_t peer, uint64_t tag) {
  return "peer " + std::to_string(peer) + " tag " + std::to_string(tag >> 32) + ":" +
         std::to_string(tag & 0xFFFFFFFFu);
}
}  // namespace

size_t ReceiveMatcher::FindOrAdd(int32_t peer, uint64_t tag) {
  const size_t mask = slots_.size() - 1;
  size_t i = Home(peer, tag);
  for (; slots_[i].used; i = (i + 1) & mask)
    if (slots_[i].peer == peer && slots_[i].tag == tag) return i;
  if (2 * (used_ + 1) > slots_.size()) {  // at most half full: short probes
    std::vector<Entry> old(slots_.size() * 2);
    old.swap(slots_);
    --shift_;
    for (const Entry& e : old) {
      if (!e.used) continue;
      size_t j = Home(e.peer, e.tag);
      while (slots_[j].used) j = (j + 1) & (slots_.size() - 1);
      slots_[j] = e;
    }
    return FindOrAdd(peer, tag);
  }
  Entry& e = slots_[i];
  e = Entry{};
  e.peer = peer;
  e.tag = tag;
  e.used = true;
  ++used_;
  return i;
}

// Backward-shift deletion: later entries of the same probe run move up, so
// every entry stays reachable from its home slot without tombstones.
void ReceiveMatcher::Erase(size_t hole) {
  const size_t mask = slots_.size() - 1;
  for (size_t j = (hole + 1) & mask; slots_[j].used; j = (j + 1) & mask) {
    const size_t home = Home(slots_[j].peer, slots_[j].tag);
    // Entry j may fill the hole unless its home lies cyclically in (hole, j].
    const bool stays = hole < j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (stays) continue;
    slots_[hole] = slots_[j];
    hole = j;
  }
  slots_[hole].used = false;
  --used_;
}

bool ReceiveMatcher::Post(int32_t peer, uint64_t tag, uint64_t bytes, uint32_t id,
                          std::string* error) {
  const size_t slot = FindOrAdd(peer, tag);
  Entry& e = slots_[slot];
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
  MaybeComplete(slot);
  return true;
}

bool ReceiveMatcher::Arrive(int32_t peer, uint64_t tag, uint64_t bytes, std::string* error) {
  const size_t slot = FindOrAdd(peer, tag);
  if (!slots_[slot].arrived && slots_[slot].posted && on_first_arrival_) on_first_arrival_(slots_[slot].id);
  Entry& e = slots_[slot];
  e.arrived = true;
  e.received += bytes;
  if (e.posted && e.received > e.expected) {
    *error = "received " + std::to_string(e.received) + " bytes from " + Describe(peer, tag) +
             ", expected " + std::to_string(e.expected);
    return false;
  }
  MaybeComplete(slot);
  return true;
}

bool ReceiveMatcher::MaybeComplete(size_t slot) {
  const Entry& e = slots_[slot];
  if (!e.posted || !e.arrived || e.received < e.expected) return false;
  uint32_t id = e.id;
  Erase(slot);  // before the callback, which may post again
  on_complete_(id);
  return true;
}

size_t ReceiveMatcher::early() const {
  size_t n = 0;
  for (const Entry& e : slots_) n += e.used && !e.posted ? 1 : 0;
  return n;
}

size_t ReceiveMatcher::waiting() const { return used_ - early(); }

std::vector<int32_t> ReceiveMatcher::waiting_peers() const {
  std::vector<int32_t> peers;
  for (const Entry& e : slots_)
    if (e.used && e.posted) peers.push_back(e.peer);
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  return peers;
}

}  // namespace dltrace::executor
