// SPDX-License-Identifier: GPL-2.0-only
// The API-agnostic recorder: per-thread event buffers, a background thread
// that flushes them to this process's trace file and samples resources, and
// the exit paths (finalize, exit, signals, abort) that write the footer.
#pragma once

#include <signal.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "dltrace/formats/trace.h"
#include "settings.h"

#define DLTRACE_EXPORT __attribute__((visibility("default")))

namespace dltrace::record {

// CLOCK_MONOTONIC (the vDSO: no system call).
inline int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// The wrappers' clock: the CPU's time-stamp counter where it is usable
// (DLTRACE_CLOCK; auto: where the CPU says it is invariant, constant and
// non-stop with a known rate, whatever clock the kernel keeps time with,
// or where the kernel keeps CLOCK_MONOTONIC with it), read in a third of
// clock_gettime's time; CLOCK_MONOTONIC ns elsewhere. Records taken with
// it carry OpRecord::kTicks and the flusher turns them into
// CLOCK_MONOTONIC ns (TickClock in recorder.cc). Checked against
// CLOCK_MONOTONIC on every CPU at start and at each flush; a failed check
// clears it, and later calls read clock_gettime. A record's own kTicks
// says which clock its times are in (NowFor), so a call that spans the
// switch stays on one clock.
extern std::atomic<bool> g_tsc_clock;
inline int64_t NowTicks(bool tsc) {
#if defined(__x86_64__)
  if (__builtin_expect(tsc, 1)) return int64_t(__builtin_ia32_rdtsc());
#endif
  return NowNs();
}
inline int64_t NowTicks() { return NowTicks(g_tsc_clock.load(std::memory_order_relaxed)); }

// *AT = NowTicks(true), stored as the TSC's two halves as the instruction
// gives them (two stores instead of a shift, an or and a store: the MPI
// fast path's clock).
__attribute__((always_inline)) inline void StoreTicks(int64_t* at) {
#if defined(__x86_64__)
  uint32_t lo, hi;
  asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "x86-64 is little-endian");
  std::memcpy(reinterpret_cast<char*>(at), &lo, 4);
  std::memcpy(reinterpret_cast<char*>(at) + 4, &hi, 4);
#else
  *at = NowTicks(true);
#endif
}

// Whether the MPI wrappers' fast path may record (mpi_wrappers.cc,
// FastMpiCall), and on which clock: recording started in this process and
// writing (no failed write), kFastTsc or kFastMonotonic as g_tsc_clock
// says. One byte a call reads instead of the recorder's state, its discard
// flag and its clock; cleared before any of them says otherwise (Stop,
// Disable, a fork child, a failed write), and moved from kFastTsc to
// kFastMonotonic when the TSC fails its check.
enum FastRecord : uint8_t { kFastOff = 0, kFastMonotonic = 1, kFastTsc = 2 };
extern std::atomic<uint8_t> g_fast_record;

struct StartInfo {
  int rank = -1;          // from the API when it knows (MPI_Comm_rank); else detected
  int world_size = -1;
  std::string output_dir;  // agreed by all ranks (MPI broadcast); empty = own default
  std::string mpi_version;
  std::string nccl_version;
  int gpu_device = -1;     // CUDA device of the first NCCL communicator
  std::string gpu_bus_id;
  formats::KeyValues attributes;  // header extras (the profiler plugin's API version)
};

// Ops whose record is complete only after their call returned (NCCL ops
// waiting for GPU times). The flusher asks for the ready ones before each
// flush; at the end (`final`) it takes all, waiting a bounded time.
class DeferredOps {
 public:
  virtual void TakeReady(bool final, std::vector<formats::OpEvent>* out) = 0;

 protected:
  ~DeferredOps() = default;
};

// Per-peer byte counts of a v/w-form call (alltoallv, gatherv, ...).
struct PeerBytes {
  std::vector<uint64_t> send, recv;
};

// One operation as a thread buffers it: OpEvent without its vectors and
// optionals (96 bytes instead of about 200); the flusher makes the OpEvent.
struct OpRecord {
  enum Flags : uint8_t { kGpuTimes = 1, kCompletion = 2, kCapturedInGraph = 4, kTicks = 8 };
  formats::OpKind kind = formats::OpKind::Unknown;
  formats::DataType datatype = formats::DataType::Unknown;
  formats::RedOp red_op = formats::RedOp::None;
  uint8_t flags = 0;  // which of the optional times below are set; kTicks: host times
                      // (enter, exit, completion) are NowTicks(), not ns
  uint32_t comm = formats::kNoCommunicator;
  int32_t peer = -1;  // root or peer, in communicator ranks
  int32_t tag = -1;
  uint32_t group = 0;
  // NCCL's choice (profiler plugin); in what was padding, so still 96 bytes.
  formats::NcclAlgorithm nccl_algorithm = formats::NcclAlgorithm::Unknown;
  formats::NcclProtocol nccl_protocol = formats::NcclProtocol::Unknown;
  uint16_t nccl_channels = 0;
  uint64_t count = 0, bytes = 0, seq = 0, stream = 0;
  int64_t enter_ns = 0, exit_ns = 0, gpu_start_ns = 0, gpu_end_ns = 0, completion_ns = 0;
};

// Now, on the clock REC's times are in (its kTicks): a call's exit and
// completion times, which must share the clock of its enter.
inline int64_t NowFor(const OpRecord& rec) { return NowTicks(rec.flags & OpRecord::kTicks); }

// "2.28.9" from ncclGetVersion's code (NCCL_VERSION(X,Y,Z): X*1000+Y*100+Z
// up to 2.8, X*10000+Y*100+Z after); empty for a code <= 0.
std::string NcclVersionString(int code);
// Whether a launcher set one of the rank variables (formats/rank_env.h).
bool RankFromEnvironment();
// How the first NCCL communicator (RANK of SIZE, HASH) starts the recorder,
// for the interposer and the profiler plugin alike: without a launcher's
// rank the communicator is taken as the world (RANK < 0: left to detection),
// and without DLTRACE_OUTPUT the ranks agree on a directory named after it,
// dltrace-nccl-HASH. NCCL_VERSION goes into the header.
StartInfo NcclStartInfo(int rank, int size, uint64_t hash, std::string nccl_version);

struct RawHeader;  // raw_file.h

class Recorder {
 public:
  // The process-wide recorder; never destroyed (exit paths may still use it).
  // Inline, one load once made: every wrapped call asks for it.
  __attribute__((always_inline)) static Recorder& Get() {
    Recorder* r = instance_.load(std::memory_order_acquire);
    if (__builtin_expect(r == nullptr, 0)) r = Create();
    return *r;
  }

  const Settings& settings() const { return settings_; }
  // True while recording in the process that started it (not in fork
  // children). No getpid() here (a system call on the hot path): fork
  // children are switched off by the atfork handler instead.
  bool active() const { return state_.load(std::memory_order_acquire) == 1; }
  // True until recording stopped or was switched off (NCCL communicator
  // creation starts the recorder from here).
  bool startable() const { return state_.load(std::memory_order_acquire) <= 1; }

  // Opens the trace file and starts the background thread. Idempotent.
  bool Start(const StartInfo& info);
  // Final flush and footer; later calls do nothing. Safe from any thread
  // except inside a signal handler (signals go through the flusher).
  void Stop(const char* reason);

  // Hot path (inline, below): a store into the calling thread's current
  // block and one release store that publishes it; no lock, allocation,
  // system call or wake-up unless the block is full (AppendSlow).
  __attribute__((always_inline)) void Append(const OpRecord& op);
  // The same, filled in place (the MPI wrappers): Reserve gives the calling
  // thread's next slot in its block, or null when there is none at hand
  // (no buffer yet, a full block, nothing kept), and the caller fills a
  // record of its own instead. OWNER is where the caller keeps the pointer:
  // an Append from this thread before Commit (a Wait's completed requests)
  // moves the half-made record to SpareRecord() and points *OWNER there.
  // Commit(rec) publishes REC (the slot, or anything else: appended);
  // Release() gives the slot up unpublished. Between the two, the slot is
  // not yet in `count`: a crash or signal meanwhile loses only this call.
  __attribute__((always_inline)) OpRecord* Reserve(OpRecord** owner);
  __attribute__((always_inline)) static void Commit(OpRecord* rec, PeerBytes* extras);
  __attribute__((always_inline)) static void Release();
  // The calling thread's record for when Reserve gives none (one per
  // thread: wrapped calls do not nest).
  static OpRecord* SpareRecord();
  // Publishes REC from outside the thread's block (a fast call's record
  // that a Spill moved to the spare): appended like any other.
  __attribute__((noinline)) static void CommitSpilled(OpRecord* rec);
  // With per-peer byte counts (the flusher frees EXTRAS).
  void Append(const OpRecord& op, PeerBytes* extras);
  // The same from a whole OpEvent (NCCL).
  void Append(formats::OpEvent&& op);
  // Communicators go into the next chunk.
  void AddCommunicator(formats::Communicator comm);
  uint32_t NewCommunicatorId() { return next_comm_id_.fetch_add(1); }
  // Registers the one source of deferred ops (set once, before it has any).
  void SetDeferredOps(DeferredOps* source) { deferred_.store(source); }
  // Small stable index of the calling thread, stored with each op.
  uint32_t ThreadIndex();

  // A call that moves data the recorder saw but could not record: counted
  // by NAME (a string literal) and written in the footer.
  void CountUnrecorded(const char* name);

  // Says MESSAGE once on stderr (unless quiet) and stops recording.
  void Disable(const std::string& message);
  // The directory a run without DLTRACE_OUTPUT uses (rank 0 chooses it).
  static std::string DefaultOutputDir();
  const std::string& trace_path() const { return trace_path_; }

  // Per-thread event buffers (recorder.cc): blocks of events that one thread
  // writes and the flusher reads.
  struct ThreadBuffer;
  struct Block;
  // A reading of NowTicks() and NowNs() at (about) the same instant.
  struct TickPoint {
    int64_t ticks = 0, ns = 0;
  };
  // Ticks to ns on a line from a point on, in fixed point (ns per tick
  // << 40: a multiply and a shift per time; off by under 1 ns for times up
  // to 2^40 ticks, minutes, from the point).
  struct TickLine {
    int64_t ticks = 0, ns = 0;
    int64_t mult = int64_t(1) << 40;  // ns per tick << 40 (a TSC of 1 MHz to 10 GHz fits)
    int64_t ToNs(int64_t t) const {
      return ns + int64_t((static_cast<__int128>(t - ticks) * mult) >> 40);
    }
    // The line from A through B (1 ns a tick where B is not after A).
    static TickLine Through(const TickPoint& a, const TickPoint& b) {
      TickLine l{a.ticks, a.ns};
      if (b.ticks > a.ticks)
        l.mult = int64_t((static_cast<__int128>(b.ns - a.ns) << 40) / (b.ticks - a.ticks));
      return l;
    }
  };

 private:
  Recorder();
  __attribute__((noinline)) static Recorder* Create();
  static inline std::atomic<Recorder*> instance_{nullptr};
  // Append's rare path: a new thread, a full block, a full buffer, or
  // nothing to keep.
  __attribute__((noinline)) void AppendSlow(const OpRecord& op, PeerBytes* extras);
  // Moves a reserved record out of B's slot (see Reserve).
  static void Spill(ThreadBuffer* b);
  ThreadBuffer* RegisterThread();
  // A fresh block for B's producer: recycled, or allocated within the bound.
  Block* NextBlock(ThreadBuffer* b);
  // Allocates (prefaulted) one more block for B if it has fewer than its bound.
  Block* NewBlock(ThreadBuffer* b);
  // The raw file's next block, mapped, or MAP_FAILED.
  void* NewRawBlock();
  // Hands a block the flusher has read back to its thread B.
  static void ReturnBlock(ThreadBuffer* b, Block* blk);
  // The blocks the flusher gave B back, waiting for them (asleep, no
  // polling) until DEADLINE (NowNs) or recording stops; null if none came.
  Block* WaitForReturned(ThreadBuffer* b, int64_t deadline);
  void FlusherLoop();
  void DrainBuffers(bool from_signal, bool final);
  // Whether the TSC still runs at its start rate against CLOCK_MONOTONIC
  // (NOW: a reading of both); if not, the wrappers leave it (g_tsc_clock).
  void CheckTscAgain(const TickPoint& now);
  void ExtendTickLines(const TickPoint& now);
  // Says once that the trace file could not be written and stops writing;
  // later events are only counted (call with writer_mu_ held).
  void StopWriting(const std::string& error, uint64_t kept);
  // The raw file (DLTRACE_RAW, raw_file.h): made with the first block a
  // thread takes; its header, mapped, or null.
  RawHeader* RawFile();
  // Says in the raw file where the trace is (Start), and removes it once
  // the trace is whole (FinishFile) or recording is off.
  void RemoveRawFile(bool from_signal = false);
  struct WriterState;
  // This process's CPU, memory, network and disk now (NOW: CLOCK_MONOTONIC
  // ns), from /proc files WS keeps open; taken at flushes, under writer_mu_.
  static formats::ResourceSample SampleResources(WriterState* ws, int64_t now);
  // Where encoding is deferred, drains are rare: a thread that starts a
  // block takes the resource sample that is due (DLTRACE_SAMPLE_MS since
  // the last), into the writer's next chunk; skipped while the flusher
  // holds the writer.
  void SampleBetweenDrains();
  // The resource sample at NOW (CLOCK_MONOTONIC ns) into the writer, if
  // DLTRACE_SAMPLE_MS passed since the last or FORCE (under writer_mu_).
  void SampleIfDue(int64_t now, bool force);
  bool FinishFile(const char* reason, bool from_signal);
  void InstallSignalHandlers();
  static void OnSignal(int sig, siginfo_t* info, void* ctx);
  static void OnFork();
  ThreadBuffer* ThisThreadBuffer();

  Settings settings_;
  std::atomic<int> state_{0};  // 0 idle, 1 active, 2 stopped, 3 disabled
  int pid_ = 0;
  std::string trace_path_;
  std::atomic<uint32_t> next_comm_id_{0};
  std::atomic<uint32_t> next_thread_{0};
  std::atomic<DeferredOps*> deferred_{nullptr};

  std::mutex buffers_mu_;  // guards buffers_ (registration and flush only)
  std::vector<ThreadBuffer*> buffers_;
  // One consumer of the thread buffers at a time (flusher, Stop, signal).
  std::mutex drain_mu_;
  uint32_t block_events_ = 0;  // events per block
  uint32_t max_blocks_ = 0;    // blocks per thread: DLTRACE_BUFFER_EVENTS, rounded up
  uint32_t drain_blocks_ = 0;  // blocks a thread fills before it wakes the flusher
  bool defer_ = false;         // DLTRACE_DEFER applies: drain_blocks_ is its window
  // What allocating (and touching) one block took the last thread that
  // started: how long a thread waits for the flusher before it allocates.
  std::atomic<int64_t> block_alloc_ns_{0};
  // Ticks to ns (under drain_mu_): one line after another, each starting
  // where the one before was at the last tick converted with it, so that
  // a time once written is never given another value and a thread's times
  // stay in order (ExtendTickLines). The last runs on; the others serve
  // times from before it (a blocking call's entry).
  std::vector<TickLine> tick_lines_;
  int64_t ticks_converted_ = 0;  // every tick a drain converted is at most this
  TickPoint tick_anchor_, tick_candidate_;  // the clock's line (ExtendTickLines)
  // The TSC's rate against CLOCK_MONOTONIC at start, and the reading each
  // flush checks the rate since against (CheckTscAgain, under drain_mu_).
  double tsc_ns_per_tick_ = 0;
  TickPoint tick_checked_;
  // The record last given to the writer (under drain_mu_): a record of the
  // same shape from the same thread goes in as its times only.
  struct {
    OpRecord op;
    uint32_t thread = 0;
    bool valid = false;  // false: none, or one with per-peer bytes
  } last_added_;

  std::mutex writer_mu_;  // guards the writer and pending communicators
  WriterState* writer_ = nullptr;
  uint64_t dropped_ = 0;
  std::mutex unrecorded_mu_;  // a rare path: a lock is fine
  std::vector<std::pair<const char*, uint64_t>> unrecorded_;
  int rank_ = -1;
  // Set after a failed write: Append counts events instead of keeping them.
  std::atomic<bool> discard_{false};

  // The raw file: made once (raw_tried_), grown, under raw_mu_.
  std::mutex raw_mu_;
  bool raw_tried_ = false;
  RawHeader* raw_ = nullptr;
  int raw_fd_ = -1;
  size_t raw_block_bytes_ = 0;
  std::string raw_path_;
};

// What a block holds per call.
struct BufferedOp {
  OpRecord op;
  PeerBytes* extras;  // or null
};
static_assert(sizeof(BufferedOp) == 104, "a buffered op should stay small");

// A fixed run of events, written by one thread and read by the flusher: the
// writer publishes each event with one release store of `count`; a full
// block is linked to the next through `next`, and the flusher, once it has
// read a block, hands it back to its thread (ThreadBuffer::returned).
// Blocks are never freed, so a thread's steady state allocates nothing.
struct alignas(64) Recorder::Block {
  std::atomic<uint32_t> count{0};
  uint32_t slot = ~uint32_t(0);  // in a raw file: its thread's RawThread (raw_file.h)
  std::atomic<Block*> next{nullptr};
  Block* free_next = nullptr;  // in a free list
  uint64_t first = 0;          // the thread's number of events[0] (its events before)
  BufferedOp events[1];         // block_events_ of them (allocated past the end)
};

struct alignas(64) Recorder::ThreadBuffer {
  // The owning thread's side (the hot path touches only this line, and
  // the block it writes).
  Block* write = nullptr;
  uint32_t write_pos = 0;
  // Append stores in place while write_pos is below this: the block's
  // size, or 0 while every op takes AppendSlow (no block, overflowing).
  uint32_t write_limit = 0;
  // Full, and the flusher did not make room within the wait: drop without
  // waiting again until a drain has finished (one stuck on a stalled disk).
  bool overflowing = false;
  // Set between Reserve and Commit/Release: where the reserving call keeps
  // its record pointer (null: no slot reserved).
  OpRecord** reserved_by = nullptr;
  // Where a fast MPI call (FastMpiCall) keeps it: the call holds its
  // record's address in a register, and reads this back only when
  // reserved_by was cleared, i.e. its record was spilled.
  OpRecord* fast_owner = nullptr;
  uint64_t overflow_drain = 0;   // g_drains when it gave up
  Block* free = nullptr;         // blocks taken back from `returned`
  uint32_t filled = 0;           // blocks filled since the last drain it saw
  uint64_t filled_drain = 0;     // g_drains then
  uint32_t index = 0;

  // Shared with the flusher.
  alignas(64) std::atomic<Block*> returned{nullptr};  // read blocks, pushed by the flusher
  // Blocks given back so far (a futex word) and whether the thread sleeps
  // on it (NextBlock): the flusher wakes it as it gives one back.
  std::atomic<uint32_t> returns{0};
  std::atomic<uint32_t> waiting{0};
  std::atomic<uint32_t> blocks{0};                    // allocated, at most max_blocks_
  std::atomic<uint64_t> dropped{0};

  // The flusher's side: where it has read up to.
  alignas(64) Block* read = nullptr;
  uint32_t read_pos = 0;
  // Its RawThread in the raw file (DLTRACE_RAW), or ~0: blocks in anonymous memory.
  uint32_t raw_slot = ~uint32_t(0);
};

// The calling thread's buffer, null until its first op. __thread (no
// C++ initialiser, hence no TLS wrapper call), initial-exec (the library
// is preloaded): one %fs-relative load.
extern __thread Recorder::ThreadBuffer* t_thread_buffer;

inline void Recorder::Append(const OpRecord& op) {
  ThreadBuffer* b = t_thread_buffer;
  if (__builtin_expect(b != nullptr, 1)) {
    const uint32_t pos = b->write_pos;
    if (__builtin_expect(pos < b->write_limit && !discard_.load(std::memory_order_relaxed) &&
                             b->reserved_by == nullptr,
                         1)) {
      Block* blk = b->write;
      blk->events[pos].op = op;
      blk->events[pos].extras = nullptr;
      b->write_pos = pos + 1;
      blk->count.store(pos + 1, std::memory_order_release);
      return;
    }
  }
  AppendSlow(op, nullptr);
}

inline OpRecord* Recorder::Reserve(OpRecord** owner) {
  ThreadBuffer* b = t_thread_buffer;
  if (__builtin_expect(b != nullptr, 1)) {
    const uint32_t pos = b->write_pos;
    if (__builtin_expect(pos < b->write_limit && !discard_.load(std::memory_order_relaxed), 1)) {
      b->reserved_by = owner;
      return &b->write->events[pos].op;
    }
  }
  return nullptr;
}

inline void Recorder::Commit(OpRecord* rec, PeerBytes* extras) {
  ThreadBuffer* b = t_thread_buffer;
  // Still reserved: REC is the slot at write_pos (a Spill would have
  // cleared reserved_by and moved REC to the spare).
  if (__builtin_expect(b != nullptr && b->reserved_by != nullptr, 1)) {
    b->reserved_by = nullptr;
    reinterpret_cast<BufferedOp*>(rec)->extras = extras;  // `op` is BufferedOp's first member
    const uint32_t n = b->write_pos + 1;
    b->write_pos = n;
    b->write->count.store(n, std::memory_order_release);
    return;
  }
  Get().AppendSlow(*rec, extras);
}

inline void Recorder::Release() {
  if (ThreadBuffer* b = t_thread_buffer) b->reserved_by = nullptr;
}

}  // namespace dltrace::record
