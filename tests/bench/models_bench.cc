// SPDX-License-Identifier: GPL-2.0-only
// dltrace-models-bench: how fast a large trace set is written by synth and
// lowered to a schedule (steps per second), and how much memory it takes
// (peak RSS), printed. --tp/--pp/--dp make it a hybrid transformer job (the
// GPT-3 175B TP 8 PP 8 DP 16 run of the README).
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "dltrace/formats/trace_set.h"
#include "dltrace/models/estimate.h"
#include "dltrace/models/lower.h"
#include "dltrace/models/synth.h"

using namespace dltrace;

namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

double PeakRssMiB() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;  // Linux reports KiB
}

}  // namespace

int main(int argc, char** argv) {
  models::SynthOptions so;
  so.model = "gpt2-xl";
  so.ranks = 64;
  so.iterations = 10;
  std::string algos = "ring";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--model") so.model = argv[i + 1];
    else if (a == "--ranks") so.ranks = std::atoi(argv[i + 1]);
    else if (a == "--iterations") so.iterations = std::atoi(argv[i + 1]);
    else if (a == "--algo") algos = argv[i + 1];
    else if (a == "--tp") so.tp = std::atoi(argv[i + 1]);
    else if (a == "--pp") so.pp = std::atoi(argv[i + 1]);
    else if (a == "--dp") so.dp = std::atoi(argv[i + 1]);
    else if (a == "--microbatches") so.microbatches = std::atoi(argv[i + 1]);
    else if (a == "--ranks-per-host") so.ranks_per_host = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: dltrace-models-bench [--model M] [--ranks N] [--iterations I] "
                           "[--algo A[,B...]] [--tp T --pp P --dp D --microbatches M --ranks-per-host H]\n");
      return 2;
    }
  }
  if (so.dp > 0) so.ranks = so.tp * so.pp * so.dp;
  const auto bench_start = std::chrono::steady_clock::now();
  char tmpl[] = "/tmp/dltrace-models-bench-XXXXXX";
  if (!::mkdtemp(tmpl)) {
    std::perror("dltrace-models-bench: mkdtemp");
    return 1;
  }
  const std::string dir = std::string(tmpl) + "/set";
  std::string err;
  int status = 0;
  auto t = std::chrono::steady_clock::now();
  if (!models::WriteSynthTraceSet(so, dir, &err)) {
    std::fprintf(stderr, "dltrace-models-bench: %s\n", err.c_str());
    return 1;
  }
  uint64_t trace_bytes = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir)) trace_bytes += f.file_size();
  std::printf("synth %s, %d ranks (tp %d, pp %d), %d iterations: %.2f s, %.1f MiB of traces; "
              "peak RSS %.0f MiB\n",
              so.model.c_str(), so.ranks, so.tp, so.pp, so.iterations, Seconds(t),
              double(trace_bytes) / (1 << 20), PeakRssMiB());
  formats::TraceSet set;
  t = std::chrono::steady_clock::now();
  if (!formats::LoadTraceSet(dir, &set, &err)) {
    std::fprintf(stderr, "dltrace-models-bench: %s\n", err.c_str());
    return 1;
  }
  models::MergedTrace merged = models::Merge(set);
  size_t events = 0;
  for (const auto& rt : set.ranks) events += rt.ops.size();
  std::printf("load + merge: %.2f s, %zu events (%.1f bytes each), %zu collective calls, %zu "
              "transfers, %zu problems\n",
              Seconds(t), events, events ? double(trace_bytes) / double(events) : 0.0,
              merged.calls.size(), merged.transfers.size(), merged.problems.size());
  if (!merged.problems.empty()) status = 1;
  size_t start = 0;
  while (start <= algos.size()) {
    size_t comma = algos.find(',', start);
    std::string algo = algos.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? algos.size() + 1 : comma + 1;
    models::LowerOptions lo;
    lo.algorithm = algo;
    t = std::chrono::steady_clock::now();
    models::Schedule s = models::LowerTrace(merged, lo, nullptr);
    double lower_s = Seconds(t);
    const uint64_t steps = s.step_count();
    t = std::chrono::steady_clock::now();
    models::Estimate est = models::EstimateSchedule(s, models::Link{100, 5000});
    double est_s = Seconds(t);
    std::printf("lower %-8s %12llu steps in %6.2f s = %6.2f M steps/s; estimate %.2f s "
                "(%.1f ms/iteration at 100 Gbit/s); peak RSS %.0f MiB\n",
                algo.c_str(), static_cast<unsigned long long>(steps), lower_s,
                double(steps) / lower_s / 1e6, est_s,
                est.iterations.empty() ? 0.0 : est.iterations.back().duration_ns() / 1e6,
                PeakRssMiB());
    if (!est.complete) status = 1;
  }
  std::printf("total: %.2f s wall, peak RSS %.0f MiB\n", Seconds(bench_start), PeakRssMiB());
  std::filesystem::remove_all(tmpl);
  return status;
}
