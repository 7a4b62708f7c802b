// SPDX-License-Identifier: GPL-2.0-only
// Schedule invariants, per-endpoint totals and the GOAL-like text form.
// CheckSchedule is what tests and `dltrace schedule` use to trust a lowering.
#include "dltrace/models/schedule.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <tuple>
#include <unordered_map>

namespace dltrace::models {

const char* StepTypeName(StepType type) {
  switch (type) {
    case StepType::kCompute: return "calc";
    case StepType::kSend: return "send";
    case StepType::kRecv: return "recv";
  }
  return "calc";
}

uint64_t Schedule::step_count() const {
  uint64_t n = 0;
  for (const auto& r : ranks) n += r.steps.size();
  return n;
}

std::vector<RankTotals> ComputeTotals(const Schedule& schedule) {
  std::vector<RankTotals> totals(schedule.ranks.size());
  for (size_t e = 0; e < schedule.ranks.size(); ++e) {
    RankTotals& t = totals[e];
    for (const Step& s : schedule.ranks[e].steps) {
      switch (s.type) {
        case StepType::kCompute:
          ++t.computes;
          t.compute_ns += s.duration_ns();
          break;
        case StepType::kSend:
          ++t.sends;
          t.sent_bytes += s.bytes;
          if (s.local) t.local_sent_bytes += s.bytes;
          break;
        case StepType::kRecv:
          ++t.recvs;
          t.recv_bytes += s.bytes;
          break;
      }
    }
  }
  return totals;
}

namespace {

struct PairKey {
  int32_t from, to;
  uint64_t tag;
  bool operator==(const PairKey& o) const {
    return from == o.from && to == o.to && tag == o.tag;
  }
};
struct PairKeyHash {
  size_t operator()(const PairKey& k) const {
    return std::hash<uint64_t>()(k.tag * 0x9E3779B97F4A7C15ull ^ (uint64_t(uint32_t(k.from)) << 32) ^
                                 uint32_t(k.to));
  }
};

// One 64-bit mix of a message (sender, receiver, tag, bytes) with SEED
// (splitmix64's finaliser over the fields folded in one by one).
uint64_t MessageHash(int32_t from, int32_t to, uint64_t tag, uint64_t bytes, uint64_t seed) {
  auto mix = [](uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  uint64_t h = mix(seed ^ (uint64_t(uint32_t(from)) << 32 | uint32_t(to)));
  h = mix(h ^ tag);
  return mix(h ^ bytes);
}

// Whether SCHEDULE is sound, in memory per endpoint rather than per message:
// every step's own fields are checked as CheckScheduleExact checks them; no
// endpoint sends (or receives) the same (peer, tag) twice (sorted per
// endpoint); and the sends and the receives are the same set of (sender,
// receiver, tag, bytes), compared through two independent 64-bit sums of a
// hash of each (with no duplicates on either side, equal sets give equal
// sums; unequal ones collide with a chance of about 2^-128). False: run the
// exact check, which names the problems.
bool ScheduleLooksSound(const Schedule& schedule) {
  const int32_t n = int32_t(schedule.ranks.size());
  if (schedule.endpoints.size() != schedule.ranks.size()) return false;
  uint64_t sent[2] = {0, 0}, received[2] = {0, 0}, sends = 0, recvs = 0;
  std::vector<uint32_t> run_ops[2];                 // per direction: the op of each run, in order
  std::vector<std::pair<int32_t, uint64_t>> pairs;  // one direction's (peer, tag), where that is not enough
  for (int32_t e = 0; e < n; ++e) {
    const RankSchedule& r = schedule.ranks[e];
    // Lowering gives an endpoint each op's transfers in one run, in tag
    // order: then no (peer, tag) repeats, and a sort of the runs' ops
    // stands in for the sort of one entry per transfer.
    bool increasing[2] = {true, true};
    uint64_t last[2] = {0, 0};  // per direction: the last tag
    run_ops[0].clear();
    run_ops[1].clear();
    for (uint32_t i = 0; i < r.steps.size(); ++i) {
      const Step& s = r.steps[i];
      if (r.DepsBegin(s) > s.deps_end || s.deps_end > r.deps.size()) return false;
      for (const uint32_t* d = r.deps_begin(s); d != r.deps_end(s); ++d)
        if (*d >= i) return false;
      if (s.op() >= schedule.ops.size()) return false;
      if (s.type == StepType::kCompute) continue;
      if (s.peer < 0 || s.peer >= n || s.peer == e) return false;
      const bool send = s.type == StepType::kSend;
      const int32_t from = send ? e : s.peer, to = send ? s.peer : e;
      uint64_t* sum = send ? sent : received;
      sum[0] += MessageHash(from, to, s.tag, s.bytes, 0x243F6A8885A308D3ull);
      sum[1] += MessageHash(from, to, s.tag, s.bytes, 0x13198A2E03707344ull);
      ++(send ? sends : recvs);
      const int d = send ? 0 : 1;
      if (run_ops[d].empty() || s.op() != TagOp(last[d])) run_ops[d].push_back(s.op());
      else if (s.tag <= last[d]) increasing[d] = false;
      last[d] = s.tag;
    }
    for (int d = 0; d < 2; ++d) {
      if (increasing[d]) {
        std::sort(run_ops[d].begin(), run_ops[d].end());
        if (std::adjacent_find(run_ops[d].begin(), run_ops[d].end()) == run_ops[d].end()) continue;
      }
      pairs.clear();
      for (const Step& s : r.steps)
        if (s.type == (d == 0 ? StepType::kSend : StepType::kRecv)) pairs.emplace_back(s.peer, s.tag);
      std::sort(pairs.begin(), pairs.end());
      if (std::adjacent_find(pairs.begin(), pairs.end()) != pairs.end()) return false;
    }
  }
  return sends == recvs && sent[0] == received[0] && sent[1] == received[1];
}

std::vector<std::string> CheckScheduleExact(const Schedule& schedule, size_t limit) {
  std::vector<std::string> problems;
  auto report = [&](std::string p) {
    if (problems.size() < limit) problems.push_back(std::move(p));
  };
  const int32_t n = int32_t(schedule.ranks.size());
  if (schedule.endpoints.size() != schedule.ranks.size())
    report("endpoints and rank schedules differ in number");
  // Sends seen, by (from, to, tag), with their bytes and how often.
  std::unordered_map<PairKey, std::pair<uint64_t, int>, PairKeyHash> sends;
  for (int32_t e = 0; e < n; ++e) {
    const RankSchedule& r = schedule.ranks[e];
    for (uint32_t i = 0; i < r.steps.size(); ++i) {
      const Step& s = r.steps[i];
      if (r.DepsBegin(s) > s.deps_end || s.deps_end > r.deps.size()) {
        report("endpoint " + std::to_string(e) + " step " + std::to_string(i) +
               ": dependency range out of bounds");
        continue;
      }
      for (const uint32_t* d = r.deps_begin(s); d != r.deps_end(s); ++d)
        if (*d >= i)
          report("endpoint " + std::to_string(e) + " step " + std::to_string(i) +
                 " depends on step " + std::to_string(*d) + ", which is not before it");
      if (s.op() >= schedule.ops.size())
        report("endpoint " + std::to_string(e) + " step " + std::to_string(i) + ": no op " +
               std::to_string(s.op()));
      if (s.type == StepType::kCompute) continue;
      if (s.peer < 0 || s.peer >= n || s.peer == e) {
        report("endpoint " + std::to_string(e) + " step " + std::to_string(i) + ": bad peer " +
               std::to_string(s.peer));
        continue;
      }
      if (s.type == StepType::kSend) {
        auto& v = sends[{e, s.peer, s.tag}];
        v.first = s.bytes;
        ++v.second;
      }
    }
  }
  for (auto& [key, v] : sends)
    if (v.second != 1)
      report("send " + std::to_string(key.from) + "->" + std::to_string(key.to) + " tag " +
             std::to_string(key.tag) + " appears " + std::to_string(v.second) + " times");
  for (int32_t e = 0; e < n; ++e) {
    const RankSchedule& r = schedule.ranks[e];
    for (uint32_t i = 0; i < r.steps.size(); ++i) {
      const Step& s = r.steps[i];
      if (s.type != StepType::kRecv || s.peer < 0 || s.peer >= n) continue;
      auto it = sends.find({s.peer, e, s.tag});
      if (it == sends.end()) {
        report("endpoint " + std::to_string(e) + " step " + std::to_string(i) + ": recv from " +
               std::to_string(s.peer) + " tag " + std::to_string(s.tag) + " has no send");
        continue;
      }
      if (it->second.first != s.bytes)
        report("endpoint " + std::to_string(e) + " step " + std::to_string(i) + ": recv of " +
               std::to_string(s.bytes) + " bytes, send of " + std::to_string(it->second.first));
      if (it->second.second <= 0)
        report("endpoint " + std::to_string(e) + " step " + std::to_string(i) +
               ": second recv for one send");
      it->second.second = -1;  // matched
    }
  }
  for (auto& [key, v] : sends)
    if (v.second == 1)
      report("send " + std::to_string(key.from) + "->" + std::to_string(key.to) + " tag " +
             std::to_string(key.tag) + " has no recv");
  return problems;
}

}  // namespace

// The exact check holds every send in one hash map (about 70 bytes each: 8 GiB
// for the 126 million messages of a 16,384-rank GPT-3 iteration), so a sound
// schedule is recognised first without it.
std::vector<std::string> CheckSchedule(const Schedule& schedule, size_t limit) {
  if (ScheduleLooksSound(schedule)) return {};
  return CheckScheduleExact(schedule, limit);
}

DenseTags::DenseTags(const Schedule& schedule) {
  for (const auto& r : schedule.ranks)
    for (const auto& s : r.steps)
      if (s.type == StepType::kSend) tags_.push_back(s.tag);
  std::sort(tags_.begin(), tags_.end());
  tags_.erase(std::unique(tags_.begin(), tags_.end()), tags_.end());
}

uint32_t DenseTags::operator()(uint64_t tag) const {
  return uint32_t(std::lower_bound(tags_.begin(), tags_.end(), tag) - tags_.begin());
}

std::string FormatGoal(const Schedule& schedule, int32_t endpoint, const DenseTags& tags) {
  std::string out;
  const RankSchedule& r = schedule.ranks[size_t(endpoint)];
  char line[256];
  const Endpoint& ep = schedule.endpoints[size_t(endpoint)];
  std::snprintf(line, sizeof line, "// endpoint %d: %s%s%s\nrank %d {\n", endpoint,
                ep.role == EndpointRole::kServer ? "parameter server" : "worker",
                ep.host >= 0 ? " on " : "",
                ep.host >= 0 ? schedule.hosts[size_t(ep.host)].c_str() : "", endpoint);
  out += line;
  uint32_t last_op = kNoOp;
  for (uint32_t i = 0; i < r.steps.size(); ++i) {
    const Step& s = r.steps[i];
    if (s.op() != last_op && s.op() < schedule.ops.size()) {
      const ScheduleOp& op = schedule.ops[s.op()];
      std::snprintf(line, sizeof line, "// op %u iteration %d %s %s %" PRIu64 "b %s\n", s.op(),
                    op.iteration, formats::OpKindName(op.kind),
                    formats::CollectiveName(op.collective), op.bytes, op.algorithm.c_str());
      out += line;
      last_op = s.op();
    }
    switch (s.type) {
      case StepType::kCompute:
        std::snprintf(line, sizeof line, "l%u: calc %" PRIu64 "\n", i, s.duration_ns());
        break;
      case StepType::kSend:
      case StepType::kRecv:
        std::snprintf(line, sizeof line, "l%u: %s %" PRIu64 "b %s %d tag %u\n", i,
                      StepTypeName(s.type), s.bytes, s.type == StepType::kSend ? "to" : "from",
                      s.peer, tags(s.tag));
        break;
    }
    out += line;
    for (const uint32_t* d = r.deps_begin(s); d != r.deps_end(s); ++d) {
      std::snprintf(line, sizeof line, "l%u requires l%u\n", i, *d);
      out += line;
    }
  }
  out += "}\n";
  return out;
}

}  // namespace dltrace::models
