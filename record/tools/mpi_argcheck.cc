// SPDX-License-Identifier: GPL-2.0-only
// libdltrace-mpi-argcheck.so: proves that the MPI recorder hands PMPI exactly
// what the program passed, and the program exactly what PMPI returned.
//
// Preloaded in front of the recorder (mpirun -x LD_PRELOAD=libdltrace-mpi-argcheck.so:
// libdltrace-record.so; `dltrace record` would put the recorder first), it
// defines every C function of record/tables/mpi.py
// twice (generated, mpi_argcheck.inc):
//   MPI_x   notes the arguments as the program passed them (and what the
//           handles, request arrays and status arrays they point to hold),
//           calls the recorder's MPI_x, and compares what the program gets
//           back (return code, flags, indices, requests, statuses) with what
//           PMPI_x returned;
//   PMPI_x  which the recorder's wrapper calls: compares its arguments with
//           the program's, then calls the MPI library's PMPI_x.
// The one difference allowed: where the program passed MPI_STATUS_IGNORE or
// MPI_STATUSES_IGNORE, PMPI may get a status of the recorder's (it needs the
// source and size of what was received); that is counted, not reported.
// Every other difference is one line on stderr, and the totals go to
// $DLTRACE_ARGCHECK_DIR/argcheck.PID.json at exit (tests/record/test_mpi_argcheck.py).
// It links no MPI library (dlsym(RTLD_NEXT) finds the next definitions), so it
// loads, inert, into mpirun and the other processes that make no MPI call.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#define DLTRACE_EXPORT __attribute__((visibility("default")))

namespace argcheck {
namespace {

// One argument as one side saw it: the argument's own bytes (a scalar, a
// handle or a pointer) and the bytes of what it points to that the call
// reads or writes (a handle, a request array, a status array); `ignored`
// when it is MPI_STATUS_IGNORE or MPI_STATUSES_IGNORE.
struct Arg {
  const char* name;
  std::string value;
  std::string pointee;
  bool ignored = false;
};
using Args = std::vector<Arg>;

template <typename T>
std::string Bytes(const T& v) {
  return std::string(reinterpret_cast<const char*>(&v), sizeof(T));
}

// What a pointer argument points to: N objects of size SIZE (none for null).
std::string Pointee(const void* p, long n, size_t size) {
  if (!p || n <= 0) return {};
  return std::string(static_cast<const char*>(p), size_t(n) * size);
}

// The generated ArgsOf_* functions add to an Args with these.
template <typename T>
void Value(Args& a, const char* name, const T& v) {
  a.push_back({name, Bytes(v), {}, false});
}
template <typename T>
void Points(Args& a, const char* name, T* p, long n) {
  a.push_back({name, Bytes(p), Pointee(p, n, sizeof(T)), false});
}
void Statuses(Args& a, const char* name, MPI_Status* p, long n, bool single) {
  const bool ignored = single ? p == MPI_STATUS_IGNORE : p == MPI_STATUSES_IGNORE;
  a.push_back({name, Bytes(p), ignored ? std::string() : Pointee(p, n, sizeof(MPI_Status)), ignored});
}

// ---- totals ---------------------------------------------------------------

#include "mpi_argcheck_names.inc"  // kFunctions[]: the table's C functions, by id

constexpr int kFunctionCount = int(sizeof(kFunctions) / sizeof(kFunctions[0]));
std::atomic<uint64_t> g_checked[kFunctionCount];
std::atomic<uint64_t> g_substituted{0};  // statuses the recorder put where the program ignored them
std::atomic<uint64_t> g_own_calls{0};    // PMPI calls the recorder made for itself
std::atomic<uint64_t> g_mismatches{0};
std::mutex g_lines_mu;
std::vector<std::string> g_lines;  // the first mismatches, for the report
constexpr size_t kMaxLines = 20;

std::string Hex(const std::string& bytes) {
  std::string out = "0x";
  char b[3];
  for (size_t i = bytes.size(); i-- > 0;) {  // little-endian: most significant byte last
    std::snprintf(b, sizeof(b), "%02x", unsigned(static_cast<unsigned char>(bytes[i])));
    out += b;
  }
  return out;
}

void Mismatch(const std::string& line) {
  g_mismatches.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(g_lines_mu);
  if (g_lines.size() >= kMaxLines) return;
  g_lines.push_back(line);
  std::fprintf(stderr, "dltrace-argcheck: %s\n", line.c_str());
}

// Compares THEIRS (what PMPI got, ON_ENTRY, or returned) with OURS (what
// the program passed or got back).
void Compare(int fn, bool on_entry, const Args& ours, const Args& theirs) {
  const char* where = on_entry ? "on entry" : "on return";
  if (ours.size() != theirs.size()) {
    Mismatch(std::string(kFunctions[fn]) + ": argument lists differ in length (generator fault)");
    return;
  }
  for (size_t i = 0; i < ours.size(); ++i) {
    const Arg& o = ours[i];
    const Arg& t = theirs[i];
    if (o.ignored) {  // the program ignored it: the recorder may pass its own
      if (on_entry && t.value != o.value) g_substituted.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    if (t.value != o.value)
      Mismatch(std::string(kFunctions[fn]) + ": " + where + " " + o.name + " was " + Hex(o.value) +
               ", PMPI's is " + Hex(t.value));
    else if (t.pointee != o.pointee)
      Mismatch(std::string(kFunctions[fn]) + ": " + where + " what " + o.name +
               " points to differs (" + std::to_string(o.pointee.size()) + " bytes)");
  }
}

// ---- one call ---------------------------------------------------------------

// A call of MPI_x by the program, from the program's MPI_x to its return;
// frames nest (an MPI call made inside another, a user reduction's callback).
struct Frame {
  Frame(int f, Frame* u) : fn(f), up(u) {}
  int fn;
  Frame* up;
  Args in;            // the program's arguments
  int forwarded = 0;  // PMPI_x calls that forwarded it
  bool in_pmpi = false;
  int pmpi_rc = 0;
  Args pmpi_out;  // what PMPI_x left in the outputs when it returned
};
thread_local Frame* t_top = nullptr;

class Call {
 public:
  explicit Call(int fn) : f_(fn, t_top) { t_top = &f_; }
  ~Call() { t_top = f_.up; }
  Args& in() { return f_.in; }
  // The program's MPI_x returned RC with OUT in its outputs.
  void Returned(int rc, const Args& out) {
    const char* name = kFunctions[f_.fn];
    if (f_.forwarded == 0) {
      Mismatch(std::string(name) + ": returned without calling P" + name);
      return;
    }
    if (f_.forwarded > 1)
      Mismatch(std::string(name) + ": called P" + name + " " + std::to_string(f_.forwarded) + " times");
    if (rc != f_.pmpi_rc)
      Mismatch(std::string(name) + ": returned " + std::to_string(rc) + ", P" + name + " returned " +
               std::to_string(f_.pmpi_rc));
    Compare(f_.fn, false, out, f_.pmpi_out);
    g_checked[f_.fn].fetch_add(1, std::memory_order_relaxed);
  }

 private:
  Frame f_;
};

// The program's call that this PMPI_x call forwards, or null when it is
// the recorder's own call (or the MPI library's, from inside PMPI).
Frame* Forwarding(int fn) {
  Frame* f = t_top;
  if (f == nullptr || f->fn != fn || f->in_pmpi) {
    g_own_calls.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  return f;
}

void Enter(Frame* f, const Args& got) {
  ++f->forwarded;
  Compare(f->fn, true, f->in, got);
  f->in_pmpi = true;
}

void Leave(Frame* f, int rc, Args&& out) {
  f->in_pmpi = false;
  f->pmpi_rc = rc;
  f->pmpi_out = std::move(out);
}

template <typename Fn>
Fn Next(const char* name) {
  void* p = dlsym(RTLD_NEXT, name);
  if (!p) {
    std::fprintf(stderr, "dltrace-argcheck: no %s after this library; cannot forward the call\n", name);
    std::abort();
  }
  return reinterpret_cast<Fn>(p);
}

// A fork()ed child starts with no calls of its own (it reports only what it
// calls itself, if anything).
void ForgetInChild() {
  for (auto& n : g_checked) n.store(0);
  g_substituted.store(0);
  g_own_calls.store(0);
  g_mismatches.store(0);
  g_lines.clear();
}
__attribute__((constructor)) void Start() { pthread_atfork(nullptr, nullptr, ForgetInChild); }

// At exit: the totals as one JSON object, where DLTRACE_ARGCHECK_DIR says
// (processes that made no MPI call write nothing).
__attribute__((destructor)) void WriteReport() {
  const char* dir = std::getenv("DLTRACE_ARGCHECK_DIR");
  uint64_t total = 0;
  for (auto& n : g_checked) total += n.load();
  if (total == 0 && g_own_calls.load() > 0)  // the recorder's PMPI calls, but no MPI_x of ours
    std::fprintf(stderr,
                 "dltrace-argcheck: no MPI call passed through the check: preload it in front of the "
                 "recorder (LD_PRELOAD=libdltrace-mpi-argcheck.so:libdltrace-record.so)\n");
  if (!dir || (total == 0 && g_mismatches.load() == 0 && g_own_calls.load() == 0)) return;
  const std::string path = std::string(dir) + "/argcheck." + std::to_string(getpid()) + ".json";
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "dltrace-argcheck: cannot write %s\n", path.c_str());
    return;
  }
  std::fprintf(f, "{\"pid\": %d, \"mismatches\": %" PRIu64 ", \"statuses_substituted\": %" PRIu64
               ", \"own_calls\": %" PRIu64 ", \"checked\": {",
               int(getpid()), g_mismatches.load(), g_substituted.load(), g_own_calls.load());
  bool first = true;
  for (int i = 0; i < kFunctionCount; ++i) {
    if (g_checked[i].load() == 0) continue;
    std::fprintf(f, "%s\"%s\": %" PRIu64, first ? "" : ", ", kFunctions[i], g_checked[i].load());
    first = false;
  }
  std::fprintf(f, "}, \"lines\": [");
  std::lock_guard<std::mutex> lock(g_lines_mu);
  for (size_t i = 0; i < g_lines.size(); ++i) {
    std::fprintf(f, "%s\"", i ? ", " : "");
    for (char c : g_lines[i]) {
      if (c == '"' || c == '\\') std::fputc('\\', f);
      std::fputc(c, f);
    }
    std::fputc('"', f);
  }
  std::fprintf(f, "]}\n");
  std::fclose(f);
}

}  // namespace
}  // namespace argcheck

#include "mpi_argcheck.inc"  // MPI_x and PMPI_x for every C row of tables/mpi.py
