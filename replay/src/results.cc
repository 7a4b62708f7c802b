// Results files: JSON rows per op and per iteration for one endpoint, written
// through a temporary name, read back with a small parser for this format.
#include "dltrace/replay/results.h"

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include <unistd.h>

#include "dltrace/formats/json.h"

namespace dltrace::replay {

namespace {

std::string Quote(const std::string& s) { return "\"" + formats::JsonEscape(s) + "\""; }

std::string Num(uint64_t v) { return std::to_string(v); }
std::string Num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// A JSON value, just enough for reading results files back.
struct Value {
  enum Type { kNull, kBool, kNumber, kString, kArray, kObject } type = kNull;
  bool b = false;
  std::string text;  // numbers keep their text so 64-bit integers stay exact
  std::vector<Value> items;
  std::map<std::string, Value> fields;

  const Value* get(const std::string& k) const {
    auto it = fields.find(k);
    return it == fields.end() ? nullptr : &it->second;
  }
};

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}
  bool Parse(Value* v, std::string* error) {
    if (!ParseValue(v, 0) || (Skip(), pos_ != s_.size())) {
      *error = "bad JSON at byte " + std::to_string(pos_);
      return false;
    }
    return true;
  }

 private:
  void Skip() {
    while (pos_ < s_.size() && std::strchr(" \t\r\n", s_[pos_])) ++pos_;
  }
  bool Literal(const char* word) {
    size_t n = std::strlen(word);
    if (s_.compare(pos_, n, word) != 0) return false;
    pos_ += n;
    return true;
  }
  bool ParseString(std::string* out) {
    if (pos_ >= s_.size() || s_[pos_] != '"') return false;
    ++pos_;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c == '\\') {
        if (pos_ >= s_.size()) return false;
        char e = s_[pos_++];
        if (e == 'n') c = '\n';
        else if (e == 't') c = '\t';
        else if (e == 'u') {
          if (pos_ + 4 > s_.size()) return false;
          c = char(std::strtol(s_.substr(pos_, 4).c_str(), nullptr, 16));
          pos_ += 4;
        } else c = e;
      }
      *out += c;
    }
    if (pos_ >= s_.size()) return false;
    ++pos_;
    return true;
  }
  bool ParseValue(Value* v, int depth) {
    if (depth > 32) return false;
    Skip();
    if (pos_ >= s_.size()) return false;
    char c = s_[pos_];
    if (c == '{') {
      v->type = Value::kObject;
      ++pos_;
      Skip();
      if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
      for (;;) {
        Skip();
        std::string key;
        if (!ParseString(&key)) return false;
        Skip();
        if (pos_ >= s_.size() || s_[pos_++] != ':') return false;
        if (!ParseValue(&v->fields[key], depth + 1)) return false;
        Skip();
        if (pos_ < s_.size() && s_[pos_] == ',') { ++pos_; continue; }
        if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
        return false;
      }
    }
    if (c == '[') {
      v->type = Value::kArray;
      ++pos_;
      Skip();
      if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, true;
      for (;;) {
        v->items.emplace_back();
        if (!ParseValue(&v->items.back(), depth + 1)) return false;
        Skip();
        if (pos_ < s_.size() && s_[pos_] == ',') { ++pos_; continue; }
        if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, true;
        return false;
      }
    }
    if (c == '"') {
      v->type = Value::kString;
      return ParseString(&v->text);
    }
    if (Literal("true")) return v->type = Value::kBool, v->b = true, true;
    if (Literal("false")) return v->type = Value::kBool, true;
    if (Literal("null")) return v->type = Value::kNull, true;
    size_t start = pos_;
    while (pos_ < s_.size() && std::strchr("+-0123456789.eE", s_[pos_])) ++pos_;
    if (pos_ == start) return false;
    v->type = Value::kNumber;
    v->text = s_.substr(start, pos_ - start);
    return true;
  }

  const std::string& s_;
  size_t pos_ = 0;
};

uint64_t U64(const Value* v) { return v && v->type == Value::kNumber ? std::strtoull(v->text.c_str(), nullptr, 10) : 0; }
int64_t I64(const Value* v) { return v && v->type == Value::kNumber ? std::strtoll(v->text.c_str(), nullptr, 10) : 0; }
double F64(const Value* v) { return v && v->type == Value::kNumber ? std::strtod(v->text.c_str(), nullptr) : 0; }
std::string Str(const Value* v) { return v && v->type == Value::kString ? v->text : std::string(); }
bool Bool(const Value* v) { return v && v->type == Value::kBool && v->b; }

}  // namespace

std::string ResultsFileName(int32_t endpoint) {
  return "rank" + std::to_string(endpoint) + ".results.json";
}

ResultsFile MakeResultsFile(const models::Schedule& schedule, const RankResult& r) {
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
  for (size_t i = 0; i < r.ops.size() && i < schedule.ops.size(); ++i) {
    if (!r.ops[i].valid) continue;
    const auto& op = schedule.ops[i];
    OpRow row;
    row.op = uint32_t(i);
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

std::string ResultsToJson(const ResultsFile& f) {
  std::ostringstream o;
  o << "{\"format\":" << Quote(kResultsFormat) << ",\"version\":" << kResultsVersion
    << ",\n\"source\":" << Quote(f.source) << ",\"trace\":" << Quote(f.trace)
    << ",\"algorithm\":" << Quote(f.algorithm) << ",\"schedule_hash\":" << Num(f.schedule_hash)
    << ",\n\"endpoint\":" << f.endpoint << ",\"endpoints\":" << f.endpoints
    << ",\"complete\":" << (f.complete ? "true" : "false") << ",\"error\":" << Quote(f.error)
    << ",\n\"clock_origin_ns\":" << Num(f.clock_origin_ns) << ",\"duration_ns\":" << Num(f.duration_ns)
    << ",\n\"bytes_sent\":" << Num(f.bytes_sent) << ",\"bytes_received\":" << Num(f.bytes_received)
    << ",\"bytes_scheduled_send\":" << Num(f.bytes_scheduled_send)
    << ",\"bytes_scheduled_recv\":" << Num(f.bytes_scheduled_recv)
    << ",\"bytes_local_sent\":" << Num(f.bytes_local_sent)
    << ",\"bytes_local_received\":" << Num(f.bytes_local_received) << ",\n\"ops\":[";
  for (size_t i = 0; i < f.ops.size(); ++i) {
    const OpRow& r = f.ops[i];
    o << (i ? ",\n" : "\n") << "{\"op\":" << r.op << ",\"kind\":" << Quote(r.kind)
      << ",\"collective\":" << Quote(r.collective) << ",\"iteration\":" << r.iteration
      << ",\"start_ns\":" << Num(r.start_ns) << ",\"end_ns\":" << Num(r.end_ns)
      << ",\"bytes\":" << Num(r.bytes) << ",\"sent_bytes\":" << Num(r.sent_bytes)
      << ",\"received_bytes\":" << Num(r.received_bytes) << ",\"algbw\":" << Num(r.algbw_gbps)
      << "}";
  }
  o << "],\n\"iterations\":[";
  for (size_t i = 0; i < f.iterations.size(); ++i) {
    const IterationRow& r = f.iterations[i];
    o << (i ? ",\n" : "\n") << "{\"iteration\":" << r.iteration << ",\"start_ns\":" << Num(r.start_ns)
      << ",\"end_ns\":" << Num(r.end_ns) << "}";
  }
  o << "]}\n";
  return o.str();
}

bool ResultsFromJson(const std::string& text, ResultsFile* f, std::string* error) {
  Value v;
  if (!Parser(text).Parse(&v, error)) return false;
  if (v.type != Value::kObject || Str(v.get("format")) != kResultsFormat) {
    *error = "not a dltrace results file";
    return false;
  }
  if (I64(v.get("version")) > kResultsVersion) {
    *error = "results file version " + std::to_string(I64(v.get("version"))) + " is newer than this dltrace";
    return false;
  }
  *f = ResultsFile();
  f->source = Str(v.get("source"));
  f->trace = Str(v.get("trace"));
  f->algorithm = Str(v.get("algorithm"));
  f->schedule_hash = U64(v.get("schedule_hash"));
  f->endpoint = int32_t(I64(v.get("endpoint")));
  f->endpoints = int32_t(I64(v.get("endpoints")));
  f->complete = Bool(v.get("complete"));
  f->error = Str(v.get("error"));
  f->clock_origin_ns = U64(v.get("clock_origin_ns"));
  f->duration_ns = U64(v.get("duration_ns"));
  f->bytes_sent = U64(v.get("bytes_sent"));
  f->bytes_received = U64(v.get("bytes_received"));
  f->bytes_scheduled_send = U64(v.get("bytes_scheduled_send"));
  f->bytes_scheduled_recv = U64(v.get("bytes_scheduled_recv"));
  f->bytes_local_sent = U64(v.get("bytes_local_sent"));
  f->bytes_local_received = U64(v.get("bytes_local_received"));
  if (const Value* ops = v.get("ops"))
    for (const Value& o : ops->items) {
      OpRow r;
      r.op = uint32_t(U64(o.get("op")));
      r.kind = Str(o.get("kind"));
      r.collective = Str(o.get("collective"));
      r.iteration = int32_t(I64(o.get("iteration")));
      r.start_ns = U64(o.get("start_ns"));
      r.end_ns = U64(o.get("end_ns"));
      r.bytes = U64(o.get("bytes"));
      r.sent_bytes = U64(o.get("sent_bytes"));
      r.received_bytes = U64(o.get("received_bytes"));
      r.algbw_gbps = F64(o.get("algbw"));
      f->ops.push_back(r);
    }
  if (const Value* its = v.get("iterations"))
    for (const Value& o : its->items)
      f->iterations.push_back({int32_t(I64(o.get("iteration"))), U64(o.get("start_ns")),
                               U64(o.get("end_ns"))});
  return true;
}

bool WriteResultsFile(const ResultsFile& results, const std::string& path, std::string* error) {
  std::string tmp = path + ".tmp" + std::to_string(getpid());
  std::string text = ResultsToJson(results);
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    *error = tmp + ": " + std::strerror(errno);
    return false;
  }
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = (std::fflush(f) == 0) && ok;
  ok = (fsync(fileno(f)) == 0) && ok;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = path + ": " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
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

RecordedTimes ComputeRecordedTimes(const models::MergedTrace& merged,
                                   const models::Schedule& schedule) {
  RecordedTimes t;
  t.op_ns.assign(schedule.ops.size(), 0);
  t.iteration_ns.assign(size_t(std::max(schedule.iterations, 1)), 0);
  auto start_of = [](const formats::OpEvent& e) {
    return e.gpu_start_ns && e.gpu_end_ns ? *e.gpu_start_ns : e.enter_ns;
  };
  auto end_of = [](const formats::OpEvent& e) {
    return e.gpu_start_ns && e.gpu_end_ns ? *e.gpu_end_ns : e.exit_ns;
  };
  // Per world rank and iteration: the last end of an op, and the rank's first start.
  const size_t iters = t.iteration_ns.size();
  std::vector<std::vector<int64_t>> last_end(size_t(merged.world_size), std::vector<int64_t>(iters, INT64_MIN));
  std::vector<int64_t> first_start(size_t(merged.world_size), INT64_MAX);
  auto note = [&](int32_t rank, int64_t op_index, int32_t iteration, double* longest) {
    const formats::RankTrace* rt = merged.rank(rank);
    if (!rt || op_index < 0 || size_t(op_index) >= rt->ops.size()) return;
    const formats::OpEvent& e = rt->ops[size_t(op_index)];
    *longest = std::max(*longest, double(end_of(e) - start_of(e)));
    first_start[size_t(rank)] = std::min(first_start[size_t(rank)], start_of(e));
    if (iteration >= 0 && size_t(iteration) < iters)
      last_end[size_t(rank)][size_t(iteration)] = std::max(last_end[size_t(rank)][size_t(iteration)], end_of(e));
  };
  for (size_t i = 0; i < schedule.ops.size(); ++i) {
    const auto& op = schedule.ops[i];
    if (op.source == models::ScheduleOp::Source::kCollective && op.recorded < merged.calls.size()) {
      const auto& call = merged.calls[op.recorded];
      const auto& members = merged.comms[call.comm].members;
      for (size_t m = 0; m < call.parts.size() && m < members.size(); ++m)
        note(members[m], call.parts[m], op.iteration, &t.op_ns[i]);
    } else if (op.source == models::ScheduleOp::Source::kTransfer &&
               op.recorded < merged.transfers.size()) {
      const auto& x = merged.transfers[op.recorded];
      note(x.src, x.send_op, op.iteration, &t.op_ns[i]);
      note(x.dst, x.recv_op, op.iteration, &t.op_ns[i]);
    }
  }
  for (size_t r = 0; r < last_end.size(); ++r) {
    const formats::RankTrace* rt = merged.rank(int32_t(r));
    int64_t prev = first_start[r];
    if (rt) prev = std::min(prev, models::RankOriginNs(*rt));
    for (size_t i = 0; i < iters; ++i) {
      if (last_end[r][i] == INT64_MIN) continue;
      t.iteration_ns[i] = std::max(t.iteration_ns[i], double(last_end[r][i] - prev));
      prev = last_end[r][i];
    }
  }
  return t;
}

}  // namespace dltrace::replay
