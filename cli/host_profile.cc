// Measuring and storing the host profile (host_profile.h).
#include "host_profile.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <vector>

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

}  // namespace

HostProfile MeasureHostProfile() {
  auto t = Clock::now();
  HostProfile p;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0) p.host = name;
  p.reduce_float_gbps = ReduceRate<float>();
  p.reduce_double_gbps = ReduceRate<double>();
  p.memcpy_gbps = CopyRate();
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
