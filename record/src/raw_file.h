// SPDX-License-Identifier: GPL-2.0-only
// The raw file (DLTRACE_RAW): the calling threads' event blocks in a shared
// file mapping, so that what a thread published outlives a SIGKILL (the
// kernel keeps the pages), with a header that says which events the trace
// holds already; and the recovery that turns what a killed process left
// into the rest of its trace. Also what the flusher and the recovery share
// to turn a buffered record into an OpEvent.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dltrace/formats/writer.h"
#include "recorder.h"

namespace dltrace::record {

// Ticks to ns on a drain's lines (Recorder::tick_lines_): the last from
// its start on, the one in force before it for an earlier time.
struct TickScale {
  explicit TickScale(const std::vector<Recorder::TickLine>& lines)
      : line(lines.back()), earlier(lines.data()), n_earlier(lines.size() - 1) {}
  int64_t ToNs(int64_t t) const {
    if (__builtin_expect(t >= line.ticks, 1) || n_earlier == 0) return line.ToNs(t);
    return Earlier(t);
  }
  Recorder::TickLine line;
  const Recorder::TickLine* earlier = nullptr;  // lines in force before `line`, oldest first
  size_t n_earlier = 0;

 private:
  int64_t Earlier(int64_t t) const;
};

// Writes into *T what an op adds besides its shape, its host times in ns;
// the optional times only where the op has them (the writer reads no other).
__attribute__((always_inline)) inline void PutTimes(const OpRecord& c, const TickScale& scale,
                                                    formats::OpTimes* t) {
  t->has = c.flags & (OpRecord::kGpuTimes | OpRecord::kCompletion);
  t->group = c.group;
  t->seq = c.seq;
  if (__builtin_expect(c.flags & OpRecord::kTicks, 1)) {
    t->enter_ns = scale.ToNs(c.enter_ns);
    t->exit_ns = scale.ToNs(c.exit_ns);
    if (c.flags & OpRecord::kCompletion) t->completion_ns = scale.ToNs(c.completion_ns);
  } else {
    t->enter_ns = c.enter_ns;
    t->exit_ns = c.exit_ns;
    if (c.flags & OpRecord::kCompletion) t->completion_ns = c.completion_ns;
  }
  if (c.flags & OpRecord::kGpuTimes) {
    t->gpu_start_ns = c.gpu_start_ns;
    t->gpu_end_ns = c.gpu_end_ns;
  }
}

// The OpEvent of record C of thread THREAD (its per-peer byte counts: the
// caller's to add).
formats::OpEvent ExpandRecord(const OpRecord& c, uint32_t thread, const TickScale& scale);

constexpr char kRawMagic[8] = {'\x89', 'D', 'L', 'T', 'R', 'A', 'W', '\n'};
constexpr uint32_t kRawVersion = 2;
// Threads whose blocks go into the file (later threads' blocks are
// anonymous memory: flushed as always, lost on SIGKILL).
constexpr uint32_t kRawThreads = 200;
constexpr size_t kRawHeaderBytes = 16384;  // blocks start here, page-aligned

// Where a thread's events stand against the trace, as of the last drain
// that read it: its events from base_seq on were given to the writer from
// its op number base_ops on, up to end_seq (~0: the drain was still
// reading them). The trace's op count then says how many of them it holds.
struct RawMark {
  uint64_t base_seq, base_ops, end_seq;
};

// One thread. A drain writes the mark it starts with into the other copy
// and then flips `current` (one store: a SIGKILL leaves one whole mark).
struct RawThread {
  uint32_t index;  // ThreadBuffer::index: the events' OpEvent::thread
  uint32_t used;   // 1 once the thread registered
  uint32_t current;
  uint32_t reserved;
  RawMark mark[2];
};

// The file's first kRawHeaderBytes; then `blocks` blocks of block_bytes,
// each a Recorder::Block (`slot`: its RawThread, `first`: the thread's
// number of its first event). Written by the recording process only; read
// by RecoverRawFile after it died.
struct RawHeader {
  char magic[8];
  uint32_t version, header_bytes;
  uint32_t record_bytes, block_events;
  uint64_t block_bytes;
  std::atomic<uint64_t> blocks;  // blocks allocated in the file so far
  int32_t pid, rank;
  std::atomic<uint32_t> threads;  // RawThread entries in use
  enum Flags : uint32_t { kStarted = 1, kWriterFailed = 2, kSomeBlocksAnonymous = 4 };
  std::atomic<uint32_t> flags;
  // Ticks to ns: the start's reading and the rate the start measured; the
  // line the last drain converted on, and the last tick it converted (at
  // last_ns on that line: recovery goes on from there).
  int64_t start_ticks, start_ns;
  double ns_per_tick;
  int64_t line_ticks, line_ns, line_mult;
  int64_t last_ticks, last_ns;
  char boot_id[40];  // /proc/sys/kernel/random/boot_id: same boot, same TSC
  char trace_path[2048];
  RawThread thread[kRawThreads];
};
static_assert(sizeof(RawHeader) <= kRawHeaderBytes, "the raw header fits its pages");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "atomics in a file mapping");

// The current boot's id ("" where unknown).
std::string BootId();

// Turns what the process that wrote RAW_PATH left into the rest of its
// trace (the file the raw header names): reads the trace, appends the
// events the raw file holds beyond it, writes a footer, replaces the trace
// and removes the raw file. False with one line in *ERROR (naming the file
// and the cause) when it cannot; *NOTE gets what the user should know
// (lost per-peer byte counts, gaps). *RECOVERED: events added.
bool RecoverRawFile(const std::string& raw_path, std::string* error, std::string* note,
                    uint64_t* recovered);

}  // namespace dltrace::record
