// SPDX-License-Identifier: GPL-2.0-only
// Results files through nlohmann-json: fields in a fixed order, integers
// exact, doubles at full precision (NaN and infinities as null).
#include "dltrace/runs/results_file.h"

#include <fstream>
#include <sstream>

#include "dltrace/formats/op_kind.h"
#include "dltrace/executor/schedule_tools.h"
#include "dltrace/runs/atomic_file.h"
#include "dltrace/runs/json.h"

namespace dltrace::runs {


std::string ResultsFileName(int32_t endpoint) {
  return "rank" + std::to_string(endpoint) + ".results.json";
}

ResultsFile MakeResultsFile(const models::Schedule& schedule, const executor::RankResult& r) {
  ResultsFile f;
  f.endpoint = r.endpoint;
  f.endpoints = int32_t(schedule.ranks.size());
  f.complete = r.complete;
  f.error = r.error;
  f.clock_origin_ns = r.clock_origin_ns;
  f.duration_ns = r.end_ns;
  f.bytes_sent = r.bytes_sent;
  f.bytes_received = r.bytes_received;
  f.bytes_scheduled_send = r.bytes_scheduled_send;
  f.bytes_scheduled_recv = r.bytes_scheduled_recv;
  f.bytes_local_sent = r.bytes_local_sent;
  f.bytes_local_received = r.bytes_local_received;
  f.bytes_reduced = r.bytes_reduced;
  for (size_t k = 0; k < r.op_ids.size() && k < r.ops.size(); ++k) {
    const size_t i = k;  // the entry; its schedule op is r.op_ids[k]
    if (!r.ops[i].valid || r.op_ids[k] >= schedule.ops.size()) continue;
    const auto& op = schedule.ops[r.op_ids[k]];
    OpRow row;
    row.op = r.op_ids[k];
    row.kind = formats::OpKindName(op.kind);
    row.collective = formats::CollectiveName(op.collective);
    row.iteration = op.iteration;
    row.start_ns = r.ops[i].start_ns;
    row.end_ns = r.ops[i].end_ns;
    row.bytes = op.bytes;
    row.sent_bytes = r.op_sent[i];
    row.received_bytes = r.op_received[i];
    uint64_t ns = row.end_ns - row.start_ns;
    row.algbw_gbps = ns ? double(row.bytes) / double(ns) : 0;  // bytes/ns == GB/s
    f.ops.push_back(row);
  }
  for (size_t i = 0; i < r.iterations.size(); ++i) {
    if (!r.iterations[i].valid) continue;
    f.iterations.push_back({int32_t(i), r.iterations[i].start_ns, r.iterations[i].end_ns});
  }
  return f;
}

std::vector<ResultsFile> MakeResultsFiles(const models::Schedule& schedule,
                                          const std::vector<executor::RankResult>& results, const std::string& source,
                                          const std::string& trace, const std::string& algorithm) {
  const uint64_t hash = executor::ScheduleHash(schedule);
  std::vector<ResultsFile> files;
  for (const auto& r : results) {
    files.push_back(MakeResultsFile(schedule, r));
    files.back().source = source;
    files.back().trace = trace;
    files.back().algorithm = algorithm;
    files.back().schedule_hash = hash;
  }
  return files;
}

std::string ResultsToJson(const ResultsFile& f) {
  Json ops = Json::array();
  for (const OpRow& r : f.ops)
    ops.push_back({{"op", r.op},
                   {"kind", r.kind},
                   {"collective", r.collective},
                   {"iteration", r.iteration},
                   {"start_ns", r.start_ns},
                   {"end_ns", r.end_ns},
                   {"bytes", r.bytes},
                   {"sent_bytes", r.sent_bytes},
                   {"received_bytes", r.received_bytes},
                   {"algbw", r.algbw_gbps}});
  Json iterations = Json::array();
  for (const IterationRow& r : f.iterations)
    iterations.push_back({{"iteration", r.iteration}, {"start_ns", r.start_ns}, {"end_ns", r.end_ns}});
  Json doc = {{"format", kResultsFormat},
              {"version", kResultsVersion},
              {"source", f.source},
              {"trace", f.trace},
              {"algorithm", f.algorithm},
              {"schedule_hash", f.schedule_hash},
              {"endpoint", f.endpoint},
              {"endpoints", f.endpoints},
              {"complete", f.complete},
              {"error", f.error},
              {"clock_origin_ns", f.clock_origin_ns},
              {"duration_ns", f.duration_ns},
              {"bytes_sent", f.bytes_sent},
              {"bytes_received", f.bytes_received},
              {"bytes_scheduled_send", f.bytes_scheduled_send},
              {"bytes_scheduled_recv", f.bytes_scheduled_recv},
              {"bytes_local_sent", f.bytes_local_sent},
              {"bytes_local_received", f.bytes_local_received},
              {"ops", std::move(ops)},
              {"iterations", std::move(iterations)}};
  // Only where the host did reduction arithmetic (socket replay): other executors' files stay as they were.
  if (f.bytes_reduced) doc["bytes_reduced"] = f.bytes_reduced;
  return JsonText(doc) + "\n";
}

namespace {

// A field of the expected type, or FALLBACK when absent or of another type.
template <typename T>
T Get(const Json& object, const char* key, T fallback = T()) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  if constexpr (std::is_same_v<T, std::string>) {
    return it->is_string() ? it->template get<std::string>() : fallback;
  } else if constexpr (std::is_same_v<T, bool>) {
    return it->is_boolean() ? it->template get<bool>() : fallback;
  } else {
    return it->is_number() ? it->template get<T>() : fallback;
  }
}

}  // namespace

bool ResultsFromJson(const std::string& text, ResultsFile* f, std::string* error) {
  Json v;
  try {
    v = Json::parse(text);
  } catch (const Json::parse_error& e) {
    *error = "bad JSON at byte " + std::to_string(e.byte);
    return false;
  }
  if (!v.is_object() || Get<std::string>(v, "format") != kResultsFormat) {
    *error = "not a dltrace results file";
    return false;
  }
  const int64_t version = Get<int64_t>(v, "version");
  if (version > kResultsVersion) {
    *error = "results file version " + std::to_string(version) + " is newer than this dltrace";
    return false;
  }
  *f = ResultsFile();
  f->source = Get<std::string>(v, "source");
  f->trace = Get<std::string>(v, "trace");
  f->algorithm = Get<std::string>(v, "algorithm");
  f->schedule_hash = Get<uint64_t>(v, "schedule_hash");
  f->endpoint = Get<int32_t>(v, "endpoint");
  f->endpoints = Get<int32_t>(v, "endpoints");
  f->complete = Get<bool>(v, "complete");
  f->error = Get<std::string>(v, "error");
  f->clock_origin_ns = Get<uint64_t>(v, "clock_origin_ns");
  f->duration_ns = Get<uint64_t>(v, "duration_ns");
  f->bytes_sent = Get<uint64_t>(v, "bytes_sent");
  f->bytes_received = Get<uint64_t>(v, "bytes_received");
  f->bytes_scheduled_send = Get<uint64_t>(v, "bytes_scheduled_send");
  f->bytes_scheduled_recv = Get<uint64_t>(v, "bytes_scheduled_recv");
  f->bytes_local_sent = Get<uint64_t>(v, "bytes_local_sent");
  f->bytes_local_received = Get<uint64_t>(v, "bytes_local_received");
  f->bytes_reduced = Get<uint64_t>(v, "bytes_reduced");
  if (auto ops = v.find("ops"); ops != v.end() && ops->is_array())
    for (const Json& o : *ops) {
      if (!o.is_object()) continue;
      OpRow r;
      r.op = Get<uint32_t>(o, "op");
      r.kind = Get<std::string>(o, "kind");
      r.collective = Get<std::string>(o, "collective");
      r.iteration = Get<int32_t>(o, "iteration");
      r.start_ns = Get<uint64_t>(o, "start_ns");
      r.end_ns = Get<uint64_t>(o, "end_ns");
      r.bytes = Get<uint64_t>(o, "bytes");
      r.sent_bytes = Get<uint64_t>(o, "sent_bytes");
      r.received_bytes = Get<uint64_t>(o, "received_bytes");
      r.algbw_gbps = Get<double>(o, "algbw");
      f->ops.push_back(r);
    }
  if (auto its = v.find("iterations"); its != v.end() && its->is_array())
    for (const Json& o : *its)
      if (o.is_object())
        f->iterations.push_back(
            {Get<int32_t>(o, "iteration"), Get<uint64_t>(o, "start_ns"), Get<uint64_t>(o, "end_ns")});
  return true;
}

bool WriteResultsFile(const ResultsFile& results, const std::string& path, std::string* error) {
  return WriteFileAtomically(path, ResultsToJson(results), error);
}

bool ReadResultsFile(const std::string& path, ResultsFile* results, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = path + ": cannot open";
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  if (!ResultsFromJson(ss.str(), results, error)) {
    *error = path + ": " + *error;
    return false;
  }
  return true;
}

}  // namespace dltrace::runs
