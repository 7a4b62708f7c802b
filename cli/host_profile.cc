// SPDX-License-Identifier: GPL-2.0-only
// Measuring and storing the host profile (host_profile.h).
#include "host_profile.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <fstream>
#include <sstream>
#include <vector>

#include "commands.h"
#include "dltrace/runs/atomic_file.h"
#include "dltrace/runs/json.h"

namespace dltrace::cli {

namespace {

using Clock = std::chrono::steady_clock;

// Arrays of 8 MiB: beyond the caches, as the megabytes of gradients an
// all-reduce adds up are.
constexpr size_t kBytes = 8u << 20;
constexpr int kRepeats = 5;

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

// The best of kRepeats passes of FN over kBytes, in GB/s (bytes per ns).
template <typename Fn>
double BestRate(Fn fn) {
  double best = 0;
  for (int r = 0; r < kRepeats; ++r) {
    auto t = Clock::now();
    fn();
    best = std::max(best, double(kBytes) / (Seconds(t) * 1e9));
  }
  return best;
}

// Received bytes added into a local array per ns, as MPI_SUM does.
template <typename T>
double ReduceRate() {
  std::vector<T> mine(kBytes / sizeof(T), T(1)), received(kBytes / sizeof(T), T(2));
  volatile T sink = 0;
  double rate = BestRate([&] {
    T* a = mine.data();
    const T* b = received.data();
    for (size_t i = 0, n = mine.size(); i < n; ++i) a[i] += b[i];
    sink = sink + a[0];
  });
  return rate;
}

double CopyRate() {
  std::vector<char> from(kBytes, 1), to(kBytes, 0);
  volatile char sink = 0;
  double rate = BestRate([&] {
    std::copy(from.begin(), from.end(), to.begin());
    sink = sink + to[kBytes / 2];
  });
  return rate;
}

// Half the round trip of an 8-byte MPI message between two ranks on this
// host over Open MPI's TCP transport (what ranks on different hosts use);
// 0 with *NOTE saying why when it cannot be measured.
double MpiMessageNs(std::string* note) {
  std::string why;
  const std::string prog =
      FindBesideProgram("DLTRACE_MPI_PINGPONG", {"/../record/dltrace-mpi-pingpong", "/dltrace-mpi-pingpong"});
  double ns = 0;
  if (prog.empty()) {
    why = "dltrace-mpi-pingpong not found (built with MPI only)";
  } else {
    std::string cmd = "mpirun " + std::string(::geteuid() == 0 ? "--allow-run-as-root " : "") +
                      "--oversubscribe --bind-to none --mca btl tcp,self -np 2 '" + prog + "' 2>&1";
    std::string output;
    if (FILE* f = ::popen(cmd.c_str(), "r")) {
      char line[512];
      while (std::fgets(line, sizeof line, f)) output += line;
      int status = ::pclose(f);
      size_t at = output.find("mpi_message_ns ");
      if (status == 0 && at != std::string::npos) ns = std::strtod(output.c_str() + at + 15, nullptr);
      else why = "mpirun failed: " + output.substr(0, output.find('\n'));
    } else {
      why = "cannot run mpirun";
    }
  }
  if (note) *note = why;
  return ns;
}

}  // namespace

HostProfile MeasureHostProfile(bool mpi, std::string* note) {
  auto t = Clock::now();
  HostProfile p;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0) p.host = name;
  p.reduce_float_gbps = ReduceRate<float>();
  p.reduce_double_gbps = ReduceRate<double>();
  p.memcpy_gbps = CopyRate();
  if (mpi) p.mpi_message_ns = MpiMessageNs(note);
  p.measure_s = Seconds(t);
  return p;
}

std::string HostProfileJson(const HostProfile& p) {
  runs::Json j = {{"format", kHostProfileFormat},
                  {"version", kHostProfileVersion},
                  {"host", p.host},
                  {"reduce_float_gbps", p.reduce_float_gbps},
                  {"reduce_double_gbps", p.reduce_double_gbps},
                  {"memcpy_gbps", p.memcpy_gbps},
                  {"mpi_message_ns", p.mpi_message_ns},
                  {"measure_s", p.measure_s}};
  return runs::JsonText(j) + "\n";
}

bool ReadHostProfile(const std::string& path, HostProfile* p, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = path + ": cannot read the host profile";
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  runs::Json j = runs::Json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != kHostProfileFormat) {
    *error = path + ": not a dltrace host profile (dltrace calibrate writes one)";
    return false;
  }
  if (j.value("version", 0) > kHostProfileVersion) {
    *error = path + ": host profile version " + std::to_string(j.value("version", 0)) + " is newer than this dltrace's " +
             std::to_string(kHostProfileVersion);
    return false;
  }
  p->host = j.value("host", "");
  p->reduce_float_gbps = j.value("reduce_float_gbps", 0.0);
  p->reduce_double_gbps = j.value("reduce_double_gbps", 0.0);
  p->memcpy_gbps = j.value("memcpy_gbps", 0.0);
  p->mpi_message_ns = j.value("mpi_message_ns", 0.0);
  p->measure_s = j.value("measure_s", 0.0);
  if (p->reduce_float_gbps < 0 || p->mpi_message_ns < 0) {
    *error = path + ": negative rate in the host profile";
    return false;
  }
  return true;
}

bool WriteHostProfile(const HostProfile& p, const std::string& path, std::string* error) {
  return runs::WriteFileAtomically(path, HostProfileJson(p), error);
}

void ApplyHostProfile(const HostProfile& p, models::LowerOptions* o) {
  o->reduce_gbps = p.reduce_float_gbps;
  o->per_message_ns = p.mpi_message_ns;
}

}  // namespace dltrace::cli
