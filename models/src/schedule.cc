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
          t.compute_ns += s.duration_ns;
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

}  // namespace

std::vector<std::string> CheckSchedule(const Schedule& schedule, size_t limit) {
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
      if (s.deps_begin > s.deps_end || s.deps_end > r.deps.size()) {
        report("endpoint " + std::to_string(e) + " step " + std::to_string(i) +
               ": dependency range out of bounds");
        continue;
      }
      for (const uint32_t* d = r.deps_begin(s); d != r.deps_end(s); ++d)
        if (*d >= i)
          report("endpoint " + std::to_string(e) + " step " + std::to_string(i) +
                 " depends on step " + std::to_string(*d) + ", which is not before it");
      if (s.op >= schedule.ops.size())
        report("endpoint " + std::to_string(e) + " step " + std::to_string(i) + ": no op " +
               std::to_string(s.op));
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
    if (s.op != last_op && s.op < schedule.ops.size()) {
      const ScheduleOp& op = schedule.ops[s.op];
      std::snprintf(line, sizeof line, "// op %u iteration %d %s %s %" PRIu64 "b %s\n", s.op,
                    op.iteration, formats::OpKindName(op.kind),
                    formats::CollectiveName(op.collective), op.bytes, op.algorithm.c_str());
      out += line;
      last_op = s.op;
    }
    switch (s.type) {
      case StepType::kCompute:
        std::snprintf(line, sizeof line, "l%u: calc %" PRIu64 "\n", i, s.duration_ns);
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
