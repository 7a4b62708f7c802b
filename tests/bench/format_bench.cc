// dltrace-format-bench: bytes per event and write/read throughput of the
// trace format on a typical training trace, with and without GPU timing.
// Prints figures; it asserts nothing (the size limit is a unit test).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "dltrace/formats/reader.h"
#include "dltrace/formats/writer.h"
#include "typical_trace.h"

using namespace dltrace::formats;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 2'000'000;
  size_t flush_every = 8192;  // events per chunk, like the recorder's flush batches
  std::printf("dltrace format benchmark: %zu events per run, a chunk every %zu events\n", n,
              flush_every);
  std::printf("%-28s %12s %14s %16s %16s\n", "trace", "bytes/event", "file bytes",
              "write events/s", "read events/s");
  for (bool gpu : {true, false}) {
    auto ops = dltrace::bench::TypicalTrainingOps(n, gpu);
    char path[] = "/tmp/dltrace-bench-XXXXXX";
    int fd = ::mkstemp(path);
    ::close(fd);
    ::unlink(path);
    Header h;
    h.global_rank = 0;
    h.world_size = 8;
    h.host = "bench";
    std::string err;
    auto t0 = Clock::now();
    auto w = TraceWriter::Create(path, h, &err);
    if (!w) {
      std::fprintf(stderr, "dltrace-format-bench: %s\n", err.c_str());
      return 1;
    }
    for (size_t i = 0; i < ops.size(); ++i) {
      w->AddOp(ops[i]);
      if ((i + 1) % flush_every == 0 && !w->Flush(&err)) break;
    }
    if (!err.empty() || !w->Close({n, 0, 0, 0, 0, "exit"}, &err)) {
      std::fprintf(stderr, "dltrace-format-bench: %s\n", err.c_str());
      return 1;
    }
    uint64_t file_bytes = w->bytes_written();
    double write_s = std::chrono::duration<double>(Clock::now() - t0).count();
    t0 = Clock::now();
    RankTrace t = ReadTraceFile(path);
    double read_s = std::chrono::duration<double>(Clock::now() - t0).count();
    ::unlink(path);
    if (t.status != ReadStatus::kComplete || t.ops.size() != n) {
      std::fprintf(stderr, "dltrace-format-bench: read back failed: %s\n", t.message.c_str());
      return 1;
    }
    std::printf("%-28s %12.2f %14llu %16.3g %16.3g\n",
                gpu ? "NCCL+MPI, GPU timing" : "MPI only, host timing",
                double(file_bytes) / double(n), (unsigned long long)file_bytes, double(n) / write_s,
                double(n) / read_s);
  }
  std::printf("anchors: DUMPI ~37-43 B per MPI record, OTF2 ~24 B per enter/leave pair; goal <= 32\n");
  return 0;
}
