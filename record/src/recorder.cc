// SPDX-License-Identifier: GPL-2.0-only
// Recorder: buffering, the flusher thread, resource samples, output naming
// and the exit paths. Nothing here may throw into or abort the host program.
#include "recorder.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <new>
#include <sstream>
#include <thread>

#include "dltrace/formats/nccl_env.h"
#include "dltrace/formats/rank_env.h"
#include "dltrace/formats/writer.h"
#include "dltrace/record/output_naming.h"
#include "raw_file.h"
#include "signals.h"

namespace dltrace::record {

using formats::OpEvent;

std::atomic<bool> g_tsc_clock{false};
std::atomic<uint8_t> g_fast_record{kFastOff};

namespace {

sem_t g_flush_request;   // posted by signal handlers and Stop()
sem_t g_flush_done;      // posted by the flusher after a signal-driven finish
std::atomic<int> g_signal{0};
std::atomic<bool> g_stop{false};
std::atomic<bool> g_drain_now{false};  // a thread's buffer is filling: flush before the timer
const int kSignals[] = {SIGTERM, SIGINT, SIGHUP};

// Wakes the flusher to drain now (once until it has: later asks add nothing).
void RequestDrain() {
  if (!g_drain_now.exchange(true)) sem_post(&g_flush_request);
}

std::string ReadFile(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

template <typename Names>
int FirstIntEnv(const Names& names, int def) {
  for (const char* n : names)
    if (const char* v = Env(n)) return std::atoi(v);
  return def;
}

template <typename Names>
void KeepRawValues(const Names& names, formats::KeyValues* out) {
  for (const char* n : names)
    if (const char* v = Env(n)) out->emplace_back(n, v);
}

std::string HostName() {
  char buf[256] = {};
  ::gethostname(buf, sizeof(buf) - 1);
  return buf;
}

bool MakeDirs(const std::string& path) {
  std::string cur;
  std::stringstream ss(path);
  std::string part;
  if (!path.empty() && path[0] == '/') cur = "/";
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    cur += part + "/";
    if (::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  return true;
}

}  // namespace



namespace {

constexpr uint32_t kBlockEvents = 4096;  // 416 KiB a block

// A thread that filled this many blocks since the last drain wakes the
// flusher (or at half its buffer, if that is fewer), and a thread starts
// with this many blocks and two more: the block it writes while the
// flusher reads the ones it filled, and one in case the flusher is late.
// Blocks then come back while their pages are still mapped and in cache,
// and a steady run writes into the same four blocks. Writing into fresh
// memory costs far more than encoding: on the 2-core KVM guest of
// docs/results/benchmarks.md a call's first store to a page never
// written from user space takes tens of microseconds (the host maps the
// page then, whatever MAP_POPULATE did), about 200 ns a call at 104
// bytes a record, against about 110 instructions a call for the flusher
// to encode.
constexpr uint32_t kDrainBlocks = 2;

// How long a thread with a full buffer waits for the flusher before dropping.
constexpr int kFullWaitSteps = 20000;  // x 100 us = 2 s

size_t BlockBytes(uint32_t events) {
  return offsetof(Recorder::Block, events) + size_t(events) * sizeof(BufferedOp);
}

// Drains finished, for threads that gave up waiting (ThreadBuffer::overflow_drain).
std::atomic<uint64_t> g_drains{0};

// The flusher's thread id while it runs (0 before and after) and the CPUs
// it may run on then, and how many threads lend it their CPU now
// (CpuLoan); all under g_loan_mu.
std::mutex g_loan_mu;
pid_t g_flusher_tid = 0;
cpu_set_t g_flusher_cpus;
int g_lenders = 0;

// While a thread waits for the flusher to give blocks back, the flusher
// runs on the waiting thread's CPU: the first waiter moves it there
// (sched_setaffinity), the last one gives it back its CPUs. With one rank
// per core the flusher has no core of its own: woken, it waits for the
// scheduler to preempt some rank (milliseconds on a loaded machine, while
// the rank that needs its blocks sleeps and then allocates fresh ones);
// lent the waiter's idle CPU, it runs at once. Only where it waits: the
// waiter writes nothing, so a flusher stuck on a stalled disk holds the
// thread no longer than before.
class CpuLoan {
 public:
  CpuLoan() {
    std::lock_guard<std::mutex> lock(g_loan_mu);
    if (g_flusher_tid == 0) return;
    counted_ = true;
    if (g_lenders++ > 0) return;
    const int cpu = sched_getcpu();
    if (cpu < 0 || cpu >= CPU_SETSIZE) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    sched_setaffinity(g_flusher_tid, sizeof(one), &one);
  }
  ~CpuLoan() {
    std::lock_guard<std::mutex> lock(g_loan_mu);
    if (counted_ && --g_lenders == 0 && g_flusher_tid != 0)
      sched_setaffinity(g_flusher_tid, sizeof(g_flusher_cpus), &g_flusher_cpus);
  }
  CpuLoan(const CpuLoan&) = delete;
  CpuLoan& operator=(const CpuLoan&) = delete;

 private:
  bool counted_ = false;
};


}  // namespace


namespace {

// One reading of both clocks: the TSC taken on both sides of the
// clock_gettime, the tightest of a few tries (a preemption between the
// reads would otherwise put the pair microseconds apart), so the pair is
// off by about half of one clock_gettime. Always the TSC (where there is
// one), whichever clock the wrappers use now: records taken before a
// switch away from it still hold ticks.
Recorder::TickPoint TickNow() {
  Recorder::TickPoint best;
  int64_t best_window = INT64_MAX;
  for (int i = 0; i < 5; ++i) {
    int64_t t0 = NowTicks(true);
    int64_t ns = NowNs();
    int64_t t1 = NowTicks(true);
    if (t1 - t0 < best_window) {
      best_window = t1 - t0;
      best = {t0 + (t1 - t0) / 2, ns};
    }
  }
  return best;
}

bool KernelKeepsTimeWithTsc() {
#if defined(__x86_64__)
  char buf[32] = {};
  int fd = ::open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                  O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  return n >= 3 && std::strncmp(buf, "tsc", 3) == 0 && (n == 3 || buf[3] == '\n');
#else
  return false;
#endif
}

// Whether the CPU says its TSC is invariant: a constant rate, counting in
// every power state, and a rate the kernel knows without calibrating it
// (the flags constant_tsc, nonstop_tsc and tsc_known_freq in
// /proc/cpuinfo: the kernel's reading of CPUID and of its hypervisor). A
// KVM guest with an invariant TSC shows all three while its kernel keeps
// time with kvm-clock (which itself reads the TSC), where the wrappers
// would otherwise pay for clock_gettime and miss the TSC's fast path.
bool CpuSaysTscInvariant() {
#if defined(__x86_64__)
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, 5, "flags") != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    bool constant = false, nonstop = false, known = false;
    for (std::string w; words >> w;) {
      constant |= w == "constant_tsc";
      nonstop |= w == "nonstop_tsc";
      known |= w == "tsc_known_freq";
    }
    return constant && nonstop && known;  // the first CPU's flags: all CPUs share them
  }
#endif
  return false;
}

// Ticks to ns through two readings, as a rate; 0 if it is not one a TSC
// can have (1 MHz to 10 GHz, as TickScale assumes) or time went back.
double NsPerTick(const Recorder::TickPoint& a, const Recorder::TickPoint& b) {
  if (b.ticks <= a.ticks || b.ns <= a.ns) return 0;
  const double r = double(b.ns - a.ns) / double(b.ticks - a.ticks);
  return r >= 0.1 && r <= 1000 ? r : 0;
}

// The TSC against CLOCK_MONOTONIC on every CPU this process may run on (at
// most 1,024 of them): a thread of its own, pinned to each in turn, reads
// both clocks there, and each reading must lie within 50 us of the line
// through a reading before the others and one at least 2 ms after the
// first. A counter offset between CPUs, or one that is stopped or scaled
// differently on some CPU, puts a reading off the line by far more. On
// success *NS_PER_TICK is the rate (each flush checks against it). Costs
// the start about 2 ms and a migration per CPU; the program's own threads
// keep their CPU masks.
bool CheckTscOnEveryCpu(double* ns_per_tick, std::string* why) {
#if defined(__x86_64__)
  bool ok = false;
  auto check = [&] {
    cpu_set_t mask;
    if (sched_getaffinity(0, sizeof(mask), &mask) != 0) {
      *why = "sched_getaffinity failed";
      return;
    }
    const Recorder::TickPoint a = TickNow();
    std::vector<std::pair<int, Recorder::TickPoint>> points;
    for (int cpu = 0, tried = 0; cpu < CPU_SETSIZE && tried < 1024; ++cpu) {
      if (!CPU_ISSET(cpu, &mask)) continue;
      ++tried;
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      if (pthread_setaffinity_np(pthread_self(), sizeof(one), &one) != 0) continue;
      const Recorder::TickPoint p = TickNow();
      if (sched_getcpu() == cpu) points.emplace_back(cpu, p);
    }
    pthread_setaffinity_np(pthread_self(), sizeof(mask), &mask);
    while (NowNs() - a.ns < 2'000'000) std::this_thread::sleep_for(std::chrono::microseconds(500));
    const Recorder::TickPoint b = TickNow();
    const double rate = NsPerTick(a, b);
    if (rate == 0) {
      *why = "the TSC did not advance with CLOCK_MONOTONIC";
      return;
    }
    for (const auto& [cpu, p] : points) {
      const double off = double(a.ns) + double(p.ticks - a.ticks) * rate - double(p.ns);
      if (off > 50'000 || off < -50'000) {
        char buf[128];
        std::snprintf(buf, sizeof(buf), "the TSC of CPU %d is %.0f us off CLOCK_MONOTONIC", cpu,
                      off / 1000);
        *why = buf;
        return;
      }
    }
    *ns_per_tick = rate;
    ok = true;
  };
  // Like the flusher, the check's thread must never take the program's signals.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  try {
    std::thread t(check);
    t.join();
  } catch (const std::exception&) {  // no thread to spare: never throw into the program
    *why = "no thread for the check";
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
#else
  (void)ns_per_tick;
  *why = "no TSC on this CPU";
  return false;
#endif
}

// What an op adds besides its shape, its host times in ns.
static_assert(int(OpRecord::kGpuTimes) == int(formats::OpTimes::kGpuTimes) &&
                  int(OpRecord::kCompletion) == int(formats::OpTimes::kCompletion),
              "the flags a record and the writer's times share have one value");
// Whether two records have one shape and the same flags: every field Expand
// puts into the OpEvent's shape (all but seq, group and the times; the
// thread is the caller's to compare) and the flags. Compared as
// the six 8-byte words that hold those fields, masked, without a branch
// per field: the flusher asks it for every op.
uint64_t Word(const OpRecord& r, size_t offset) {
  uint64_t w;
  std::memcpy(&w, reinterpret_cast<const char*>(&r) + offset, 8);
  return w;
}
static_assert(offsetof(OpRecord, kind) == 0 && offsetof(OpRecord, datatype) == 1 &&
                  offsetof(OpRecord, red_op) == 2 && offsetof(OpRecord, flags) == 3 &&
                  offsetof(OpRecord, comm) == 4 && offsetof(OpRecord, peer) == 8 &&
                  offsetof(OpRecord, tag) == 12 && offsetof(OpRecord, group) == 16 &&
                  offsetof(OpRecord, nccl_algorithm) == 20 &&
                  offsetof(OpRecord, nccl_protocol) == 21 &&
                  offsetof(OpRecord, nccl_channels) == 22 && offsetof(OpRecord, count) == 24 &&
                  offsetof(OpRecord, bytes) == 32 && offsetof(OpRecord, seq) == 40 &&
                  offsetof(OpRecord, stream) == 48,
              "SameShape reads OpRecord's shape fields as words at these offsets");
__attribute__((always_inline)) inline bool SameShape(const OpRecord& a, const OpRecord& b) {
  // Word 0: kind, datatype, red_op, flags, comm. All the flags, though only
  // kCapturedInGraph is shape: the records of a run then share which times
  // they hold, and the run stores them without a test per record.
  constexpr uint64_t kWord0 = ~uint64_t(0);
  // Word 2: group (not shape), then the NCCL choice.
  constexpr uint64_t kWord2 = ~uint64_t(0xFFFFFFFF);
  const uint64_t differ = ((Word(a, 0) ^ Word(b, 0)) & kWord0) | (Word(a, 8) ^ Word(b, 8)) |
                          ((Word(a, 16) ^ Word(b, 16)) & kWord2) | (Word(a, 24) ^ Word(b, 24)) |
                          (Word(a, 32) ^ Word(b, 32)) | (Word(a, 48) ^ Word(b, 48));
  return differ == 0;
}

OpEvent Expand(const BufferedOp& e, uint32_t thread, const TickScale& scale) {
  OpEvent op = ExpandRecord(e.op, thread, scale);
  if (e.extras) {
    op.peer_send_bytes = std::move(e.extras->send);
    op.peer_recv_bytes = std::move(e.extras->recv);
    delete e.extras;
  }
  return op;
}

}  // namespace

namespace {

// A /proc file kept open and read again from its start at each sample:
// no open/close and no stream objects per sample.
class ProcFile {
 public:
  explicit ProcFile(const char* path) : fd_(::open(path, O_RDONLY | O_CLOEXEC)) {}
  ~ProcFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  ProcFile(const ProcFile&) = delete;
  ProcFile& operator=(const ProcFile&) = delete;
  // The text now, NUL-terminated (empty if unreadable); valid until the next Read.
  const char* Read() {
    size_t n = 0;
    while (fd_ >= 0) {
      if (buf_.size() < n + 4096) buf_.resize(n + 4096);
      ssize_t got = ::pread(fd_, &buf_[n], buf_.size() - n - 1, off_t(n));
      if (got <= 0) break;
      n += size_t(got);
    }
    if (buf_.empty()) buf_.resize(1);
    buf_[n] = '\0';
    return buf_.data();
  }

 private:
  int fd_;
  std::string buf_;
};

// Where DLTRACE_RAW=1 puts raw files: shared memory (no write-back, no
// write faults once mapped), else the temporary directory.
std::string DefaultRawDir() {
  struct stat st;
  if (::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && ::access("/dev/shm", W_OK) == 0)
    return "/dev/shm";
  const char* tmp = Env("TMPDIR");
  return tmp ? tmp : "/tmp";
}

// Bytes free to a user in DIR's file system (unknown: all one could ask).
uint64_t FreeBytes(const std::string& dir) {
  struct statvfs fs;
  if (::statvfs(dir.c_str(), &fs) != 0) return UINT64_MAX;
  return uint64_t(fs.f_bavail) * fs.f_frsize;
}

// This host's ranks, as the launcher says (1 where none does).
int LocalRanks() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                           "MV2_COMM_WORLD_LOCAL_SIZE", "PALS_LOCAL_SIZE", "LOCAL_WORLD_SIZE"})
    if (const char* v = Env(name)) return std::max(1, std::atoi(v));
  // Slurm: "2(x3),1" tasks per node of the step, this node's by SLURM_NODEID.
  const char* per_node = Env("SLURM_STEP_TASKS_PER_NODE");
  const char* node_id = Env("SLURM_NODEID");
  if (!per_node || !node_id) return 1;
  long node = std::atol(node_id);
  for (const char* p = per_node; *p;) {
    char* end = nullptr;
    const long tasks = std::strtol(p, &end, 10);
    if (end == p) break;
    long repeat = 1;
    if (std::strncmp(end, "(x", 2) == 0) {
      repeat = std::strtol(end + 2, &end, 10);
      if (*end == ')') ++end;
    }
    if (node < repeat) return int(std::max(1L, tasks));
    node -= repeat;
    p = *end == ',' ? end + 1 : end;
  }
  return 1;
}

// Whether this host's LOCAL ranks take every CPU a rank may run on, so
// that the flusher has no core of its own (DLTRACE_DEFER=auto): ranks
// bound to a part of the host (fewer CPUs in the mask than online) share
// their part in proportion; unbound ranks share all of it.
bool EveryCpuHasARank(long local) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return false;
  const long mine = CPU_COUNT(&set);
  const long online = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  const long sharing = mine < online ? std::max(1L, (local * mine + online - 1) / online) : local;
  return sharing >= mine;
}

}  // namespace

struct Recorder::WriterState {
  std::unique_ptr<formats::TraceWriter> writer;
  // Resource samples (the flusher's alone).
  ProcFile stat{"/proc/self/stat"}, statm{"/proc/self/statm"}, net{"/proc/self/net/dev"},
      io{"/proc/self/io"};
  std::vector<formats::Communicator> pending_comms;
  std::thread flusher;
  int64_t last_sample_ns = 0;
  uint64_t last_cpu_ticks = 0;
  int64_t last_cpu_ns = 0;
};

Recorder::Recorder() : settings_(Settings::FromEnvironment()) {
  if (!settings_.enabled) state_ = 3;
  // At least two blocks a thread (one written, one read), together holding
  // at least DLTRACE_BUFFER_EVENTS.
  uint64_t events = uint64_t(std::max<int64_t>(settings_.buffer_events, 2));
  block_events_ = uint32_t(std::min<uint64_t>(kBlockEvents, (events + 1) / 2));
  max_blocks_ = uint32_t(std::max<uint64_t>(2, (events + block_events_ - 1) / block_events_));
  drain_blocks_ = std::min(kDrainBlocks, (max_blocks_ + 1) / 2);
  // Deferred encoding (DLTRACE_DEFER): a thread wakes the flusher once it
  // has filled its window less two blocks (the one it writes, one spare),
  // and starts with the window's blocks touched (RegisterThread); the
  // raw file keeps them through a SIGKILL, so only with one.
  const long local_ranks = LocalRanks();
  defer_ = !settings_.raw.empty() &&
           (settings_.defer == "1" || (settings_.defer == "auto" && EveryCpuHasARank(local_ranks)));
  // The window is at most half of what the raw file's file system has
  // free, shared by this host's ranks (a container's small /dev/shm); one
  // of fewer than five blocks is no deferral.
  if (defer_) {
    uint64_t window = std::min<uint64_t>(
        max_blocks_, (uint64_t(settings_.defer_events) + block_events_ - 1) / block_events_);
    const std::string dir = settings_.raw == "1" ? DefaultRawDir() : settings_.raw;
    window = std::min<uint64_t>(
        window, FreeBytes(dir) / 2 / uint64_t(local_ranks) / BlockBytes(block_events_));
    defer_ = window > kDrainBlocks + 2;
    if (defer_) drain_blocks_ = std::max(drain_blocks_, uint32_t(window) - 2);
  }
  // Tentative until Start checks it on every CPU (MPI_Init's enter is
  // the only record taken before; it keeps the clock it was taken with).
  g_tsc_clock = settings_.clock == "tsc" ||
                (settings_.clock == "auto" && (KernelKeepsTimeWithTsc() || CpuSaysTscInvariant()));
}

Recorder* Recorder::Create() {
  static Recorder* const recorder = new Recorder();  // leaked on purpose: used until the very end
  instance_.store(recorder, std::memory_order_release);
  return recorder;
}

void Recorder::Disable(const std::string& message) {
  g_fast_record.store(kFastOff);
  int prev = state_.exchange(3);
  if (prev != 3 && !settings_.quiet) std::fprintf(stderr, "dltrace: %s\n", message.c_str());
  RemoveRawFile();
}

std::string Recorder::DefaultOutputDir() {
  char stamp[32];
  time_t now = time(nullptr);
  tm local;
  localtime_r(&now, &local);
  strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &local);
  return std::string("dltrace-") + stamp + "-" + std::to_string(getpid());
}

uint32_t Recorder::ThreadIndex() { return ThisThreadBuffer()->index; }

__thread Recorder::ThreadBuffer* t_thread_buffer = nullptr;

inline Recorder::ThreadBuffer* Recorder::ThisThreadBuffer() {
  if (__builtin_expect(t_thread_buffer != nullptr, 1)) return t_thread_buffer;
  return RegisterThread();
}

Recorder::ThreadBuffer* Recorder::RegisterThread() {
  auto* b = new ThreadBuffer();  // kept after the thread ends, until flushed
  // Under the lock: the raw file's threads in the order of buffers_, the
  // order a drain reads them in.
  std::lock_guard<std::mutex> lock(buffers_mu_);
  b->index = next_thread_.fetch_add(1);
  if (RawHeader* raw = RawFile()) {
    const uint32_t slot = raw->threads.load(std::memory_order_relaxed);
    if (slot < kRawThreads) {
      raw->thread[slot].index = b->index;
      raw->thread[slot].used = 1;
      raw->threads.store(slot + 1, std::memory_order_release);
      b->raw_slot = slot;
    } else {
      raw->flags.fetch_or(RawHeader::kSomeBlocksAnonymous);
    }
  }
  // The blocks a steady run cycles through (kDrainBlocks), allocated and
  // touched now rather than by the calls that fill them.
  const int64_t t0 = NowNs();
  b->write = b->read = NewBlock(b);
  uint32_t made = b->write ? 1 : 0;
  for (uint32_t i = 0; i < drain_blocks_ + 1; ++i, ++made) {
    Block* spare = NewBlock(b);
    if (!spare) break;
    spare->free_next = b->free;
    b->free = spare;
  }
  if (made > 0) block_alloc_ns_.store(std::min<int64_t>((NowNs() - t0) / made, 10'000'000));
  if (!b->write) b->write_pos = block_events_;  // no memory: every op counted as dropped
  b->write_limit = b->write ? block_events_ : 0;
  buffers_.push_back(b);
  t_thread_buffer = b;
  return b;
}

RawHeader* Recorder::RawFile() {
  if (settings_.raw.empty()) return nullptr;
  std::lock_guard<std::mutex> lock(raw_mu_);
  if (raw_tried_) return raw_;
  raw_tried_ = true;
  const std::string dir = settings_.raw == "1" ? DefaultRawDir() : settings_.raw;
  raw_path_ = dir + "/dltrace-" + HostName() + "-" + std::to_string(getpid()) + ".raw";
  auto fail = [&](const char* what) {
    if (!settings_.quiet)
      std::fprintf(stderr, "dltrace: DLTRACE_RAW: %s %s: %s; buffering in memory (events "
                   "since the last flush are lost on SIGKILL)\n", what, raw_path_.c_str(),
                   std::strerror(errno));
    if (raw_fd_ >= 0) {
      ::unlink(raw_path_.c_str());
      ::close(raw_fd_);
      raw_fd_ = -1;
    }
    return nullptr;
  };
  raw_fd_ = ::open(raw_path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (raw_fd_ < 0) return fail("cannot create");
  // Space taken now (fallocate), not when a page is first written: a full
  // file system is a failed call here, never a SIGBUS in the program.
  if (int rc = ::posix_fallocate(raw_fd_, 0, kRawHeaderBytes)) {
    errno = rc;
    return fail("no room for");
  }
  void* mem = ::mmap(nullptr, kRawHeaderBytes, PROT_READ | PROT_WRITE, MAP_SHARED, raw_fd_, 0);
  if (mem == MAP_FAILED) return fail("cannot map");
  auto* h = new (mem) RawHeader();
  std::memcpy(h->magic, kRawMagic, sizeof(kRawMagic));
  h->version = kRawVersion;
  h->header_bytes = kRawHeaderBytes;
  h->record_bytes = sizeof(BufferedOp);
  h->block_events = block_events_;
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  raw_block_bytes_ = (BlockBytes(block_events_) + page - 1) / page * page;
  h->block_bytes = raw_block_bytes_;
  h->pid = getpid();
  h->rank = -1;
  std::snprintf(h->boot_id, sizeof(h->boot_id), "%s", BootId().c_str());
  raw_ = h;
  // A process that never starts recording leaves no raw file behind.
  std::atexit([] {
    Recorder& r = Recorder::Get();
    if (r.raw_ && r.raw_->pid == getpid() && !(r.raw_->flags.load() & RawHeader::kStarted))
      r.RemoveRawFile();
  });
  return raw_;
}

void Recorder::RemoveRawFile(bool from_signal) {
  // From a signal the interrupted thread may hold the lock (growing the file).
  std::unique_lock<std::mutex> lock(raw_mu_, std::try_to_lock);
  if (!lock.owns_lock()) {
    if (from_signal) return;
    lock.lock();
  }
  if (raw_fd_ < 0 || !raw_ || raw_->pid != getpid()) return;
  ::unlink(raw_path_.c_str());
  ::close(raw_fd_);
  raw_fd_ = -1;  // the mapped blocks stay valid; later ones are anonymous
}

void* Recorder::NewRawBlock() {
  std::lock_guard<std::mutex> lock(raw_mu_);
  if (raw_fd_ < 0) return MAP_FAILED;  // removed: recording is over
  // The file's next block, as a shared mapping, prefaulted.
  const uint64_t k = raw_->blocks.load(std::memory_order_relaxed);
  const off_t at = off_t(kRawHeaderBytes + k * raw_block_bytes_);
  void* mem = MAP_FAILED;
  if (int rc = ::posix_fallocate(raw_fd_, at, off_t(raw_block_bytes_))) {
    errno = rc;
  } else {
    mem = ::mmap(nullptr, raw_block_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                 raw_fd_, at);
    if (mem != MAP_FAILED) raw_->blocks.store(k + 1, std::memory_order_release);
  }
  if (mem == MAP_FAILED &&
      !(raw_->flags.fetch_or(RawHeader::kSomeBlocksAnonymous) & RawHeader::kSomeBlocksAnonymous) &&
      !settings_.quiet)
    std::fprintf(stderr, "dltrace: DLTRACE_RAW: no room for more of %s (%s); further "
                 "blocks in memory (lost on SIGKILL)\n", raw_path_.c_str(), std::strerror(errno));
  return mem;
}

Recorder::Block* Recorder::NewBlock(ThreadBuffer* b) {
  uint32_t n = b->blocks.load(std::memory_order_relaxed);
  do {
    if (n >= max_blocks_) return nullptr;
  } while (!b->blocks.compare_exchange_weak(n, n + 1, std::memory_order_relaxed));
  void* mem = b->raw_slot != ~uint32_t(0) ? NewRawBlock() : MAP_FAILED;
  // Prefaulted: the calls that fill it take no page fault.
  if (mem == MAP_FAILED)
    mem = ::mmap(nullptr, BlockBytes(block_events_), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (mem == MAP_FAILED) {
    b->blocks.fetch_sub(1, std::memory_order_relaxed);
    return nullptr;
  }
  // One store to each page from user space: in a virtual machine the
  // host may map a page only when the guest's program first writes it
  // (MAP_POPULATE fills the guest's page tables, not the host's), and
  // that write is then tens of microseconds. Taken here, not by a call.
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  for (size_t at = 0; at < BlockBytes(block_events_); at += page)
    static_cast<volatile char*>(mem)[at] = 0;
  Block* blk = new (mem) Block();
  blk->slot = b->raw_slot;
  return blk;
}

Recorder::Block* Recorder::NextBlock(ThreadBuffer* b) {
  if (!b->free) b->free = b->returned.exchange(nullptr, std::memory_order_acquire);
  // Past the blocks a steady run cycles through, the flusher is behind
  // (it waits for a core): give it this one for up to what allocating a
  // block costs (measured at the thread's start), rather than pay that
  // and grow the set of blocks the thread writes into. Not at the bound:
  // there the caller's wait for a full buffer (AppendSlow) decides, and
  // it asks again every 100 us. Both waits lend the flusher this CPU
  // (CpuLoan); this one sleeps until a block comes back.
  const uint32_t held = b->blocks.load(std::memory_order_relaxed);
  if (!b->free && held >= drain_blocks_ + 2 && held < max_blocks_) {
    RequestDrain();
    CpuLoan loan;
    b->free = WaitForReturned(b, NowNs() + block_alloc_ns_.load(std::memory_order_relaxed));
  }
  Block* n = b->free;
  if (n) {
    b->free = n->free_next;
  } else if (!(n = NewBlock(b))) {
    return nullptr;
  }
  n->free_next = nullptr;
  n->count.store(0, std::memory_order_relaxed);
  n->next.store(nullptr, std::memory_order_relaxed);
  return n;
}

void Recorder::Append(const OpRecord& op, PeerBytes* extras) { AppendSlow(op, extras); }

void Recorder::Append(OpEvent&& op) {
  OpRecord r;
  r.kind = op.kind;
  r.datatype = op.datatype;
  r.red_op = op.red_op;
  r.flags = uint8_t((op.gpu_start_ns && op.gpu_end_ns ? OpRecord::kGpuTimes : 0) |
                    (op.completion_ns ? OpRecord::kCompletion : 0) |
                    (op.captured_in_graph ? OpRecord::kCapturedInGraph : 0));
  r.comm = op.comm;
  r.peer = op.peer;
  r.tag = op.tag;
  r.group = op.group;
  r.nccl_algorithm = op.nccl_algorithm;
  r.nccl_protocol = op.nccl_protocol;
  r.nccl_channels = op.nccl_channels;
  r.count = op.count;
  r.bytes = op.bytes;
  r.seq = op.seq;
  r.stream = op.stream;
  r.enter_ns = op.enter_ns;
  r.exit_ns = op.exit_ns;
  r.gpu_start_ns = op.gpu_start_ns.value_or(0);
  r.gpu_end_ns = op.gpu_end_ns.value_or(0);
  r.completion_ns = op.completion_ns.value_or(0);
  if (op.peer_send_bytes.empty() && op.peer_recv_bytes.empty())
    Append(r);
  else
    Append(r, new PeerBytes{std::move(op.peer_send_bytes), std::move(op.peer_recv_bytes)});
}

namespace {
// SpareRecord's storage: raw, as __thread takes no constructor.
alignas(OpRecord) __thread unsigned char t_spare_record[sizeof(OpRecord)];
}  // namespace

OpRecord* Recorder::SpareRecord() { return reinterpret_cast<OpRecord*>(t_spare_record); }

void Recorder::CommitSpilled(OpRecord* rec) { Get().AppendSlow(*rec, nullptr); }

void Recorder::Spill(ThreadBuffer* b) {
  OpRecord* spare = new (SpareRecord()) OpRecord(b->write->events[b->write_pos].op);
  *b->reserved_by = spare;
  b->reserved_by = nullptr;
}

void Recorder::AppendSlow(const OpRecord& op, PeerBytes* extras) {
  ThreadBuffer* b = ThisThreadBuffer();
  // A call of this thread is filling the next slot in place: it moves out.
  if (b->reserved_by) Spill(b);
  auto drop = [&] {
    b->dropped.fetch_add(1, std::memory_order_relaxed);
    delete extras;
  };
  // After a failed write nothing more reaches the file: count, don't keep.
  if (discard_.load(std::memory_order_relaxed)) return drop();
  if (b->overflowing) {
    if (g_drains.load(std::memory_order_acquire) == b->overflow_drain) return drop();
    b->overflowing = false;  // the flush that kept it waiting is done: it may wait again
    if (b->write) b->write_limit = block_events_;
  }
  if (!b->write) return drop();  // no memory for even one block when the thread began
  if (b->write_pos == block_events_) {
    Block* next = NextBlock(b);
    if (!next) {
      // Full: the program outruns the flusher (more threads than cores, say).
      // Wait for it rather than lose events; drop, counted, if it is stuck
      // (a stalled file system), and keep dropping without waiting until it
      // comes back: the program is held up once, not once per call.
      RequestDrain();
      CpuLoan loan;
      for (int i = 0; i < kFullWaitSteps && !next && state_.load(std::memory_order_relaxed) == 1;
           ++i) {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        next = NextBlock(b);
      }
      if (!next) {
        b->overflowing = true;
        b->write_limit = 0;
        b->overflow_drain = g_drains.load(std::memory_order_acquire);
        return drop();
      }
    }
    next->first = b->write->first + block_events_;
    b->write->next.store(next, std::memory_order_release);
    b->write = next;
    b->write_pos = 0;
    // kDrainBlocks (or half the bound) filled since the last drain: drain
    // now, so that the blocks come back while they are warm.
    uint64_t drains = g_drains.load(std::memory_order_relaxed);
    if (drains != b->filled_drain) {
      b->filled_drain = drains;
      b->filled = 0;
    }
    if (++b->filled >= drain_blocks_) RequestDrain();
    if (defer_) SampleBetweenDrains();
  }
  Block* blk = b->write;
  uint32_t pos = b->write_pos;
  blk->events[pos].op = op;
  blk->events[pos].extras = extras;
  b->write_pos = pos + 1;
  blk->count.store(pos + 1, std::memory_order_release);
}

void Recorder::AddCommunicator(formats::Communicator comm) {
  std::lock_guard<std::mutex> lock(writer_mu_);
  if (!writer_) return;
  // With a raw file there may be no flush before a SIGKILL: the
  // communicator goes into the trace now (a chunk of its own; making one
  // is a collective call that costs far more).
  if (raw_ && writer_->writer && !discard_.load()) {
    formats::TraceWriter& w = *writer_->writer;
    w.AddCommunicator(comm);
    std::string err;
    if (!w.Flush(&err) && w.failed()) StopWriting(w.failure(), w.ops_written());
    return;
  }
  writer_->pending_comms.push_back(std::move(comm));
}

bool Recorder::Start(const StartInfo& info) {
  int expected = 0;
  if (!state_.compare_exchange_strong(expected, 1)) return state_ == 1;
  pid_ = getpid();

  formats::Header h;
  h.global_rank = info.rank >= 0 ? info.rank : FirstIntEnv(formats::kRankVariables, -1);
  h.world_size = info.world_size > 0 ? info.world_size : FirstIntEnv(formats::kWorldSizeVariables, 0);
  h.local_rank = FirstIntEnv(formats::kLocalRankVariables, -1);
  h.host = HostName();
  h.pid = pid_;
  std::string cmdline = ReadFile("/proc/self/cmdline");
  for (size_t pos = 0; pos < cmdline.size();) {
    size_t end = cmdline.find('\0', pos);
    if (end == std::string::npos) end = cmdline.size();
    h.command_line.push_back(cmdline.substr(pos, end - pos));
    pos = end + 1;
  }
  timespec rt;
  clock_gettime(CLOCK_REALTIME, &rt);
  h.start_monotonic_ns = uint64_t(NowNs());
  h.start_realtime_ns = uint64_t(rt.tv_sec) * 1'000'000'000ull + uint64_t(rt.tv_nsec);
  h.recorder_version = DLTRACE_VERSION_STRING;
  h.mpi_version = info.mpi_version;
  h.nccl_version = info.nccl_version;
  h.gpu_device = info.gpu_device;
  h.gpu_bus_id = info.gpu_bus_id;
  h.job_id = JobIdFromEnvironment();
  h.attributes = info.attributes;
  // The clock, checked on every CPU before the program's calls take it.
  if (g_tsc_clock.load()) {
    std::string why;
    if (!CheckTscOnEveryCpu(&tsc_ns_per_tick_, &why)) {
      g_tsc_clock.store(false);
      if (settings_.clock == "tsc" && !settings_.quiet)
        std::fprintf(stderr, "dltrace: DLTRACE_CLOCK=tsc: %s; timing MPI calls with "
                     "clock_gettime instead\n", why.c_str());
      h.attributes.emplace_back("dltrace.clock_check", why);
    }
  }
  h.attributes.emplace_back("dltrace.clock", g_tsc_clock.load() ? "tsc" : "monotonic");
  if (RawFile()) h.attributes.emplace_back("dltrace.raw", raw_path_);
  h.attributes.emplace_back("dltrace.defer", defer_ && RawFile() ? "1" : "0");
  KeepRawValues(formats::kRankVariables, &h.rank_env);
  KeepRawValues(formats::kLocalRankVariables, &h.rank_env);
  KeepRawValues(formats::kWorldSizeVariables, &h.rank_env);
  KeepRawValues(formats::kJobIdVariables, &h.rank_env);
  const std::string step = StepIdFromEnvironment();
  if (!step.empty()) h.rank_env.emplace_back(kStepIdVariable, step);
  KeepRawValues(formats::kNcclSettingVariables, &h.nccl_env);

  // Where the file goes: a template with %-codes names the file; otherwise
  // the setting (or the agreed default) is a directory of rank files.
  std::string dir, file;
  std::string out = settings_.output.empty() ? info.output_dir : settings_.output;
  if (out.empty()) out = DefaultOutputDir();
  if (out.find('%') != std::string::npos) {
    file = ExpandOutputTemplate(out, {h.global_rank, h.host, pid_, h.job_id, step});
    size_t slash = file.rfind('/');
    dir = slash == std::string::npos ? "." : file.substr(0, slash);
  } else {
    dir = out;
    file = dir + "/" +
           (h.global_rank >= 0 ? "rank" + std::to_string(h.global_rank) : "pid" + std::to_string(pid_)) +
           formats::kTraceFileSuffix;
  }
  if (!MakeDirs(dir)) {
    Disable("cannot create trace directory " + dir + ": " + std::strerror(errno) +
            "; not recording");
    return false;
  }
  std::string err;
  auto writer = formats::TraceWriter::Create(file, h, &err);
  if (!writer) {
    Disable(err + "; not recording (a run never overwrites another)");
    return false;
  }
  trace_path_ = file;

  // The effective settings, next to the traces (first rank to get there).
  int sfd = ::open((dir + "/dltrace-settings.txt").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (sfd >= 0) {
    std::string text = "# effective dltrace settings of this run\n" + settings_.Describe();
    ssize_t ignored = ::write(sfd, text.data(), text.size());
    (void)ignored;
    ::close(sfd);
  }
  if (h.global_rank <= 0 && !settings_.quiet)
    std::fprintf(stderr, "dltrace: recording to %s\n", dir.c_str());

  rank_ = h.global_rank;
  {
    std::lock_guard<std::mutex> lock(writer_mu_);
    writer_ = new WriterState();
    writer_->writer = std::move(writer);
    // No room even for the footer: say so now; the header stays readable.
    if (writer_->writer->failed()) StopWriting(writer_->writer->failure(), 0);
  }
  tick_anchor_ = tick_candidate_ = tick_checked_ = TickNow();
  // Until the first drain: the rate the start measured (the TSC's against
  // CLOCK_MONOTONIC; 1 ns a tick where it measured none).
  Recorder::TickLine first{tick_checked_.ticks, tick_checked_.ns};
  if (tsc_ns_per_tick_ > 0) first.mult = int64_t(tsc_ns_per_tick_ * double(int64_t(1) << 40));
  tick_lines_.assign(1, first);
  ticks_converted_ = first.ticks;
  if (raw_) {
    // Where the trace is (absolute: recovery may run elsewhere) and what
    // turns the records' ticks into ns.
    std::string abs = file;
    if (abs[0] != '/') {
      char cwd[4096];
      if (::getcwd(cwd, sizeof(cwd))) abs = std::string(cwd) + "/" + abs;
    }
    std::snprintf(raw_->trace_path, sizeof(raw_->trace_path), "%s", abs.c_str());
    raw_->rank = h.global_rank;
    raw_->start_ticks = raw_->last_ticks = raw_->line_ticks = first.ticks;
    raw_->start_ns = raw_->last_ns = raw_->line_ns = first.ns;
    raw_->line_mult = first.mult;
    raw_->ns_per_tick = tsc_ns_per_tick_;
    raw_->flags.fetch_or(RawHeader::kStarted);
  }
  sem_init(&g_flush_request, 0, 0);
  sem_init(&g_flush_done, 0, 0);
  InstallSignalHandlers();
  pthread_atfork(nullptr, nullptr, &Recorder::OnFork);
  std::atexit([] { Recorder::Get().Stop("exit"); });

  // The flusher must never take the program's signals.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  writer_->flusher = std::thread([this] { FlusherLoop(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  g_fast_record.store(state_.load() != 1 || discard_.load() ? kFastOff
                      : g_tsc_clock.load()                    ? kFastTsc
                                                              : kFastMonotonic);
  return true;
}

void Recorder::OnFork() {
  // The child shares the parent's file descriptor: it must never write.
  Recorder& r = Recorder::Get();
  g_fast_record.store(kFastOff);
  r.state_ = 3;
  g_flusher_tid = 0;  // the parent's (the child has no flusher; no lock: it has one thread)
}

// A handler the program installs later runs behind this one (signals.cc).
void Recorder::InstallSignalHandlers() {
  InstallSignalChain(kSignals, int(sizeof(kSignals) / sizeof(kSignals[0])), &Recorder::OnSignal);
}

void Recorder::OnSignal(int sig, siginfo_t* info, void* ctx) {
  int saved_errno = errno;
  Recorder& r = Recorder::Get();
  if (r.active()) {
    int none = 0;
    if (g_signal.compare_exchange_strong(none, sig)) {
      sem_post(&g_flush_request);
      // Wait (bounded) for the flusher to write the footer.
      for (int i = 0; i < 3000; ++i) {
        if (sem_trywait(&g_flush_done) == 0) break;
        timespec ms{0, 1'000'000};
        nanosleep(&ms, nullptr);
      }
    }
  }
  // Then what the program installed, before or after us, or the default action.
  ChainSignal(sig, info, ctx);
  errno = saved_errno;
}

void Recorder::FlusherLoop() {
  // One timer: the flush. Resource samples are taken at flushes
  // (DrainBuffers), so that no wake-up of their own takes a core from a
  // rank that spins on it.
  // With a raw file (DLTRACE_RAW) there is no flush timer: what the
  // threads publish outlives a SIGKILL without one, and encoding waits for
  // a thread's filled blocks (kDrainBlocks), the exit or a signal; ops
  // that wait for GPU times (a deferred source) and an explicit
  // DLTRACE_FLUSH_MS bring the timer back, and so do blocks in memory
  // (the file was full, or past kRawThreads threads): a SIGKILL would
  // lose them. Woken once a second to see whether one of those came.
  // Named, so that top, perf and the tests can tell it from the program's threads.
  pthread_setname_np(pthread_self(), "dltrace-flush");
  // Its thread id and CPUs, for the threads that wait for it (CpuLoan);
  // cleared before it ends, so that no loan moves a thread that is gone.
  {
    std::lock_guard<std::mutex> lock(g_loan_mu);
    if (sched_getaffinity(0, sizeof(g_flusher_cpus), &g_flusher_cpus) == 0) g_flusher_tid = gettid();
  }
  struct Unregister {
    ~Unregister() {
      std::lock_guard<std::mutex> lock(g_loan_mu);
      g_flusher_tid = 0;
    }
  } unregister;
  const int64_t flush_ns = settings_.flush_ms * 1'000'000;
  int64_t next_flush = NowNs() + flush_ns;
  while (true) {
    const bool timed = raw_ == nullptr || deferred_.load() != nullptr || settings_.flush_ms_set ||
                       (raw_->flags.load(std::memory_order_relaxed) &
                        RawHeader::kSomeBlocksAnonymous);
    timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    int64_t wait = timed ? std::max<int64_t>(0, next_flush - NowNs()) : 1'000'000'000;
    deadline.tv_sec += time_t(wait / 1'000'000'000);
    deadline.tv_nsec += long(wait % 1'000'000'000);
    if (deadline.tv_nsec >= 1'000'000'000) {
      deadline.tv_sec += 1;
      deadline.tv_nsec -= 1'000'000'000;
    }
    int rc = sem_timedwait(&g_flush_request, &deadline);
    (void)rc;
    if (int sig = g_signal.load()) {
      std::string reason = "signal " + std::to_string(sig);
      FinishFile(reason.c_str(), /*from_signal=*/true);
      sem_post(&g_flush_done);
      return;
    }
    if (g_stop.load()) return;  // Stop() finishes the file itself
    int64_t now = NowNs();
    if ((timed && now >= next_flush) || g_drain_now.exchange(false)) {
      DrainBuffers(false, false);
      // The next tick of the grid from the start that is past now.
      if (now >= next_flush) next_flush += ((now - next_flush) / flush_ns + 1) * flush_ns;
    }
  }
}

void Recorder::DrainBuffers(bool from_signal, bool final) {
  // From a signal, the interrupted thread may hold a lock: try, don't wait.
  auto lock = [from_signal](std::mutex& mu) {
    if (!from_signal) {
      mu.lock();
      return true;
    }
    for (int i = 0; i < 100; ++i) {
      if (mu.try_lock()) return true;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return false;
  };
  if (!lock(drain_mu_)) return;
  std::lock_guard<std::mutex> drain(drain_mu_, std::adopt_lock);
  if (!lock(buffers_mu_)) return;
  std::vector<ThreadBuffer*> buffers = buffers_;
  buffers_mu_.unlock();
  // Deferred ops are taken outside every lock: the source may ask the GPU.
  std::vector<OpEvent> deferred;
  if (DeferredOps* source = deferred_.load()) source->TakeReady(final, &deferred);
  if (!lock(writer_mu_)) return;
  std::string err;
  bool ok = true;
  formats::TraceWriter* w = writer_ && writer_->writer ? writer_->writer.get() : nullptr;
  if (w) {
    for (auto& c : writer_->pending_comms) w->AddCommunicator(c);
    writer_->pending_comms.clear();
  }
  const TickPoint now = TickNow();
  CheckTscAgain(now);
  ExtendTickLines(now);
  const TickScale scale(tick_lines_);
  // What each thread published since the last drain, block by block; a
  // block read to its end goes back to its thread before the (possibly
  // slow) write, so a stalled disk holds up no thread's buffer twice.
  // No sorting: each thread's events are in order and the format stores
  // signed time deltas, so interleaving threads costs nothing but a sort.
  // Ops of the shape last added: their times go straight into the
  // writer's room for them, handed over in bulk.
  formats::OpTimes* run = nullptr;
  size_t in_run = 0, run_room = 0;
  auto end_run = [&] {
    if (in_run > 0) w->AddedRepeatOps(in_run);
    in_run = run_room = 0;
  };
  // With a raw file, a block read to its end goes back only once the
  // trace holds its events (after the write below): until then a SIGKILL
  // leaves them to recovery.
  std::vector<std::pair<ThreadBuffer*, Block*>> read_raw_blocks;
  for (ThreadBuffer* b : buffers) {
    dropped_ += b->dropped.exchange(0, std::memory_order_relaxed);
    Block* blk = b->read;
    if (!blk) continue;
    uint32_t pos = b->read_pos;
    // The thread's events from here go to the writer from its op count
    // now: said in the raw file (a whole mark, then one store to use it).
    RawThread* raw_thread = raw_ && w && b->raw_slot != ~uint32_t(0) ? &raw_->thread[b->raw_slot]
                                                                       : nullptr;
    if (raw_thread) {
      end_run();
      const uint32_t other = raw_thread->current ^ 1;
      raw_thread->mark[other] = {blk->first + pos, w->ops_written() + w->pending_ops(),
                                 ~uint64_t(0)};
      __atomic_store_n(&raw_thread->current, other, __ATOMIC_RELEASE);
    }
    // A local copy of the last record, which the stores of times cannot alias.
    OpRecord last_shape = last_added_.op;
    bool repeat_ok = last_added_.valid && last_added_.thread == b->index;
    // The run's records hold host times, ticks or ns, and no optional time
    // (an MPI call): the common case, stored without PutTimes' tests.
    bool plain_ticks = last_shape.flags == OpRecord::kTicks;
    bool plain_ns = last_shape.flags == 0;
    while (true) {
      uint32_t end = blk->count.load(std::memory_order_acquire);
      while (pos < end) {
        // A run of MPI calls of the last shape (host ticks, no optional
        // time, no per-peer bytes): only their times, straight into the
        // writer's room, in a loop that tests nothing else.
        if (w && repeat_ok && (plain_ticks || plain_ns)) {
          if (in_run == run_room) {
            end_run();
            run_room = block_events_;
            run = w->RepeatOpRoom(&run_room);
          }
          const uint32_t stop = pos + uint32_t(std::min<size_t>(end - pos, run_room - in_run));
          formats::OpTimes* t = run + in_run;
          uint32_t p = pos;
          if (plain_ticks) {
            // The drain's last line in a local (no store below can move it);
            // a call that entered on it returned on it.
            const TickLine line = scale.line;
            for (; p < stop; ++p, ++t) {
              const BufferedOp& e = blk->events[p];
              if (!SameShape(e.op, last_shape) || e.extras) break;
              t->has = 0;
              t->group = e.op.group;
              t->seq = e.op.seq;
              if (__builtin_expect(e.op.enter_ns >= line.ticks, 1)) {
                t->enter_ns = line.ToNs(e.op.enter_ns);
                t->exit_ns = line.ToNs(e.op.exit_ns);
              } else {
                t->enter_ns = scale.ToNs(e.op.enter_ns);
                t->exit_ns = scale.ToNs(e.op.exit_ns);
              }
            }
          } else {  // CLOCK_MONOTONIC ns already
            for (; p < stop; ++p, ++t) {
              const BufferedOp& e = blk->events[p];
              if (!SameShape(e.op, last_shape) || e.extras) break;
              t->has = 0;
              t->group = e.op.group;
              t->seq = e.op.seq;
              t->enter_ns = e.op.enter_ns;
              t->exit_ns = e.op.exit_ns;
            }
          }
          in_run += p - pos;
          pos = p;
          if (pos == end) break;
          if (p == stop && in_run == run_room) continue;  // the room is full: more room
        }
        // Once writing failed, the writer counts what it is given as lost.
        if (w) {
          // A loop of one call: the shape of the op before, its times only.
          const BufferedOp& e = blk->events[pos];
          if (repeat_ok && !e.extras && SameShape(e.op, last_shape)) {
            if (in_run == run_room) {
              end_run();
              run_room = block_events_;
              run = w->RepeatOpRoom(&run_room);
            }
            formats::OpTimes* t = &run[in_run++];
            if (__builtin_expect(plain_ticks, 1)) {
              t->has = 0;
              t->group = e.op.group;
              t->seq = e.op.seq;
              t->enter_ns = scale.ToNs(e.op.enter_ns);
              t->exit_ns = scale.ToNs(e.op.exit_ns);
            } else {
              PutTimes(e.op, scale, t);
            }
          } else {
            end_run();
            last_added_ = {e.op, b->index, e.extras == nullptr};
            last_shape = e.op;
            plain_ticks = last_shape.flags == OpRecord::kTicks;
            plain_ns = last_shape.flags == 0;
            repeat_ok = last_added_.valid;
            w->AddOp(Expand(e, b->index, scale));
          }
        } else {
          ++dropped_;
          delete blk->events[pos].extras;
        }
        ++pos;
      }
      if (end < block_events_) break;
      Block* next = blk->next.load(std::memory_order_acquire);
      if (!next) break;
      if (raw_thread)
        read_raw_blocks.emplace_back(b, blk);
      else
        ReturnBlock(b, blk);
      blk = next;
      pos = 0;
    }
    b->read = blk;
    b->read_pos = pos;
    if (raw_thread) {
      end_run();
      __atomic_store_n(&raw_thread->mark[raw_thread->current].end_seq, blk->first + pos,
                       __ATOMIC_RELEASE);
    }
  }
  if (w) {
    end_run();
    for (auto& op : deferred) w->AddOp(op);
    if (!deferred.empty()) last_added_.valid = false;
    // A resource sample at this flush, once DLTRACE_SAMPLE_MS passed since
    // the last, and at the last flush: no timer of its own.
    SampleIfDue(now.ns, final);
  }
  // Every record converted above was published before this reading (on
  // the CPUs' common TSC): the next line starts here.
  ticks_converted_ = std::max(ticks_converted_, NowTicks(true));
  if (w) {
    ok = w->Flush(&err);
    if (!ok && w->failed()) StopWriting(w->failure(), w->ops_written());
    if (raw_) {
      raw_->line_ticks = scale.line.ticks;
      raw_->line_ns = scale.line.ns;
      raw_->line_mult = scale.line.mult;
      raw_->last_ticks = ticks_converted_;
      raw_->last_ns = scale.ToNs(ticks_converted_);
    }
  }
  for (const auto& [b, blk] : read_raw_blocks) ReturnBlock(b, blk);
  writer_mu_.unlock();
  // The flush that kept a thread waiting is done: it may wait again.
  g_drains.fetch_add(1, std::memory_order_release);
}

void Recorder::ReturnBlock(ThreadBuffer* b, Block* blk) {
  blk->free_next = b->returned.load(std::memory_order_relaxed);
  while (!b->returned.compare_exchange_weak(blk->free_next, blk, std::memory_order_release,
                                            std::memory_order_relaxed)) {
  }
  // (Sequentially consistent with WaitForReturned's store of `waiting` and
  // load of `returns`: either it sees this block, or this sees it waiting.)
  b->returns.fetch_add(1);
  if (b->waiting.load())
    syscall(SYS_futex, &b->returns, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

Recorder::Block* Recorder::WaitForReturned(ThreadBuffer* b, int64_t deadline) {
  b->waiting.store(1);
  Block* got = nullptr;
  while (true) {
    const uint32_t seen = b->returns.load();
    got = b->returned.exchange(nullptr, std::memory_order_acquire);
    if (got) break;
    const int64_t left = deadline - NowNs();
    if (left <= 0 || state_.load(std::memory_order_relaxed) != 1) break;
    // Asleep until a block comes back (`returns` moves) or the deadline.
    timespec wait{time_t(left / 1'000'000'000), long(left % 1'000'000'000)};
    syscall(SYS_futex, &b->returns, FUTEX_WAIT_PRIVATE, seen, &wait, nullptr, 0);
  }
  b->waiting.store(0, std::memory_order_relaxed);
  return got;
}

// Ticks to ns for this drain: a line from where the last drain's line was
// at the last tick it converted, so that a time once written keeps its
// value and each thread's times stay in order, towards the clock's line
// (from a reading 100 to 200 ms old, the start's early on, to NOW: long
// enough that the readings' jitter does not matter, short enough to follow
// the kernel's NTP-slewed rate), met at NOW or 1 ms on, whichever is
// later. So the lines stay within the readings' error (tens of ns) of the
// clock. A line lives at least 1 ms (once it converted something).
void Recorder::ExtendTickLines(const TickPoint& now) {
  const TickLine clock = TickLine::Through(tick_anchor_, now);
  if (now.ns - tick_candidate_.ns >= 100'000'000) {
    tick_anchor_ = tick_candidate_;
    tick_candidate_ = now;
  }
  const TickLine& last = tick_lines_.back();
  const int64_t from = std::max(ticks_converted_, last.ticks);
  const bool used = from > last.ticks;
  if (now.ticks <= from || clock.mult <= 0 || (used && now.ns - last.ns < 1'000'000)) return;
  const int64_t from_ns = last.ToNs(from);
  const int64_t ms_ticks = int64_t((static_cast<__int128>(1'000'000) << 40) / clock.mult);
  const int64_t to = std::max(now.ticks, from + ms_ticks);
  const int64_t to_ns = clock.ToNs(to);
  if (to_ns <= from_ns) return;  // the clock over a millisecond behind: run on
  const TickLine next = TickLine::Through({from, from_ns}, {to, to_ns});
  if (!used) {
    tick_lines_.back() = next;
    return;
  }
  // Lines kept for times from before the last (a blocking call's entry):
  // at 4,096 (4 s at least) the older half goes; their times then come
  // from the oldest line kept, run backwards.
  if (tick_lines_.size() >= 4096) tick_lines_.erase(tick_lines_.begin(), tick_lines_.begin() + 2048);
  tick_lines_.push_back(next);
}

void Recorder::CheckTscAgain(const TickPoint& now) {
  if (!g_tsc_clock.load(std::memory_order_relaxed)) return;
  // Over at least 10 ms (its readings' error is then below 1e-5 of the
  // span), the rate must stay within 1% of the start's: a slewing kernel
  // moves it by 0.05% at most; a stopped, jumped or rescaled counter (a
  // paused or migrated virtual machine) by far more.
  const int64_t span = now.ns - tick_checked_.ns;
  if (now.ticks > tick_checked_.ticks && span < 10'000'000) return;
  const double rate = NsPerTick(tick_checked_, now);
  const double change = rate / tsc_ns_per_tick_ - 1;
  if (rate != 0 && change < 0.01 && change > -0.01) {
    tick_checked_ = now;
    return;
  }
  g_tsc_clock.store(false, std::memory_order_relaxed);
  uint8_t tsc = kFastTsc;  // (not when the fast path is off meanwhile)
  g_fast_record.compare_exchange_strong(tsc, kFastMonotonic);
  if (!settings_.quiet)
    std::fprintf(stderr, "dltrace: rank %d: the TSC %s CLOCK_MONOTONIC over the last %.0f ms; "
                 "timing MPI calls with clock_gettime from now on\n", rank_,
                 rate == 0 ? "did not advance with" : "changed its rate against",
                 double(span) / 1e6);
}

void Recorder::StopWriting(const std::string& error, uint64_t kept) {
  g_fast_record.store(kFastOff);
  if (raw_) raw_->flags.fetch_or(RawHeader::kWriterFailed);
  if (discard_.exchange(true)) return;
  if (settings_.quiet) return;
  std::fprintf(stderr,
               "dltrace: rank %d: %s; recording stopped, the program runs on (%llu events "
               "written before are kept; later ones are counted as dropped in the footer)\n",
               rank_, error.c_str(), (unsigned long long)kept);
}

void Recorder::SampleBetweenDrains() {
  if (settings_.sample_ms <= 0) return;
  // Not waiting: the flusher may hold the lock for a slow write.
  std::unique_lock<std::mutex> lock(writer_mu_, std::try_to_lock);
  if (!lock.owns_lock() || !writer_ || !writer_->writer || discard_.load()) return;
  SampleIfDue(NowNs(), false);
}

void Recorder::SampleIfDue(int64_t now, bool force) {
  const int64_t sample_ns = settings_.sample_ms * 1'000'000;
  if (sample_ns <= 0 || (!force && now - writer_->last_sample_ns < sample_ns)) return;
  writer_->last_sample_ns = now;
  writer_->writer->AddSample(SampleResources(writer_, now));
}

formats::ResourceSample Recorder::SampleResources(WriterState* ws, int64_t now) {
  formats::ResourceSample s;
  s.time_ns = uint64_t(now);
  // CPU: utime + stime (fields 14, 15 of /proc/self/stat) in clock ticks.
  const char* stat = ws->stat.Read();
  if (const char* p = std::strrchr(stat, ')')) {
    ++p;
    uint64_t utime = 0, stime = 0;
    for (int i = 3; i <= 15 && *p; ++i) {
      char* end = nullptr;
      while (*p == ' ') ++p;
      uint64_t v = std::strtoull(p, &end, 10);
      if (i == 14) utime = v;
      if (i == 15) stime = v;
      p = end && end != p ? end : p + std::strcspn(p, " ");
    }
    uint64_t ticks = utime + stime;
    if (ws->last_cpu_ns > 0 && now > ws->last_cpu_ns) {
      double cpu_s = double(ticks - ws->last_cpu_ticks) / double(sysconf(_SC_CLK_TCK));
      s.cpu_percent = float(100.0 * cpu_s / (double(now - ws->last_cpu_ns) * 1e-9));
    }
    ws->last_cpu_ticks = ticks;
    ws->last_cpu_ns = now;
  }
  {
    const char* statm = ws->statm.Read();
    char* end = nullptr;
    std::strtoull(statm, &end, 10);  // size
    s.rss_bytes = std::strtoull(end, nullptr, 10) * uint64_t(sysconf(_SC_PAGESIZE));
  }
  // Network of this process's namespace, every interface but loopback.
  for (const char* line = ws->net.Read(); *line;) {
    const char* eol = std::strchr(line, '\n');
    const char* colon = std::strchr(line, ':');
    if (colon && (!eol || colon < eol)) {
      const char* name = line;
      while (*name == ' ') ++name;
      if (!(colon - name == 2 && name[0] == 'l' && name[1] == 'o')) {
        const char* p = colon + 1;
        uint64_t v[9] = {};
        for (auto& x : v) {
          char* end = nullptr;
          x = std::strtoull(p, &end, 10);
          p = end;
        }
        s.net_rx_bytes += v[0];
        s.net_tx_bytes += v[8];
      }
    }
    if (!eol) break;
    line = eol + 1;
  }
  for (const char* line = ws->io.Read(); *line;) {
    if (!std::strncmp(line, "read_bytes:", 11)) s.disk_read_bytes = std::strtoull(line + 11, nullptr, 10);
    if (!std::strncmp(line, "write_bytes:", 12)) s.disk_write_bytes = std::strtoull(line + 12, nullptr, 10);
    const char* eol = std::strchr(line, '\n');
    if (!eol) break;
    line = eol + 1;
  }
  return s;
}

bool Recorder::FinishFile(const char* reason, bool from_signal) {
  DrainBuffers(from_signal, /*final=*/true);
  std::unique_lock<std::mutex> lock(writer_mu_, std::try_to_lock);
  if (!lock.owns_lock()) {
    if (from_signal) return false;
    lock.lock();
  }
  if (!writer_ || !writer_->writer) return false;
  timespec rt;
  clock_gettime(CLOCK_REALTIME, &rt);
  formats::Footer f;
  formats::TraceWriter& w = *writer_->writer;
  f.events_written = w.ops_written() + w.pending_ops();
  f.events_dropped = dropped_;
  f.samples_written = w.samples_written() + w.pending_samples();
  f.end_monotonic_ns = uint64_t(NowNs());
  f.end_realtime_ns = uint64_t(rt.tv_sec) * 1'000'000'000ull + uint64_t(rt.tv_nsec);
  f.reason = reason;
  {
    std::lock_guard<std::mutex> unrecorded_lock(unrecorded_mu_);
    for (const auto& [name, calls] : unrecorded_) f.unrecorded.emplace_back(name, calls);
  }
  std::string err;
  bool was_failed = w.failed();
  bool ok = w.Close(f, &err);
  bool footer = w.footer_written();
  uint64_t lost = w.ops_lost();
  int w_errno = w.failure_errno();
  if (!ok && !was_failed) StopWriting(err, w.ops_written());
  writer_->writer.reset();
  // (A removed file was said already; it takes no footer on purpose.)
  if (!footer && w_errno != ENOENT && !settings_.quiet)
    std::fprintf(stderr, "dltrace: rank %d: %s: no room for the footer either; the file reads "
                 "back up to its last whole chunk\n", rank_, trace_path_.c_str());
  uint64_t dropped = dropped_ + lost;
  if (dropped > 0 && !settings_.quiet)
    std::fprintf(stderr, "dltrace: rank %d: %s: %llu events dropped%s\n", rank_,
                 trace_path_.c_str(), (unsigned long long)dropped,
                 discard_.load() ? " (not written)" : " (raise DLTRACE_BUFFER_EVENTS)");
  // Everything the raw file held is in the trace, or counted in its footer.
  RemoveRawFile(from_signal);
  return ok;
}

void Recorder::CountUnrecorded(const char* name) {
  std::lock_guard<std::mutex> lock(unrecorded_mu_);
  for (auto& [n, calls] : unrecorded_)
    if (std::strcmp(n, name) == 0) {
      ++calls;
      return;
    }
  unrecorded_.emplace_back(name, 1);
}

void Recorder::Stop(const char* reason) {
  if (pid_ != getpid()) return;
  int expected = 1;
  g_fast_record.store(kFastOff);
  if (!state_.compare_exchange_strong(expected, 2)) return;
  WriterState* w;
  {
    std::lock_guard<std::mutex> lock(writer_mu_);
    w = writer_;
  }
  if (!w) return;
  if (w->flusher.joinable() && w->flusher.get_id() != std::this_thread::get_id()) {
    g_stop = true;
    sem_post(&g_flush_request);
    w->flusher.join();
  }
  if (g_signal.load() == 0) FinishFile(reason, false);
}

std::string NcclVersionString(int v) {
  if (v <= 0) return "";
  const int major = v >= 10000 ? v / 10000 : v / 1000;
  const int minor = v >= 10000 ? v / 100 % 100 : v / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
}

bool RankFromEnvironment() {
  for (const char* n : formats::kRankVariables) {
    const char* v = std::getenv(n);
    if (v && *v) return true;
  }
  return false;
}

StartInfo NcclStartInfo(int rank, int size, uint64_t hash, std::string nccl_version) {
  StartInfo info;
  if (!RankFromEnvironment() && rank >= 0) {
    info.rank = rank;
    info.world_size = size;
  }
  if (Recorder::Get().settings().output.empty()) {
    char dir[64];
    std::snprintf(dir, sizeof(dir), "dltrace-nccl-%016" PRIx64, hash);
    info.output_dir = dir;
  }
  info.nccl_version = std::move(nccl_version);
  return info;
}

}  // namespace dltrace::record
