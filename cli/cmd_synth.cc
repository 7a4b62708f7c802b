// dltrace synth: writes a synthetic data-parallel training trace set (DDP
// gradient buckets of a known model) that every other command accepts.
#include <cstdio>
#include <cstdlib>

#include "commands.h"
#include "dltrace/models/synth.h"

namespace dltrace::cli {

int RunSynth(const Args& args) {
  const Command& self = FindCommand("synth");
  models::SynthOptions o;
  std::string out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](double* v) {
      return i + 1 < args.size() && ParseNumber(args[++i], v);
    };
    double v = 0;
    if (a == "-o" || a == "--output") {
      if (i + 1 >= args.size()) return UsageError(self, a + " needs a directory");
      out = args[++i];
    } else if (a == "--model") {
      if (i + 1 >= args.size()) return UsageError(self, "--model needs a name");
      o.model = args[++i];
    } else if (a == "--dtype") {
      if (i + 1 >= args.size()) return UsageError(self, "--dtype needs fp32 or bf16");
      o.dtype = args[++i];
    } else if (a == "--ranks" && value(&v)) {
      o.ranks = int(v);
    } else if (a == "--ranks-per-host" && value(&v)) {
      o.ranks_per_host = int(v);
    } else if (a == "--iterations" && value(&v)) {
      o.iterations = int(v);
    } else if (a == "--compute-ms" && value(&v)) {
      o.compute_ms = v;
    } else if (a == "--bucket-mb" && value(&v)) {
      o.bucket_bytes = uint64_t(v * (1 << 20));
    } else if (a == "--link-gbps" && value(&v)) {
      o.link_gbps = v;
    } else {
      return UsageError(self, "bad option or value: " + a);
    }
  }
  if (out.empty()) return UsageError(self, "missing -o DIR");
  if (std::string e = models::CheckSynthOptions(o); !e.empty()) return UsageError(self, e);
  std::string error;
  if (!models::WriteSynthTraceSet(o, out, &error)) return Fail(error);
  const uint64_t elem = o.dtype == "bf16" ? 2 : 4;
  auto buckets = models::GradientBuckets(models::ModelParameters(o.model), elem, o.bucket_bytes);
  uint64_t total = 0;
  for (uint64_t b : buckets) total += b;
  std::printf("wrote %d rank files to %s: %s, %d iterations, %zu gradient buckets of up to "
              "%.1f MiB (%llu bytes per iteration, %s)\n",
              o.ranks, out.c_str(), o.model.c_str(), o.iterations, buckets.size(),
              double(o.bucket_bytes) / (1 << 20), static_cast<unsigned long long>(total),
              o.dtype.c_str());
  return kExitOk;
}

}  // namespace dltrace::cli
