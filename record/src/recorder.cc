// Recorder: buffering, the flusher thread, resource samples, output naming
// and the exit paths. Nothing here may throw into or abort the host program.
#include "recorder.h"

#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "dltrace/formats/rank_env.h"
#include "dltrace/formats/writer.h"
#include "signals.h"

namespace dltrace::record {

using formats::OpEvent;

namespace {

sem_t g_flush_request;   // posted by signal handlers and Stop()
sem_t g_flush_done;      // posted by the flusher after a signal-driven finish
std::atomic<int> g_signal{0};
std::atomic<bool> g_stop{false};
std::atomic<bool> g_drain_now{false};  // a thread's buffer is filling: flush before the timer
constexpr size_t kEarlyFlushEvents = 1 << 16;
const int kSignals[] = {SIGTERM, SIGINT, SIGHUP};

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

std::string JobId() {
  for (const char* n : formats::kJobIdVariables)
    if (const char* v = Env(n)) return v;
  return "";
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

std::string Expand(const std::string& tmpl, int rank, const std::string& host, int pid,
                   const std::string& job) {
  std::string out;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] != '%' || i + 1 == tmpl.size()) {
      out += tmpl[i];
      continue;
    }
    switch (tmpl[++i]) {
      case 'r': out += rank >= 0 ? std::to_string(rank) : "p" + std::to_string(pid); break;
      case 'h': out += host; break;
      case 'p': out += std::to_string(pid); break;
      case 'j': out += job.empty() ? "nojob" : job; break;
      case '%': out += '%'; break;
      default: out += '%'; out += tmpl[i];
    }
  }
  return out;
}

}  // namespace

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// What a thread buffers per call: OpEvent without its vectors and optionals
// (80 bytes instead of about 200), so the hot path streams less memory.
struct CompactOp {
  formats::OpKind kind;
  formats::DataType datatype;
  formats::RedOp red_op;
  uint8_t flags;  // 1 gpu times, 2 completion, 4 captured in graph
  uint32_t comm;
  int32_t peer;
  int32_t tag;
  uint32_t group;
  uint32_t extras;  // index + 1 into ThreadBuffer::extras, 0 = none
  uint64_t count, bytes, seq, stream;
  int64_t enter_ns, exit_ns, gpu_start_ns, gpu_end_ns, completion_ns;
};

struct PeerBytes {
  std::vector<uint64_t> send, recv;
};

// Guards one thread's buffer; only the flusher ever contends, briefly, so a
// spin on one atomic is cheaper than a mutex on the hot path.
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

class SpinLock {
 public:
  void lock() {
    while (locked_.exchange(true, std::memory_order_acquire))
      while (locked_.load(std::memory_order_relaxed)) CpuRelax();
  }
  bool try_lock() { return !locked_.exchange(true, std::memory_order_acquire); }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

struct Recorder::ThreadBuffer {
  SpinLock mu;
  std::vector<CompactOp> events;
  std::vector<PeerBytes> extras;  // per-peer byte counts of v/w-form calls
  // Swapped with `events`/`extras` at each flush and drained by the flusher
  // alone, so both keep their capacity: refilling fresh memory (page faults)
  // was most of the hot-path cost.
  std::vector<CompactOp> spare;
  std::vector<PeerBytes> spare_extras;
  uint64_t dropped = 0;
  // Full, and the flusher did not make room within the wait: drop without
  // waiting again until its flush (stuck on a stalled disk) has finished.
  bool overflowing = false;
  uint32_t index = 0;
};

namespace {

OpEvent Expand(const CompactOp& c, std::vector<PeerBytes>& extras, uint32_t thread) {
  OpEvent op;
  op.kind = c.kind;
  op.datatype = c.datatype;
  op.red_op = c.red_op;
  op.captured_in_graph = c.flags & 4;
  op.comm = c.comm;
  op.peer = c.peer;
  op.tag = c.tag;
  op.group = c.group;
  op.count = c.count;
  op.bytes = c.bytes;
  op.seq = c.seq;
  op.stream = c.stream;
  op.thread = thread;
  op.enter_ns = c.enter_ns;
  op.exit_ns = c.exit_ns;
  if (c.flags & 1) {
    op.gpu_start_ns = c.gpu_start_ns;
    op.gpu_end_ns = c.gpu_end_ns;
  }
  if (c.flags & 2) op.completion_ns = c.completion_ns;
  if (c.extras) {
    op.peer_send_bytes = std::move(extras[c.extras - 1].send);
    op.peer_recv_bytes = std::move(extras[c.extras - 1].recv);
  }
  return op;
}

}  // namespace

struct Recorder::WriterState {
  std::unique_ptr<formats::TraceWriter> writer;
  std::vector<formats::Communicator> pending_comms;
  std::thread flusher;
  int64_t last_sample_ns = 0;
  uint64_t last_cpu_ticks = 0;
  int64_t last_cpu_ns = 0;
};

Recorder& Recorder::Get() {
  static Recorder* recorder = new Recorder();  // leaked on purpose: used until the very end
  return *recorder;
}

Recorder::Recorder() : settings_(Settings::FromEnvironment()) {
  if (!settings_.enabled) state_ = 3;
}

// No getpid() here (a system call on the hot path): fork children are
// switched off by the atfork handler instead.
bool Recorder::active() const { return state_.load(std::memory_order_acquire) == 1; }

void Recorder::Disable(const std::string& message) {
  int prev = state_.exchange(3);
  if (prev != 3 && !settings_.quiet) std::fprintf(stderr, "dltrace: %s\n", message.c_str());
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

Recorder::ThreadBuffer* Recorder::ThisThreadBuffer() {
  thread_local ThreadBuffer* buffer = nullptr;
  if (!buffer) {
    buffer = new ThreadBuffer();  // kept after the thread ends, until flushed
    buffer->index = next_thread_.fetch_add(1);
    std::lock_guard<std::mutex> lock(buffers_mu_);
    buffers_.push_back(buffer);
  }
  return buffer;
}

void Recorder::Append(OpEvent&& op) {
  ThreadBuffer* b = ThisThreadBuffer();
  b->mu.lock();  // only the flusher ever contends
  // After a failed write nothing more reaches the file: count, don't keep.
  if (discard_.load(std::memory_order_relaxed) || b->overflowing) {
    ++b->dropped;
    b->mu.unlock();
    return;
  }
  if (int64_t(b->events.size()) >= settings_.buffer_events) {
    // Full: the program outruns the flusher (more threads than cores, say).
    // Wait for it rather than lose events; drop, counted, if it is stuck
    // (a stalled file system), and keep dropping without waiting until it
    // comes back: the program is held up once, not once per call.
    b->mu.unlock();
    if (!g_drain_now.exchange(true)) sem_post(&g_flush_request);
    bool room = false;
    for (int i = 0; i < 20000 && !room && state_.load(std::memory_order_relaxed) == 1; ++i) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      b->mu.lock();
      room = int64_t(b->events.size()) < settings_.buffer_events;
      if (!room) b->mu.unlock();
    }
    if (!room) {
      b->mu.lock();
      ++b->dropped;
      b->overflowing = int64_t(b->events.size()) >= settings_.buffer_events;
      b->mu.unlock();
      return;
    }
  }
  std::lock_guard<SpinLock> lock(b->mu, std::adopt_lock);
  uint32_t extras = 0;
  if (!op.peer_send_bytes.empty() || !op.peer_recv_bytes.empty()) {
    b->extras.push_back({std::move(op.peer_send_bytes), std::move(op.peer_recv_bytes)});
    extras = uint32_t(b->extras.size());
  }
  uint8_t flags = uint8_t((op.gpu_start_ns && op.gpu_end_ns ? 1 : 0) | (op.completion_ns ? 2 : 0) |
                          (op.captured_in_graph ? 4 : 0));
  b->events.push_back({op.kind, op.datatype, op.red_op, flags, op.comm, op.peer, op.tag, op.group,
                       extras, op.count, op.bytes, op.seq, op.stream, op.enter_ns, op.exit_ns,
                       op.gpu_start_ns.value_or(0), op.gpu_end_ns.value_or(0),
                       op.completion_ns.value_or(0)});
  if (b->events.size() == kEarlyFlushEvents && !g_drain_now.exchange(true))
    sem_post(&g_flush_request);
}

void Recorder::AddCommunicator(formats::Communicator comm) {
  std::lock_guard<std::mutex> lock(writer_mu_);
  if (writer_) writer_->pending_comms.push_back(std::move(comm));
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
  h.job_id = JobId();
  KeepRawValues(formats::kRankVariables, &h.rank_env);
  KeepRawValues(formats::kLocalRankVariables, &h.rank_env);
  KeepRawValues(formats::kWorldSizeVariables, &h.rank_env);
  KeepRawValues(formats::kJobIdVariables, &h.rank_env);

  // Where the file goes: a template with %-codes names the file; otherwise
  // the setting (or the agreed default) is a directory of rank files.
  std::string dir, file;
  std::string out = settings_.output.empty() ? info.output_dir : settings_.output;
  if (out.empty()) out = DefaultOutputDir();
  if (out.find('%') != std::string::npos) {
    file = Expand(out, h.global_rank, h.host, pid_, h.job_id);
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
  return true;
}

void Recorder::OnFork() {
  // The child shares the parent's file descriptor: it must never write.
  Recorder& r = Recorder::Get();
  r.state_ = 3;
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
  const int64_t flush_ns = settings_.flush_ms * 1'000'000;
  const int64_t sample_ns = settings_.sample_ms * 1'000'000;
  int64_t next_flush = NowNs() + flush_ns;
  int64_t next_sample = sample_ns > 0 ? NowNs() : INT64_MAX;
  while (true) {
    int64_t wake = std::min(next_flush, next_sample);
    timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    int64_t wait = std::max<int64_t>(0, wake - NowNs());
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
    if (now >= next_sample) {
      SampleResources();
      next_sample = now + sample_ns;
    }
    if (now >= next_flush || g_drain_now.exchange(false)) {
      DrainBuffers(false, false);
      next_flush = now + flush_ns;
    }
  }
}

void Recorder::DrainBuffers(bool from_signal, bool final) {
  // From a signal, the interrupted thread may hold a lock: try, don't wait.
  auto lock = [from_signal](auto& mu) {
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
  uint64_t dropped = 0;
  if (!lock(buffers_mu_)) return;
  std::vector<ThreadBuffer*> buffers = buffers_;
  buffers_mu_.unlock();
  std::vector<ThreadBuffer*> taken;
  for (ThreadBuffer* b : buffers) {
    if (!lock(b->mu)) continue;
    b->events.swap(b->spare);
    b->extras.swap(b->spare_extras);
    dropped += b->dropped;
    b->dropped = 0;
    b->mu.unlock();
    taken.push_back(b);
  }
  // Deferred ops are taken outside every lock: the source may ask the GPU.
  std::vector<OpEvent> deferred;
  if (DeferredOps* source = deferred_.load()) source->TakeReady(final, &deferred);
  // No sorting: each thread's events are in order and the format stores
  // signed time deltas, so interleaving threads costs nothing but a sort.
  if (!lock(writer_mu_)) return;
  std::string err;
  bool ok = true;
  if (writer_ && writer_->writer) {
    formats::TraceWriter& w = *writer_->writer;
    dropped_ += dropped;
    for (auto& c : writer_->pending_comms) w.AddCommunicator(c);
    writer_->pending_comms.clear();
    // Once writing failed, the writer counts what it is given as lost.
    for (ThreadBuffer* b : taken)
      for (const auto& e : b->spare) w.AddOp(Expand(e, b->spare_extras, b->index));
    for (const auto& op : deferred) w.AddOp(op);
    ok = w.Flush(&err);
    if (!ok && w.failed()) StopWriting(w.failure(), w.ops_written());
  }
  writer_mu_.unlock();
  for (ThreadBuffer* b : taken) {
    b->spare.clear();
    b->spare_extras.clear();
    // The flush that kept a thread waiting is done: it may wait again.
    if (lock(b->mu)) {
      b->overflowing = false;
      b->mu.unlock();
    }
  }
}

void Recorder::StopWriting(const std::string& error, uint64_t kept) {
  if (discard_.exchange(true)) return;
  if (settings_.quiet) return;
  std::fprintf(stderr,
               "dltrace: rank %d: %s; recording stopped, the program runs on (%llu events "
               "written before are kept; later ones are counted as dropped in the footer)\n",
               rank_, error.c_str(), (unsigned long long)kept);
}

void Recorder::SampleResources() {
  formats::ResourceSample s;
  int64_t now = NowNs();
  s.time_ns = uint64_t(now);
  // CPU: utime + stime (fields 14, 15 of /proc/self/stat) in clock ticks.
  std::string stat = ReadFile("/proc/self/stat");
  size_t close_paren = stat.rfind(')');
  if (close_paren != std::string::npos) {
    std::istringstream in(stat.substr(close_paren + 2));
    std::string field;
    uint64_t utime = 0, stime = 0;
    for (int i = 3; i <= 15 && in >> field; ++i) {
      if (i == 14) utime = std::strtoull(field.c_str(), nullptr, 10);
      if (i == 15) stime = std::strtoull(field.c_str(), nullptr, 10);
    }
    uint64_t ticks = utime + stime;
    std::lock_guard<std::mutex> lock(writer_mu_);
    if (writer_ && writer_->last_cpu_ns > 0 && now > writer_->last_cpu_ns) {
      double cpu_s = double(ticks - writer_->last_cpu_ticks) / double(sysconf(_SC_CLK_TCK));
      s.cpu_percent = float(100.0 * cpu_s / (double(now - writer_->last_cpu_ns) * 1e-9));
    }
    if (writer_) {
      writer_->last_cpu_ticks = ticks;
      writer_->last_cpu_ns = now;
    }
  }
  std::istringstream statm(ReadFile("/proc/self/statm"));
  uint64_t size_pages = 0, resident = 0;
  statm >> size_pages >> resident;
  s.rss_bytes = resident * uint64_t(sysconf(_SC_PAGESIZE));
  // Network of this process's namespace, every interface but loopback.
  std::istringstream net(ReadFile("/proc/self/net/dev"));
  std::string line;
  while (std::getline(net, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name == "lo") continue;
    std::istringstream f(line.substr(colon + 1));
    uint64_t v[9] = {};
    for (auto& x : v) f >> x;
    s.net_rx_bytes += v[0];
    s.net_tx_bytes += v[8];
  }
  std::istringstream io(ReadFile("/proc/self/io"));
  while (std::getline(io, line)) {
    if (line.rfind("read_bytes:", 0) == 0) s.disk_read_bytes = std::strtoull(line.c_str() + 11, nullptr, 10);
    if (line.rfind("write_bytes:", 0) == 0) s.disk_write_bytes = std::strtoull(line.c_str() + 12, nullptr, 10);
  }
  std::lock_guard<std::mutex> lock(writer_mu_);
  if (writer_ && writer_->writer) writer_->writer->AddSample(s);
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
  return ok;
}

void Recorder::Stop(const char* reason) {
  if (pid_ != getpid()) return;
  int expected = 1;
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

}  // namespace dltrace::record
