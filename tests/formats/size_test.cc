// SPDX-License-Identifier: GPL-2.0-only
// The format's compactness promise (issue #16's goals): a typical training
// trace costs at most 24 bytes per operation event in 8,192-event chunks and
// at most 32 when every iteration is a chunk of its own (deterministic:
// counts bytes, not time).
#include <gtest/gtest.h>
#include <unistd.h>

#include "../bench/typical_trace.h"
#include "dltrace/formats/writer.h"

using namespace dltrace::formats;

namespace {
double BytesPerEvent(bool gpu, size_t n, size_t flush_every) {
  auto ops = dltrace::bench::TypicalTrainingOps(n, gpu);
  char path[] = "/tmp/dltrace-size-XXXXXX";
  int fd = ::mkstemp(path);
  ::close(fd);
  ::unlink(path);
  std::string err;
  Header h;
  h.host = "size-test";
  auto w = TraceWriter::Create(path, h, &err);
  EXPECT_TRUE(w) << err;
  for (size_t i = 0; i < ops.size(); ++i) {
    w->AddOp(ops[i]);
    if ((i + 1) % flush_every == 0) {
      EXPECT_TRUE(w->Flush(&err)) << err;
    }
  }
  EXPECT_TRUE(w->Close({n, 0, 0, 0, 0, "exit"}, &err)) << err;
  double per_event = double(w->bytes_written()) / double(n);
  ::unlink(path);
  return per_event;
}
}  // namespace

TEST(TraceSize, TypicalTrainingTraceIsAtMost24BytesPerEventIn8kChunks) {
  EXPECT_LE(BytesPerEvent(/*gpu=*/true, 200'000, 8192), 24.0);
  EXPECT_LE(BytesPerEvent(/*gpu=*/false, 200'000, 8192), 24.0);
}

TEST(TraceSize, AChunkPerIterationIsAtMost32BytesPerEvent) {
  // TypicalTrainingOps: 4 all-reduce buckets, 4 point-to-point, 1 all-reduce
  // per iteration. Version 1 repeated the shapes of every chunk: over 60 B.
  EXPECT_LE(BytesPerEvent(/*gpu=*/true, 90'000, 9), 32.0);
  EXPECT_LE(BytesPerEvent(/*gpu=*/false, 90'000, 9), 32.0);
}

TEST(TraceSize, SmallFlushesStayCompact) {
  // The recorder flushes every DLTRACE_FLUSH_MS, so chunks can be small.
  EXPECT_LE(BytesPerEvent(/*gpu=*/true, 100'000, 512), 32.0);
}
