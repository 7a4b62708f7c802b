// SPDX-License-Identifier: GPL-2.0-only
// The settings table and its parsing; unknown or malformed values fall back
// to the default with a warning rather than stopping the host program.
#include "settings.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dltrace::record {

const std::vector<SettingInfo>& AllSettings() {
  static const std::vector<SettingInfo> table = {
      {"DLTRACE_OUTPUT", "",
       "trace directory, or a file template with %r rank, %h host, %p pid, %j job id, "
       "%s Slurm step id; default: a fresh dltrace-<time> directory agreed by all ranks"},
      {"DLTRACE_FLUSH_MS", "200",
       "flush interval; on SIGKILL at most this much is lost. With a raw file (DLTRACE_RAW, "
       "the default) there is no flush timer unless this is set"},
      {"DLTRACE_SAMPLE_MS", "100",
       "resource sample interval (CPU, memory, network, disk), taken at flushes (no timer of its "
       "own): at most one a flush, so never more often than DLTRACE_FLUSH_MS (where encoding is "
       "deferred, DLTRACE_DEFER, also by a thread as it starts a block of 4,096 calls); 0 = off"},
      {"DLTRACE_BUFFER_EVENTS", "1048576",
       "events a thread may buffer between flushes; when full it waits for the flusher "
       "(at most 2 s), then drops (counted in the footer) without waiting again until that "
       "flush ends"},
      {"DLTRACE_ENABLE", "1", "0 turns the recorder off (the program runs untouched)"},
      {"DLTRACE_QUIET", "0", "1 silences the recorder's one-line notices on stderr"},
      {"DLTRACE_GPU_TIMING", "1", "NCCL: time operations on the GPU with CUDA events"},
      {"DLTRACE_CLOCK", "auto",
       "MPI calls' host clock: tsc (the CPU's time-stamp counter, a third of clock_gettime's "
       "cost, turned into CLOCK_MONOTONIC ns at each flush), monotonic (clock_gettime), or "
       "auto: tsc where the CPU says its TSC is invariant (constant_tsc, nonstop_tsc and "
       "tsc_known_freq) or the kernel's clocksource is tsc, else monotonic. The TSC is checked "
       "against CLOCK_MONOTONIC on every CPU at start and at each flush; where it fails, "
       "monotonic (the trace header's dltrace.clock says which was used)"},
      {"DLTRACE_RAW", "1",
       "1 (or a directory): each thread's records go into a raw file in that directory "
       "(1: /dev/shm, else $TMPDIR or /tmp; where none can take it, memory, said in one line) "
       "that outlives a SIGKILL, and there is no flush timer unless DLTRACE_FLUSH_MS is set: "
       "encoding happens when a thread has filled two blocks of events (8,192; DLTRACE_DEFER: "
       "more), at exit and on "
       "SIGTERM/SIGINT/SIGHUP; after a SIGKILL, dltrace recover (the trace directory, a trace "
       "or the raw file) writes the rest of the trace from it. 0: buffers in memory, flushed "
       "every DLTRACE_FLUSH_MS"},
      {"DLTRACE_DEFER", "auto",
       "with a raw file: 1 holds a thread's events in it, unencoded, until it has filled "
       "DLTRACE_DEFER_EVENTS, or the exit or a signal comes, so that no encoding takes a core "
       "from a rank while the program runs; auto: where this host's ranks (OMPI_COMM_WORLD_"
       "LOCAL_SIZE, MPI_LOCALNRANKS, LOCAL_WORLD_SIZE, SLURM_STEP_TASKS_PER_NODE, ...) are "
       "at least the CPUs a rank may run on, so that the flusher has no core of its own; 0: "
       "encode every two blocks (the trace header's dltrace.defer says which was used)"},
      {"DLTRACE_DEFER_EVENTS", "262144",
       "events a thread holds unencoded when encoding is deferred (DLTRACE_DEFER): its blocks "
       "(104 bytes an event; 26 MiB at the default) are allocated and touched when the thread "
       "records its first call, so that the calls write into mapped pages; at most "
       "DLTRACE_BUFFER_EVENTS"},
      {"DLTRACE_RANK", "", "global rank, overriding RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, ..."},
      {"DLTRACE_LOCAL_RANK", "", "local rank, overriding LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, ..."},
  };
  return table;
}

namespace {

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

int64_t IntSetting(const char* name, int64_t def, int64_t min) {
  const char* v = Env(name);
  if (!v) return def;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  if (*end != '\0' || x < min) {
    std::fprintf(stderr, "dltrace: ignoring %s=%s (want an integer >= %lld); using %lld\n", name,
                 v, (long long)min, (long long)def);
    return def;
  }
  return x;
}

bool BoolSetting(const char* name, bool def) {
  const char* v = Env(name);
  if (!v) return def;
  if (!std::strcmp(v, "0") || !std::strcmp(v, "false") || !std::strcmp(v, "no")) return false;
  if (!std::strcmp(v, "1") || !std::strcmp(v, "true") || !std::strcmp(v, "yes")) return true;
  std::fprintf(stderr, "dltrace: ignoring %s=%s (want 0 or 1)\n", name, v);
  return def;
}

}  // namespace

Settings Settings::FromEnvironment() {
  Settings s;
  if (const char* v = Env("DLTRACE_OUTPUT")) s.output = v;
  s.flush_ms = IntSetting("DLTRACE_FLUSH_MS", s.flush_ms, 1);
  s.flush_ms_set = Env("DLTRACE_FLUSH_MS") != nullptr;
  s.sample_ms = IntSetting("DLTRACE_SAMPLE_MS", s.sample_ms, 0);
  s.buffer_events = IntSetting("DLTRACE_BUFFER_EVENTS", s.buffer_events, 1);
  s.enabled = BoolSetting("DLTRACE_ENABLE", s.enabled);
  s.quiet = BoolSetting("DLTRACE_QUIET", s.quiet);
  s.gpu_timing = BoolSetting("DLTRACE_GPU_TIMING", s.gpu_timing);
  if (const char* v = Env("DLTRACE_CLOCK")) {
    if (!std::strcmp(v, "auto") || !std::strcmp(v, "tsc") || !std::strcmp(v, "monotonic"))
      s.clock = v;
    else
      std::fprintf(stderr, "dltrace: ignoring DLTRACE_CLOCK=%s (want auto, tsc or monotonic)\n", v);
  }
  if (const char* v = Env("DLTRACE_RAW")) {
    if (!std::strcmp(v, "1")) {
      s.raw = "1";
    } else if (!std::strcmp(v, "0")) {
      s.raw.clear();
    } else {
      if (v[0] == '/')
        s.raw = v;
      else
        std::fprintf(stderr, "dltrace: ignoring DLTRACE_RAW=%s (want 0, 1 or an absolute "
                     "directory)\n", v);
    }
  }
  if (const char* v = Env("DLTRACE_DEFER")) {
    if (!std::strcmp(v, "auto") || !std::strcmp(v, "1") || !std::strcmp(v, "0"))
      s.defer = v;
    else
      std::fprintf(stderr, "dltrace: ignoring DLTRACE_DEFER=%s (want auto, 1 or 0)\n", v);
  }
  s.defer_events = IntSetting("DLTRACE_DEFER_EVENTS", s.defer_events, 1);
#if !defined(__x86_64__)
  if (s.clock == "tsc") s.clock = "monotonic";
#endif
  return s;
}

std::string Settings::Describe() const {
  std::string out;
  out += "DLTRACE_OUTPUT=" + output + "\n";
  out += "DLTRACE_FLUSH_MS=" + std::to_string(flush_ms) + "\n";
  out += "DLTRACE_SAMPLE_MS=" + std::to_string(sample_ms) + "\n";
  out += "DLTRACE_BUFFER_EVENTS=" + std::to_string(buffer_events) + "\n";
  out += std::string("DLTRACE_ENABLE=") + (enabled ? "1" : "0") + "\n";
  out += std::string("DLTRACE_QUIET=") + (quiet ? "1" : "0") + "\n";
  out += std::string("DLTRACE_GPU_TIMING=") + (gpu_timing ? "1" : "0") + "\n";
  out += "DLTRACE_CLOCK=" + clock + "\n";
  out += "DLTRACE_RAW=" + (raw.empty() ? std::string("0") : raw) + "\n";
  out += "DLTRACE_DEFER=" + defer + "\n";
  out += "DLTRACE_DEFER_EVENTS=" + std::to_string(defer_events) + "\n";
  return out;
}

}  // namespace dltrace::record
