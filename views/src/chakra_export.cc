// SPDX-License-Identifier: GPL-2.0-only
// Chakra execution traces (what ASTRA-sim's workload layer reads): per rank
// a stream of varint-length-prefixed protobuf records, GlobalMetadata first,
// then Nodes whose data_deps follow the lowered schedule's dependencies.
#include "dltrace/runs/atomic_file.h"
#include "dltrace/views/export.h"

#ifdef DLTRACE_HAVE_PROTOBUF
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>

#include "chakra_et.pb.h"
#include "dltrace/formats/op_kind.h"
#include "dltrace/runs/json.h"

namespace dltrace::views {

using runs::Json;
using runs::JsonText;

namespace {

namespace pb = ChakraProtoMsg;

// Chakra's collective type for C; false when Chakra has none (scan): such
// calls are written as their point-to-point steps instead.
bool ChakraCollective(formats::Collective c, pb::CollectiveCommType* out) {
  using formats::Collective;
  switch (c) {
    case Collective::kAllReduce: *out = pb::ALL_REDUCE; return true;
    case Collective::kReduce: *out = pb::REDUCE; return true;
    case Collective::kAllGather: *out = pb::ALL_GATHER; return true;
    case Collective::kGather: *out = pb::GATHER; return true;
    case Collective::kScatter: *out = pb::SCATTER; return true;
    case Collective::kBroadcast: *out = pb::BROADCAST; return true;
    case Collective::kAllToAll: *out = pb::ALL_TO_ALL; return true;
    case Collective::kReduceScatter: *out = pb::REDUCE_SCATTER; return true;
    case Collective::kBarrier: *out = pb::BARRIER; return true;
    default: return false;
  }
}

// A new attribute NAME of node N; the Add* below set its value.
pb::AttributeProto* NewAttr(pb::Node* n, const char* name) {
  pb::AttributeProto* a = n->add_attr();
  a->set_name(name);
  return a;
}
void AddInt64(pb::Node* n, const char* name, int64_t v) { NewAttr(n, name)->set_int64_val(v); }
void AddInt32(pb::Node* n, const char* name, int32_t v) { NewAttr(n, name)->set_int32_val(v); }
void AddString(pb::Node* n, const char* name, const std::string& v) { NewAttr(n, name)->set_string_val(v); }
void AddBool(pb::Node* n, const char* name, bool v) { NewAttr(n, name)->set_bool_val(v); }

// One record as the Chakra reader expects it: varint length, then the message.
void WriteDelimited(const google::protobuf::MessageLite& m, FILE* f, uint64_t* bytes) {
  const std::string body = m.SerializeAsString();
  uint8_t head[10];
  size_t n = 0;
  for (uint64_t v = body.size(); ; v >>= 7) {
    head[n++] = uint8_t((v & 0x7F) | (v >= 0x80 ? 0x80 : 0));
    if (v < 0x80) break;
  }
  std::fwrite(head, 1, n, f);
  std::fwrite(body.data(), 1, body.size(), f);
  *bytes += n + body.size();
}

}  // namespace

bool ChakraAvailable(std::string*) { return true; }

bool WriteChakra(const models::Job& job, const std::string& prefix, ExportStats* stats, std::string* error) {
  const models::Schedule& schedule = job.schedule;
  // Dense 31-bit tags for point-to-point nodes (comm_tag is an int32).
  const models::DenseTags chakra_tag(schedule);
  if (chakra_tag.size() > 0x7FFFFFFFull) {
    *error = prefix + ": more distinct message tags than Chakra's int32 comm_tag holds";
    return false;
  }
  std::set<int32_t> comms_used;

  for (size_t e = 0; e < schedule.ranks.size(); ++e) {
    const models::Endpoint& ep = schedule.endpoints[e];
    const int32_t rank = ep.world_rank;
    if (ep.role != models::EndpointRole::kWorker || rank < 0) continue;
    // This rank's recorded event of each schedule op: its time and duration.
    std::map<uint32_t, size_t> event_of_op;
    const formats::RankTrace* rt = job.merged.rank(rank);
    if (rt && size_t(rank) < job.schedule_op.size())
      for (size_t i = 0; i < job.schedule_op[size_t(rank)].size(); ++i)
        if (job.schedule_op[size_t(rank)][i] != models::kNoOp)
          event_of_op.emplace(job.schedule_op[size_t(rank)][i], i);

    const std::string path = prefix + "." + std::to_string(rank) + ".et";
    runs::AtomicFile out(path);
    if (!out.Open(error)) return false;
    uint64_t bytes = 0;
    pb::GlobalMetadata meta;
    meta.set_version("0.0.4");
    auto* a = meta.add_attr();
    a->set_name("generator");
    a->set_string_val("dltrace");
    a = meta.add_attr();
    a->set_name("trace");
    a->set_string_val(job.set.path);
    WriteDelimited(meta, out.get(), &bytes);

    const models::RankSchedule& r = schedule.ranks[e];
    std::vector<uint64_t> node_of_step(r.steps.size(), 0);
    uint64_t next_id = 0;
    pb::Node pending;  // the open COMM_COLL node, written once its op's steps are all seen
    uint32_t pending_op = models::kNoOp;
    std::set<uint64_t> pending_deps;
    auto flush = [&]() {
      if (pending_op == models::kNoOp) return;
      for (uint64_t d : pending_deps) pending.add_data_deps(d);
      WriteDelimited(pending, out.get(), &bytes);
      ++stats->records;
      pending.Clear();
      pending_deps.clear();
      pending_op = models::kNoOp;
    };
    auto timing = [&](pb::Node* n, uint32_t op) {
      auto it = event_of_op.find(op);
      if (!rt || it == event_of_op.end()) return;
      const models::Span s = models::OpSpan(rt->ops[it->second]);
      n->set_start_time_micros(uint64_t(std::max<int64_t>(job.JobTime(rank, s.start_ns), 0) / 1000));
      n->set_duration_micros(uint64_t((s.end_ns - s.start_ns) / 1000));
    };
    for (uint32_t i = 0; i < r.steps.size(); ++i) {
      const models::Step& s = r.steps[i];
      const models::ScheduleOp& op = schedule.ops[s.op()];
      pb::CollectiveCommType coll = pb::ALL_REDUCE;
      const bool as_collective = s.type != models::StepType::kCompute &&
                                 op.source == models::ScheduleOp::Source::kCollective &&
                                 ChakraCollective(op.collective, &coll);
      if (as_collective && pending_op == s.op()) {
        node_of_step[i] = pending.id();
        for (const uint32_t* d = r.deps_begin(s); d != r.deps_end(s); ++d)
          if (node_of_step[*d] != pending.id()) pending_deps.insert(node_of_step[*d]);
        continue;
      }
      flush();
      pb::Node node;
      node.set_id(next_id++);
      node_of_step[i] = node.id();
      std::set<uint64_t> deps;
      for (const uint32_t* d = r.deps_begin(s); d != r.deps_end(s); ++d) deps.insert(node_of_step[*d]);
      if (as_collective) {
        node.set_name(std::string(formats::OpKindName(op.kind)) + " op " + std::to_string(s.op()));
        node.set_type(pb::COMM_COLL_NODE);
        AddBool(&node, "is_cpu_op", false);
        AddInt64(&node, "comm_type", coll);
        AddInt64(&node, "comm_size", int64_t(op.bytes));
        AddString(&node, "pg_name", std::to_string(op.comm));
        AddInt32(&node, "iteration", op.iteration);
        comms_used.insert(op.comm);
        timing(&node, s.op());
        pending = std::move(node);
        pending_op = s.op();
        pending_deps = std::move(deps);
        continue;
      }
      if (s.type == models::StepType::kCompute) {
        node.set_name("compute before op " + std::to_string(s.op()));
        node.set_type(pb::COMP_NODE);
        AddBool(&node, "is_cpu_op", false);
        node.set_duration_micros(s.duration_ns() / 1000);
      } else {
        const bool send = s.type == models::StepType::kSend;
        node.set_name(std::string(formats::OpKindName(op.kind)) + (send ? " send" : " recv") + " op " +
                      std::to_string(s.op()));
        node.set_type(send ? pb::COMM_SEND_NODE : pb::COMM_RECV_NODE);
        AddBool(&node, "is_cpu_op", false);
        const int32_t peer = schedule.endpoints[size_t(s.peer)].world_rank;
        AddInt32(&node, "comm_src", send ? rank : peer);
        AddInt32(&node, "comm_dst", send ? peer : rank);
        AddInt32(&node, "comm_tag", int32_t(chakra_tag(s.tag)));
        AddInt64(&node, "comm_size", int64_t(s.bytes));
        AddInt32(&node, "iteration", op.iteration);
        if (op.comm >= 0) {
          AddString(&node, "pg_name", std::to_string(op.comm));
          comms_used.insert(op.comm);
        }
        timing(&node, s.op());
      }
      for (uint64_t d : deps) node.add_data_deps(d);
      WriteDelimited(node, out.get(), &bytes);
      ++stats->records;
    }
    flush();
    if (!out.Commit(error)) return false;
    stats->bytes += bytes;
    stats->files.push_back(path);
  }

  // ASTRA-sim's --comm-group-configuration: each pg_name's ranks.
  Json groups = Json::object();
  for (int32_t c : comms_used)
    if (c >= 0 && size_t(c) < job.merged.comms.size()) groups[std::to_string(c)] = job.merged.comms[size_t(c)].members;
  const std::string groups_path = prefix + ".comm_groups.json";
  if (!runs::WriteFileAtomically(groups_path, runs::JsonText(groups) + "\n", error)) return false;
  stats->files.push_back(groups_path);
  return true;
}

}  // namespace dltrace::views

#else  // built without protobuf

namespace dltrace::views {
bool ChakraAvailable(std::string* why) {
  if (why)
    *why = "this dltrace was built without protobuf, so it cannot write Chakra traces "
           "(apt-get install protobuf-compiler libprotobuf-dev and rebuild)";
  return false;
}
bool WriteChakra(const models::Job&, const std::string&, ExportStats*, std::string* error) {
  return ChakraAvailable(error);
}
}  // namespace dltrace::views

#endif
