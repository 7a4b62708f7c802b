// The API-agnostic recorder: per-thread event buffers, a background thread
// that flushes them to this process's trace file and samples resources, and
// the exit paths (finalize, exit, signals, abort) that write the footer.
#pragma once

#include <signal.h>
#include <time.h>

#include <atomic>
#include <cstdint>
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

// The wrappers' clock: the CPU's time-stamp counter where the kernel keeps
// CLOCK_MONOTONIC with it too (clocksource "tsc": invariant and synchronized
// across cores), read in a third of clock_gettime's time; CLOCK_MONOTONIC
// ns elsewhere. Records taken with it carry OpRecord::kTicks and the
// flusher turns them into CLOCK_MONOTONIC ns (TickClock in recorder.cc).
extern bool g_tsc_clock;  // set once, before recording starts
inline int64_t NowTicks() {
#if defined(__x86_64__)
  if (__builtin_expect(g_tsc_clock, 1)) return int64_t(__builtin_ia32_rdtsc());
#endif
  return NowNs();
}

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

class Recorder {
 public:
  // The process-wide recorder; never destroyed (exit paths may still use it).
  // Inline: every wrapped call asks for it.
  static Recorder& Get() {
    static Recorder* const recorder = new Recorder();  // leaked on purpose: used until the very end
    return *recorder;
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

  // Hot path: a store into the calling thread's current block and one
  // release store that publishes it; no lock, allocation, system call or
  // wake-up unless the block is full (AppendSlow).
  void Append(const OpRecord& op);
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

 private:
  Recorder();
  // Append's rare path: a full block, a full buffer, or nothing to keep.
  void AppendSlow(ThreadBuffer* b, const OpRecord& op, PeerBytes* extras);
  ThreadBuffer* RegisterThread();
  // A fresh block for B's producer: recycled, or allocated within the bound.
  Block* NextBlock(ThreadBuffer* b);
  // Allocates (prefaulted) one more block for B if it has fewer than its bound.
  Block* NewBlock(ThreadBuffer* b);
  void FlusherLoop();
  void DrainBuffers(bool from_signal, bool final);
  // Says once that the trace file could not be written and stops writing;
  // later events are only counted (call with writer_mu_ held).
  void StopWriting(const std::string& error, uint64_t kept);
  void SampleResources();
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
  TickPoint tick_anchor_, tick_candidate_;  // the drain's, under drain_mu_

  std::mutex writer_mu_;  // guards the writer and pending communicators
  struct WriterState;
  WriterState* writer_ = nullptr;
  uint64_t dropped_ = 0;
  std::mutex unrecorded_mu_;  // a rare path: a lock is fine
  std::vector<std::pair<const char*, uint64_t>> unrecorded_;
  int rank_ = -1;
  // Set after a failed write: Append counts events instead of keeping them.
  std::atomic<bool> discard_{false};
};

}  // namespace dltrace::record
