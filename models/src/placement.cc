// SPDX-License-Identifier: GPL-2.0-only
// Job specs and their placement onto hosts, shared by the ns-3 and flow-level simulators.
#include "dltrace/models/placement.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "dltrace/formats/op_kind.h"
#include "dltrace/models/topology.h"

namespace dltrace::models {

bool ParseHostList(const std::string& text, std::vector<uint32_t>* out) {
  std::stringstream ss(text);
  out->clear();
  for (std::string item; std::getline(ss, item, ',');) {
    char* end = nullptr;
    long a = std::strtol(item.c_str(), &end, 10);
    long b = a;
    if (end == item.c_str() || a < 0) return false;
    if (*end == '-') {
      const char* rest = end + 1;
      b = std::strtol(rest, &end, 10);
      if (end == rest || b < a) return false;
    }
    if (*end != '\0' || b - a > 100000) return false;
    for (long h = a; h <= b; ++h) out->push_back(uint32_t(h));
  }
  return !out->empty();
}

bool ParseJobPlacement(const std::string& text, JobPlacement* out, std::string* error) {
  JobPlacement spec = *out;  // defaults: what TEXT does not say stays
  std::vector<std::string> parts;
  std::stringstream ss(text);
  for (std::string part; std::getline(ss, part, ':');) parts.push_back(part);
  if (parts.empty() || parts[0].empty()) {
    *error = "--job needs TRACE[:hosts=A-B|trace][:gpus-per-host=N][:start=T][:algo=A][:channels=C][:iterations=N]"
             "[:priority=P][:cross-nic=0|1|2][:pxn=0|1][:qps=N][:qp-split=0|1], got '" + text + "'";
    return false;
  }
  spec.trace = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t eq = parts[i].find('=');
    const std::string key = parts[i].substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : parts[i].substr(eq + 1);
    char* end = nullptr;
    bool ok = eq != std::string::npos && !value.empty();
    if (key == "hosts" && value == "trace") {
      spec.trace_hosts = true;
      spec.hosts.clear();
    } else if (key == "hosts") {
      spec.trace_hosts = false;
      ok = ok && ParseHostList(value, &spec.hosts);
    } else if (key == "gpus-per-host") {
      long c = std::strtol(value.c_str(), &end, 10);
      ok = ok && *end == '\0' && c >= 1 && c <= 100000;
      spec.gpus_per_host = uint32_t(c);
    } else if (key == "cross-nic") {
      ok = ok && (value == "0" || value == "1" || value == "2");
      spec.nic.cross_nic = value.empty() ? 2 : value[0] - '0';
    } else if (key == "pxn") {
      ok = ok && (value == "0" || value == "1");
      spec.nic.pxn = value == "1";
    } else if (key == "qps") {
      long c = std::strtol(value.c_str(), &end, 10);
      ok = ok && *end == '\0' && c >= 1 && c <= 128;
      spec.nic.qps = uint32_t(c);
    } else if (key == "qp-split") {
      ok = ok && (value == "0" || value == "1");
      spec.nic.qp_split = value == "1";
    } else if (key == "start") {
      ok = ok && ParseDuration(value, &spec.start_ns);
    } else if (key == "algo") {
      spec.lower.algorithm = value;
      ok = ok && FindAlgorithm(value) != nullptr;
    } else if (key == "channels") {
      long c = std::strtol(value.c_str(), &end, 10);
      ok = ok && *end == '\0' && c >= 1 && c <= 64;
      spec.lower.channels = int(c);
    } else if (key == "iterations") {
      long c = std::strtol(value.c_str(), &end, 10);
      ok = ok && *end == '\0' && c >= 1;
      spec.iterations = int32_t(c);
    } else if (key == "priority") {
      long c = std::strtol(value.c_str(), &end, 10);
      ok = ok && *end == '\0' && !value.empty() && c >= 0 && c <= 7;
      spec.priority = uint32_t(c);
    } else {
      *error = "--job " + text + ": unknown key '" + key +
               "' (hosts, gpus-per-host, start, algo, channels, iterations, priority, cross-nic, pxn, qps, qp-split)";
      return false;
    }
    if (!ok) {
      *error = "--job " + text + ": bad value in '" + parts[i] + "'";
      return false;
    }
  }
  *out = spec;
  return true;
}

bool PlaceJobs(std::vector<JobPlacement>* jobs, const std::vector<uint32_t>& endpoints, uint32_t* hosts_needed,
               std::string* error, const std::vector<std::vector<int32_t>>* groups, uint32_t fabric_gpus) {
  const uint32_t G = std::max<uint32_t>(fabric_gpus, 1);
  uint32_t next = 0, needed = 0;
  for (size_t j = 0; j < jobs->size(); ++j) {
    JobPlacement& p = (*jobs)[j];
    const uint32_t n = endpoints[j];
    const std::string name = "job " + std::to_string(j) + " (" + p.trace + ")";
    const uint32_t per = p.gpus_per_host ? p.gpus_per_host : G;
    if (per > G) {
      *error = name + ": gpus-per-host=" + std::to_string(per) + ", but the fabric's hosts have " +
               std::to_string(G) + " GPU" + (G > 1 ? "s" : "");
      return false;
    }
    const std::vector<int32_t>* group = groups && j < groups->size() && !(*groups)[j].empty() ? &(*groups)[j] : nullptr;
    // Per endpoint its host; the GPU is the endpoint's place among the host's.
    std::vector<uint32_t> host(n);
    if (p.hosts.empty() && group) {
      std::unordered_map<int32_t, uint32_t> host_of_group;
      for (uint32_t e = 0; e < n; ++e) {
        const int32_t g = e < group->size() ? (*group)[e] : -1;
        if (g < 0) {
          host[e] = next++;
          continue;
        }
        auto [it, added] = host_of_group.try_emplace(g, next);
        if (added) ++next;
        host[e] = it->second;
      }
    } else if (p.hosts.empty()) {
      for (uint32_t e = 0; e < n; ++e) host[e] = next + e / per;
    } else if (p.hosts.size() == n) {
      host = p.hosts;
    } else if (G > 1 && p.hosts.size() == (n + per - 1) / per) {
      for (uint32_t e = 0; e < n; ++e) host[e] = p.hosts[e / per];
    } else {
      *error = name + " has " + std::to_string(n) + " endpoints, its hosts list names " +
               std::to_string(p.hosts.size()) +
               (G > 1 ? " (one per endpoint, or one per " + std::to_string(per) + " endpoints)" : "");
      return false;
    }
    p.hosts.assign(n, 0);
    std::unordered_map<uint32_t, uint32_t> used;  // host -> GPUs taken
    for (uint32_t e = 0; e < n; ++e) {
      uint32_t& gpu = used[host[e]];
      if (G > 1 && gpu >= per) {
        *error = name + ": more endpoints on host " + std::to_string(host[e]) + " than its " + std::to_string(per) +
                 " GPU" + (per > 1 ? "s" : "") + (group && p.gpus_per_host == 0 ? " (the trace recorded them on one host; set gpus-per-host= or hosts=)" : "");
        return false;
      }
      p.hosts[e] = host[e] * G + (G > 1 ? gpu++ : 0);
      needed = std::max(needed, host[e] + 1);
      next = std::max(next, host[e] + 1);
    }
  }
  *hosts_needed = needed;
  return true;
}

void LocaliseSteps(Schedule* schedule, const std::vector<uint32_t>& node) {
  for (size_t e = 0; e < schedule->ranks.size(); ++e)
    for (Step& st : schedule->ranks[e].steps)
      if (st.type != StepType::kCompute && st.peer >= 0 && size_t(st.peer) < node.size())
        st.local = node[e] == node[size_t(st.peer)];
}

bool SplitQueuePairs(Schedule* schedule, const std::vector<uint32_t>& node, const TopologyGraph* graph,
                     const NcclNicOptions& nic, std::string* error) {
  const uint32_t n = nic.qps;
  if (n <= 1) return true;
  // Whether endpoint E's step ST is NCCL traffic through a NIC (on a queue pair).
  auto on_queue_pairs = [&](size_t e, const Step& st) {
    if (st.type == StepType::kCompute || st.local || st.peer < 0 || e >= node.size() || size_t(st.peer) >= node.size())
      return false;
    if (st.op() >= schedule->ops.size() || !formats::IsNccl(schedule->ops[st.op()].kind)) return false;
    const uint32_t a = node[e], b = node[size_t(st.peer)];
    return a != b && !(graph && graph->SameDomain(a, b));
  };
  for (const auto& r : schedule->ranks)
    for (const Step& st : r.steps)
      if (QueuePairOf(st.channel) != 0) return true;  // split already (a second placement of one schedule)
  if (!nic.qp_split) {
    // Round robin: the sender's I-th message to a peer on a channel takes
    // queue pair I % N; its receive learns which from (receiver: (sender, tag, qp)).
    std::vector<std::vector<std::tuple<int32_t, uint64_t, uint32_t>>> at_receiver(schedule->ranks.size());
    for (size_t e = 0; e < schedule->ranks.size(); ++e) {
      std::unordered_map<uint64_t, uint32_t> next;  // (peer, channel) -> messages so far
      for (Step& st : schedule->ranks[e].steps) {
        if (st.type != StepType::kSend || !on_queue_pairs(e, st)) continue;
        const uint32_t qp = next[uint64_t(uint32_t(st.peer)) << 16 | st.channel]++ % n;
        at_receiver[size_t(st.peer)].emplace_back(int32_t(e), st.tag, qp);
        st.channel = uint16_t(st.channel | qp << kQueuePairShift);
      }
    }
    for (size_t e = 0; e < schedule->ranks.size(); ++e) {
      auto& sent = at_receiver[e];
      std::sort(sent.begin(), sent.end());
      for (Step& st : schedule->ranks[e].steps) {
        if (st.type != StepType::kRecv || !on_queue_pairs(e, st)) continue;
        const auto it = std::lower_bound(sent.begin(), sent.end(), std::make_tuple(int32_t(st.peer), uint64_t(st.tag), 0u));
        if (it != sent.end() && std::get<0>(*it) == st.peer && std::get<1>(*it) == st.tag)
          st.channel = uint16_t(st.channel | std::get<2>(*it) << kQueuePairShift);
      }
      std::vector<std::tuple<int32_t, uint64_t, uint32_t>>().swap(sent);
    }
    return true;
  }
  // Split: each message in N parts, one per queue pair; what depended on it depends on every part.
  for (size_t e = 0; e < schedule->ranks.size(); ++e) {
    RankSchedule& r = schedule->ranks[e];
    std::vector<uint32_t> first(r.steps.size()), count(r.steps.size());  // old step -> its new steps
    RankSchedule out;
    for (size_t i = 0; i < r.steps.size(); ++i) {
      const Step& st = r.steps[i];
      const uint64_t bytes = st.bytes;
      const bool split = on_queue_pairs(e, st);
      // Part q of the op's k-th transfer is its (k * N + q)-th: unique on the pair whatever each part count.
      const uint32_t parts = !split ? 1 : bytes >= n ? n : uint32_t(std::max<uint64_t>(1, bytes));
      const uint64_t k = st.tag & 0xFFFFFFFFu;
      if (split && k >= (uint64_t(1) << 32) / n) {
        *error = "qps=" + std::to_string(n) + ": op " + std::to_string(st.op()) + " has too many transfers (" +
                 std::to_string(k) + ") to split each over the queue pairs; use fewer queue pairs or qp-split=0";
        return false;
      }
      first[i] = uint32_t(out.steps.size());
      count[i] = parts;
      for (uint32_t q = 0; q < parts; ++q) {
        Step part = st;
        if (split) {
          part.bytes = bytes / parts + (q < bytes % parts ? 1 : 0);
          part.channel = uint16_t(st.channel | q << kQueuePairShift);
          part.tag = MakeTag(st.op(), uint32_t(k * n + q));
        }
        for (const uint32_t* d = r.deps_begin(st); d != r.deps_end(st); ++d)
          for (uint32_t c = 0; c < count[*d]; ++c) out.deps.push_back(first[*d] + c);
        part.deps_end = uint32_t(out.deps.size());
        out.steps.push_back(part);
      }
    }
    r = std::move(out);
  }
  return true;
}

bool RailCollective(const ScheduleOp& op) {
  using formats::Collective;
  if (op.source != ScheduleOp::Source::kCollective) return false;
  switch (op.collective) {
    case Collective::kAllToAll:
    case Collective::kSend:
    case Collective::kRecv:
    case Collective::kSendRecv:
    case Collective::kGather:
    case Collective::kScatter:
    case Collective::kNeighborExchange:
      return false;
    default:
      return true;
  }
}

void KeepIterations(Schedule* s, int32_t iterations) {
  if (iterations <= 0 || iterations >= s->iterations) return;
  for (auto& r : s->ranks) {
    std::vector<uint32_t> new_id(r.steps.size(), UINT32_MAX);
    RankSchedule out;
    for (size_t i = 0; i < r.steps.size(); ++i) {
      const auto& st = r.steps[i];
      if (st.op() < s->ops.size() && s->ops[st.op()].iteration >= iterations) continue;
      Step copy = st;
      for (const uint32_t* d = r.deps_begin(st); d != r.deps_end(st); ++d)
        if (new_id[*d] != UINT32_MAX) out.deps.push_back(new_id[*d]);
      copy.deps_end = uint32_t(out.deps.size());
      new_id[i] = uint32_t(out.steps.size());
      out.steps.push_back(copy);
    }
    r = std::move(out);
  }
  s->iterations = iterations;
}

bool PrepareJob(const JobPlacement& placement, PreparedJob* out, std::string* error,
                const std::function<void(const char* stage)>& on_stage) {
  out->loaded.reset();
  if (placement.schedule) {
    out->schedule = *placement.schedule;
  } else {
    JobOptions options;
    options.lower = placement.lower;
    options.runnable = true;
    options.on_stage = on_stage;
    out->loaded = LoadJob(placement.trace, options, error);
    if (!out->loaded) return false;
    // One copy of the steps (a large job's biggest part); the loaded job keeps its ops.
    out->schedule = std::move(out->loaded->schedule);
    out->loaded->schedule.ops = out->schedule.ops;
  }
  KeepIterations(&out->schedule, placement.iterations);
  return true;
}

bool TraceHostGroups(const JobPlacement& placement, const Job* loaded, size_t j,
                     std::vector<int32_t>* group, std::string* error) {
  group->clear();
  if (!placement.trace_hosts || !placement.hosts.empty()) return true;
  if (!loaded) {
    *error = "job " + std::to_string(j) + ": hosts=trace needs a trace set";
    return false;
  }
  *group = loaded->merged.host_of_rank;
  return true;
}

bool PrepareJobs(std::vector<JobPlacement>* placements, std::vector<PreparedJob>* out, uint32_t* hosts_needed,
                 std::string* error, const std::function<void(const char* stage)>& on_stage, uint32_t fabric_gpus) {
  out->clear();
  out->resize(placements->size());
  std::vector<uint32_t> endpoints;
  std::vector<std::vector<int32_t>> groups(placements->size());  // hosts=trace: per endpoint its recorded host
  for (size_t j = 0; j < placements->size(); ++j) {
    if (!PrepareJob((*placements)[j], &(*out)[j], error, on_stage)) return false;
    if (!TraceHostGroups((*placements)[j], (*out)[j].loaded.get(), j, &groups[j], error)) return false;
    // What each job was lowered with, where it took the trace's default.
    if ((*placements)[j].lower.algorithm.empty())
      (*placements)[j].lower.algorithm = (*out)[j].schedule.algorithm;
    endpoints.push_back(uint32_t((*out)[j].schedule.ranks.size()));
  }
  if (!PlaceJobs(placements, endpoints, hosts_needed, error, &groups, fabric_gpus)) return false;
  for (size_t j = 0; j < placements->size(); ++j) LocaliseSteps(&(*out)[j].schedule, (*placements)[j].hosts);
  return true;
}

}  // namespace dltrace::models
