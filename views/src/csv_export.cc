// SPDX-License-Identifier: GPL-2.0-only
// CSV of every recorded op, one row each, for spreadsheets and pandas.
#include <cinttypes>
#include <cstdio>

#include "dltrace/formats/op_kind.h"
#include "dltrace/runs/atomic_file.h"
#include "dltrace/views/export.h"

namespace dltrace::views {

namespace {

// Quotes a field when it holds a comma, quote or newline.
std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

bool WriteOpsCsv(const models::Job& job, const std::string& path, ExportStats* stats, std::string* error) {
  runs::AtomicFile out(path);
  if (!out.Open(error)) return false;
  FILE* f = out.get();
  std::fputs("rank,host,op,kind,collective,comm,comm_size,seq,iteration,bytes,count,datatype,"
             "peer_world,tag,stream,start_ns,end_ns,duration_ns,timed_on\n", f);
  for (const auto& rt : job.set.ranks) {
    const int32_t rank = rt.header.global_rank;
    if (rank < 0 || size_t(rank) >= job.schedule_op.size()) continue;
    const std::string host = CsvField(rt.header.host);
    for (size_t i = 0; i < rt.ops.size(); ++i) {
      const formats::OpEvent& e = rt.ops[i];
      const models::Span s = models::OpSpan(e);
      const uint32_t sop = job.schedule_op[size_t(rank)][i];
      const bool has_comm = e.comm != formats::kNoCommunicator;
      std::fprintf(f, "%d,%s,%zu,%s,%s,", rank, host.c_str(), i, formats::OpKindName(e.kind),
                   formats::CollectiveName(formats::CollectiveOf(e.kind)));
      if (has_comm) std::fprintf(f, "%u,%zu", e.comm, job.CommSize(rank, e.comm));
      else std::fputs(",", f);
      std::fprintf(f, ",%" PRIu64 ",", e.seq);
      if (sop != models::kNoOp) std::fprintf(f, "%d", job.schedule.ops[sop].iteration);
      std::fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%s,", e.bytes, e.count, formats::DataTypeName(e.datatype));
      if (e.peer >= 0 && has_comm) std::fprintf(f, "%d", job.WorldRank(rank, e.comm, e.peer));
      std::fputs(",", f);
      if (e.tag >= 0) std::fprintf(f, "%d", e.tag);
      std::fprintf(f, ",0x%" PRIx64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%s\n", e.stream,
                   job.JobTime(rank, s.start_ns), job.JobTime(rank, s.end_ns), s.end_ns - s.start_ns,
                   s.gpu ? "gpu" : "host");
      ++stats->records;
    }
  }
  stats->bytes = uint64_t(std::ftell(f));
  if (!out.Commit(error)) return false;
  stats->files.push_back(path);
  return true;
}

}  // namespace dltrace::views
