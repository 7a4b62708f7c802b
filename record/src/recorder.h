// The API-agnostic recorder: per-thread event buffers, a background thread
// that flushes them to this process's trace file and samples resources, and
// the exit paths (finalize, exit, signals, abort) that write the footer.
#pragma once

#include <signal.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "dltrace/formats/trace.h"
#include "settings.h"

#define DLTRACE_EXPORT __attribute__((visibility("default")))

namespace dltrace::record {

int64_t NowNs();  // CLOCK_MONOTONIC

struct StartInfo {
  int rank = -1;          // from the API when it knows (MPI_Comm_rank); else detected
  int world_size = -1;
  std::string output_dir;  // agreed by all ranks (MPI broadcast); empty = own default
  std::string mpi_version;
  std::string nccl_version;
  int gpu_device = -1;     // CUDA device of the first NCCL communicator
  std::string gpu_bus_id;
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

class Recorder {
 public:
  // The process-wide recorder; never destroyed (exit paths may still use it).
  static Recorder& Get();

  const Settings& settings() const { return settings_; }
  // True while recording in the process that started it (not in fork children).
  bool active() const;
  // True until recording stopped or was switched off (NCCL communicator
  // creation starts the recorder from here).
  bool startable() const { return state_.load(std::memory_order_acquire) <= 1; }

  // Opens the trace file and starts the background thread. Idempotent.
  bool Start(const StartInfo& info);
  // Final flush and footer; later calls do nothing. Safe from any thread
  // except inside a signal handler (signals go through the flusher).
  void Stop(const char* reason);

  // Hot path: appends to the calling thread's buffer (no global lock).
  void Append(formats::OpEvent&& op);
  // Communicators go into the next chunk.
  void AddCommunicator(formats::Communicator comm);
  uint32_t NewCommunicatorId() { return next_comm_id_.fetch_add(1); }
  // Registers the one source of deferred ops (set once, before it has any).
  void SetDeferredOps(DeferredOps* source) { deferred_.store(source); }
  // Small stable index of the calling thread, stored with each op.
  uint32_t ThreadIndex();

  // Says MESSAGE once on stderr (unless quiet) and stops recording.
  void Disable(const std::string& message);
  // The directory a run without DLTRACE_OUTPUT uses (rank 0 chooses it).
  static std::string DefaultOutputDir();
  const std::string& trace_path() const { return trace_path_; }

 private:
  struct ThreadBuffer;
  Recorder();
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

  std::mutex writer_mu_;  // guards the writer and pending communicators
  struct WriterState;
  WriterState* writer_ = nullptr;
  uint64_t dropped_ = 0;
  int rank_ = -1;
  // Set after a failed write: Append counts events instead of keeping them.
  std::atomic<bool> discard_{false};
};

}  // namespace dltrace::record
