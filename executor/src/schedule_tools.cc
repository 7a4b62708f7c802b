// SPDX-License-Identifier: GPL-2.0-only
// Schedule fingerprint, iteration cut and peer list for the replayer.
#include "dltrace/executor/schedule_tools.h"

#include <algorithm>
#include <map>

namespace dltrace::executor {

void ScheduleHasher::Mix(uint64_t v) {  // FNV-1a, byte by byte
  for (int i = 0; i < 8; ++i) {
    h_ ^= (v >> (8 * i)) & 0xFF;
    h_ *= 0x100000001b3ull;
  }
}

ScheduleHasher::ScheduleHasher(const models::Schedule& s) {
  Mix(s.ranks.size());
  Mix(s.ops.size());
  Mix(uint64_t(s.iterations));
  for (const auto& op : s.ops) {
    Mix(uint64_t(op.kind));
    Mix(uint64_t(int64_t(op.iteration)));
    Mix(op.bytes);
  }
}

void ScheduleHasher::Add(const models::RankSchedule& r) {
  Mix(r.steps.size());
  for (const auto& st : r.steps) {
    Mix(uint64_t(st.type) | uint64_t(st.channel) << 8 | uint64_t(st.local) << 24);
    Mix(uint64_t(int64_t(st.peer)));
    // As when bytes, tag and duration were fields of their own (0 where
    // unused): results files keep the hashes they had.
    const bool compute = st.type == models::StepType::kCompute;
    Mix(st.op());
    Mix(compute ? 0 : st.bytes);
    Mix(compute ? 0 : st.tag);
    Mix(compute ? st.duration_ns() : 0);
    Mix(r.DepCount(st));
  }
  for (uint32_t d : r.deps) Mix(d);
}

uint64_t ScheduleHash(const models::Schedule& s) {
  ScheduleHasher h(s);
  for (const auto& r : s.ranks) h.Add(r);
  return h.value();
}

std::vector<PeerLinks> PeersOf(const models::Schedule& s, int32_t endpoint) {
  std::map<int32_t, uint16_t> channels;
  for (const auto& st : s.ranks.at(size_t(endpoint)).steps) {
    if (st.type == models::StepType::kCompute || st.peer == endpoint) continue;
    uint16_t& c = channels[st.peer];
    c = std::max<uint16_t>(c, uint16_t(st.channel + 1));
  }
  std::vector<PeerLinks> out;
  for (const auto& kv : channels) out.push_back({kv.first, kv.second});
  return out;
}

std::vector<int32_t> ConnectedEndpoints(const models::Schedule& s, int32_t endpoint) {
  std::vector<int32_t> parent(s.ranks.size());
  for (size_t i = 0; i < parent.size(); ++i) parent[i] = int32_t(i);
  auto root = [&](int32_t x) {
    while (parent[size_t(x)] != x) x = parent[size_t(x)] = parent[size_t(parent[size_t(x)])];
    return x;
  };
  for (size_t e = 0; e < s.ranks.size(); ++e)
    for (const auto& st : s.ranks[e].steps)
      if (st.type != models::StepType::kCompute && st.peer >= 0 && size_t(st.peer) < parent.size())
        parent[size_t(root(st.peer))] = root(int32_t(e));
  std::vector<int32_t> out;
  const int32_t mine = root(endpoint);
  for (size_t e = 0; e < parent.size(); ++e)
    if (root(int32_t(e)) == mine) out.push_back(int32_t(e));
  return out;
}

}  // namespace dltrace::executor
