// SPDX-License-Identifier: GPL-2.0-only
// dltrace-format-bench: bytes per operation event of the trace format on
// realistic flush patterns, schema version 2 against version 1 written in the
// same run from the same events, and write/read throughput.
// Prints figures; it asserts nothing (the size limits are unit tests).
//
//   dltrace-format-bench [EVENTS] [--trace FILE [--flush-ms MS]]
//
// --trace re-writes a recorded rank file both ways, one chunk per MS of its
// time (the recorder's DLTRACE_FLUSH_MS, 200 by default).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "dltrace/formats/reader.h"
#include "dltrace/formats/writer.h"
#include "dltrace/models/lower.h"
#include "dltrace/models/synth.h"
#include "communicators.h"
#include "typical_trace.h"

using namespace dltrace::formats;
using Clock = std::chrono::steady_clock;

namespace {

// One rank's records and where its flushes fall: chunk k holds ops
// [op_end[k-1], op_end[k]) and samples [sample_end[k-1], sample_end[k]).
struct Stream {
  Header header;
  std::vector<Communicator> comms;
  std::vector<OpEvent> ops;
  std::vector<ResourceSample> samples;
  std::vector<size_t> op_end, sample_end;
};

void ChunkEvery(Stream* s, size_t n) {
  for (size_t i = n; i < s->ops.size() + n; i += n) {
    s->op_end.push_back(std::min(i, s->ops.size()));
    s->sample_end.push_back(0);
  }
}

// A flush every flush_ns of time, as the recorder's flusher: ops by enter
// time, samples by their time.
void ChunkByTime(Stream* s, int64_t flush_ns) {
  if (s->ops.empty()) return;
  int64_t t0 = s->ops.front().enter_ns;
  if (!s->samples.empty()) t0 = std::min(t0, int64_t(s->samples.front().time_ns));
  int64_t end = s->ops.back().enter_ns;
  if (!s->samples.empty()) end = std::max(end, int64_t(s->samples.back().time_ns));
  size_t o = 0, m = 0;
  for (int64_t cut = t0 + flush_ns; o < s->ops.size() || m < s->samples.size(); cut += flush_ns) {
    while (o < s->ops.size() && s->ops[o].enter_ns < cut) ++o;
    while (m < s->samples.size() && int64_t(s->samples[m].time_ns) < cut) ++m;
    if (s->op_end.empty() || o != s->op_end.back() || m != s->sample_end.back()) {
      s->op_end.push_back(o);
      s->sample_end.push_back(m);
    }
    if (cut > end + flush_ns) break;
  }
}

struct Written {
  uint64_t bytes = 0;
  double write_s = 0, read_s = 0;
  bool ok = false;
};

Written Write(const Stream& s, uint32_t version) {
  Written out;
  char path[] = "/tmp/dltrace-bench-XXXXXX";
  int fd = ::mkstemp(path);
  ::close(fd);
  ::unlink(path);
  std::string err;
  auto t0 = Clock::now();
  auto w = TraceWriter::Create(path, s.header, &err, version);
  if (!w) {
    std::fprintf(stderr, "dltrace-format-bench: %s\n", err.c_str());
    return out;
  }
  for (const auto& c : s.comms) w->AddCommunicator(c);
  size_t o = 0, m = 0;
  for (size_t k = 0; k < s.op_end.size(); ++k) {
    for (; o < s.op_end[k]; ++o) w->AddOp(s.ops[o]);
    for (; m < s.sample_end[k]; ++m) w->AddSample(s.samples[m]);
    if (!w->Flush(&err)) break;
  }
  if (!err.empty() || !w->Close({s.ops.size(), 0, s.samples.size(), 0, 0, "exit"}, &err)) {
    std::fprintf(stderr, "dltrace-format-bench: %s\n", err.c_str());
    ::unlink(path);
    return out;
  }
  out.bytes = w->bytes_written();
  out.write_s = std::chrono::duration<double>(Clock::now() - t0).count();
  t0 = Clock::now();
  RankTrace t = ReadTraceFile(path);
  out.read_s = std::chrono::duration<double>(Clock::now() - t0).count();
  ::unlink(path);
  out.ok = t.status == ReadStatus::kComplete && t.ops == s.ops && t.samples == s.samples;
  if (!out.ok) std::fprintf(stderr, "dltrace-format-bench: read back differs: %s\n", t.message.c_str());
  return out;
}

struct Row {
  std::string name;
  uint64_t events = 0, chunks = 0, samples = 0;
  Written v1, v2;
  uint64_t v2_no_samples = 0;  // the same chunks without their resource samples
};

bool Measure(const std::vector<Stream>& ranks, const std::string& name, std::vector<Row>* rows) {
  Row r;
  r.name = name;
  for (const auto& s : ranks) {
    Written a = Write(s, 1), b = Write(s, kSchemaVersion);
    if (!a.ok || !b.ok) return false;
    if (!s.samples.empty()) {
      Stream bare = s;
      bare.samples.clear();
      std::fill(bare.sample_end.begin(), bare.sample_end.end(), 0);
      Written c = Write(bare, kSchemaVersion);
      if (!c.ok) return false;
      r.v2_no_samples += c.bytes;
    } else {
      r.v2_no_samples += b.bytes;
    }
    r.events += s.ops.size();
    r.samples += s.samples.size();
    r.chunks += s.op_end.size();
    for (auto [into, from] : {std::pair{&r.v1, &a}, std::pair{&r.v2, &b}}) {
      into->bytes += from->bytes;
      into->write_s += from->write_s;
      into->read_s += from->read_s;
    }
  }
  rows->push_back(r);
  return true;
}

Stream FromTrace(const RankTrace& t) {
  Stream s;
  s.header = t.header;
  s.comms = t.communicators;
  s.ops = t.ops;
  s.samples = t.samples;
  return s;
}

// `dltrace synth --model resnet50 --ranks 8 --iterations 1000`, one chunk
// per iteration as synth flushes; also returns the files' own sizes.
bool SynthResnet(std::vector<Stream>* out, uint64_t* file_bytes) {
  char tmpl[] = "/tmp/dltrace-bench-synth-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  dltrace::models::SynthOptions o;
  o.model = "resnet50";
  o.ranks = 8;
  o.iterations = 1000;
  std::string err;
  bool ok = dltrace::models::WriteSynthTraceSet(o, dir + "/set", &err);
  *file_bytes = 0;
  for (int r = 0; ok && r < o.ranks; ++r) {
    std::string path = dir + "/set/rank" + std::to_string(r) + kTraceFileSuffix;
    struct stat st {};
    ::stat(path.c_str(), &st);
    *file_bytes += uint64_t(st.st_size);
    RankTrace t = ReadTraceFile(path);
    ok = t.status == ReadStatus::kComplete;
    size_t per_iteration = 0;
    for (const auto& [k, v] : t.header.attributes)
      if (k == dltrace::models::kIterationOpsAttribute) per_iteration = std::strtoull(v.c_str(), nullptr, 10);
    Stream s = FromTrace(t);
    ChunkEvery(&s, per_iteration ? per_iteration : 1);
    out->push_back(std::move(s));
  }
  std::system(("rm -rf '" + dir + "'").c_str());
  if (!ok) std::fprintf(stderr, "dltrace-format-bench: synth failed: %s\n", err.c_str());
  return ok;
}

// Like tests/mpi/dltrace-mpi-train (2 layers, 64-128-10) under the recorder
// with its defaults: per step an all-reduce per layer and one of {loss,
// correct}, steps ~220 ms apart, a resource sample every 100 ms, a flush
// every 200 ms: about 3 events and 2 samples a chunk.
Stream DdpMpiRun(size_t steps) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> jitter(0, 40'000'000);
  std::uniform_real_distribution<double> log_ns(std::log(5'000.0), std::log(90'000'000.0));
  Stream s;
  s.header.global_rank = 0;
  s.header.world_size = 2;
  s.header.local_rank = 0;
  s.header.host = "node0";
  s.header.pid = 7813;
  s.header.command_line = {"/work/build/tests/mpi/dltrace-mpi-train", "--steps", std::to_string(steps),
                           "--sleep-ms", "100"};
  s.header.start_monotonic_ns = 21'220'453'648'846;
  s.header.start_realtime_ns = 1'795'470'372'964'196'483;
  s.header.recorder_version = "0.1.0";
  s.header.mpi_version = "Open MPI v4.1.4";
  s.header.job_id = "1920925697";
  s.header.rank_env = {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"PMIX_RANK", "0"}};
  s.comms = {dltrace_test::MpiWorld(2, 0)};
  const uint64_t counts[] = {1290, 8320, 2};  // layer 2, layer 1 (reverse order), {loss, correct}
  int64_t t = int64_t(s.header.start_monotonic_ns) + 1'000'000;
  uint64_t seq = 0;
  for (size_t step = 0; step < steps; ++step) {
    t += 100'000'000 + 20'000'000 + jitter(rng);  // sleep + forward/backward
    for (uint64_t count : counts) {
      OpEvent op;
      op.kind = OpKind::MpiAllreduce;
      op.comm = 0;
      op.count = count;
      op.datatype = DataType::Float32;
      op.bytes = count * 4;
      op.red_op = RedOp::Sum;
      op.seq = seq++;
      op.enter_ns = t;
      op.exit_ns = t + int64_t(std::exp(log_ns(rng)));  // waits on the other rank
      t = op.exit_ns + 3'000 + jitter(rng) / 4'000;
      s.ops.push_back(op);
    }
  }
  // /proc-derived samples: CPU of the rank, RSS a page or two apart, the
  // namespace's non-loopback counters, the rank's disk I/O.
  ResourceSample x{s.header.start_monotonic_ns + 40'000'000, 0, 48'934'912, 3'141'592'653, 271'828'182,
                   1'245'184, 81'920};
  std::uniform_int_distribution<int> coin(0, 9);
  while (int64_t(x.time_ns) < t) {
    x.time_ns += 100'000'000 + uint64_t(jitter(rng) / 200);
    x.cpu_percent = float(35.0 + 60.0 * std::uniform_real_distribution<double>(0, 1)(rng));
    if (coin(rng) < 3) x.rss_bytes += 4096 * uint64_t(coin(rng));
    x.net_rx_bytes += uint64_t(coin(rng)) * 66;
    x.net_tx_bytes += uint64_t(coin(rng) < 5 ? 0 : 54);
    if (coin(rng) == 0) x.disk_write_bytes += 4096;
    s.samples.push_back(x);
  }
  ChunkByTime(&s, 200'000'000);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  size_t n = 2'000'000;
  std::string trace;
  int64_t flush_ms = 200;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--trace" && i + 1 < argc) {
      trace = argv[++i];
    } else if (a == "--flush-ms" && i + 1 < argc) {
      flush_ms = std::strtoll(argv[++i], nullptr, 10);
    } else if (!a.empty() && std::isdigit(static_cast<unsigned char>(a[0]))) {
      n = std::strtoull(a.c_str(), nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: dltrace-format-bench [EVENTS] [--trace FILE [--flush-ms MS]]\n");
      return 2;
    }
  }
  std::vector<Row> rows;
  uint64_t synth_bytes = 0;
  std::vector<Stream> synth;
  if (!SynthResnet(&synth, &synth_bytes) ||
      !Measure(synth, "synth resnet50 8x1000, a chunk per iteration", &rows))
    return 1;
  const size_t steps = std::max<size_t>(n / 3000, 100);
  if (!Measure({DdpMpiRun(steps)}, "DDP-like MPI, 200 ms flushes", &rows)) return 1;
  if (!trace.empty()) {
    RankTrace t = ReadTraceFile(trace);
    if (!t.usable()) {
      std::fprintf(stderr, "dltrace-format-bench: %s\n", t.message.c_str());
      return 1;
    }
    Stream s = FromTrace(t);
    ChunkByTime(&s, flush_ms * 1'000'000);
    std::string name = trace.substr(trace.find_last_of('/') + 1);
    if (!Measure({s}, "recorded " + name + ", " + std::to_string(flush_ms) + " ms flushes", &rows))
      return 1;
  }
  for (bool gpu : {true, false}) {
    Stream s;
    s.header.global_rank = 0;
    s.header.world_size = 8;
    s.header.host = "bench";
    s.ops = dltrace::bench::TypicalTrainingOps(n, gpu);
    ChunkEvery(&s, 8192);
    if (!Measure({s}, gpu ? "NCCL+MPI GPU-timed, 8,192-event chunks" : "MPI only, 8,192-event chunks",
                 &rows))
      return 1;
  }

  std::printf("dltrace format benchmark: bytes per operation event (file bytes / events), schema\n"
              "version 2 against version 1 written in the same run from the same events\n\n");
  std::printf("%-46s %7s %6s %7s %8s %8s %6s %11s %12s %12s\n", "case", "events", "chunks",
              "samples", "v1 B/ev", "v2 B/ev", "v2/v1", "v2 no smpl", "v2 write/s", "v2 read/s");
  for (const auto& r : rows) {
    double ev = double(r.events);
    std::printf("%-46s %7llu %6llu %7llu %8.2f %8.2f %6.3f %11.2f %12.3g %12.3g\n", r.name.c_str(),
                (unsigned long long)r.events, (unsigned long long)r.chunks,
                (unsigned long long)r.samples, double(r.v1.bytes) / ev, double(r.v2.bytes) / ev,
                double(r.v2.bytes) / double(r.v1.bytes), double(r.v2_no_samples) / ev,
                ev / r.v2.write_s, ev / r.v2.read_s);
  }
  std::printf("\nsynth's own files (dltrace synth, this build): %llu bytes, %.2f B/event\n",
              (unsigned long long)synth_bytes, double(synth_bytes) / double(rows[0].events));
  std::printf("v1 write/read events/s on the last case: %.3g / %.3g (v2 above)\n",
              double(rows.back().events) / rows.back().v1.write_s,
              double(rows.back().events) / rows.back().v1.read_s);
  std::printf("\"v2 no smpl\": version 2 with the resource samples left out of the same chunks\n");
  std::printf("goals (issue #16): <= 32 B/event on realistic flushes, <= 24 on 8k-event chunks;\n"
              "anchors: DUMPI ~37-43 B per MPI record, OTF2 ~24 B per enter/leave pair\n");
  return 0;
}
