// dltrace synth: writes a synthetic data-parallel training trace set (DDP
// gradient buckets of a known model) that every other command accepts.
#include <cstdio>

#include "commands.h"
#include "dltrace/models/synth.h"

namespace dltrace::cli {

namespace {

int RunSynth(const models::SynthOptions& o, const std::string& out) {
  if (std::string e = models::CheckSynthOptions(o); !e.empty()) return UsageError("synth", e);
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

}  // namespace

Command AddSynthCommand(CLI::App& dltrace) {
  auto o = std::make_shared<models::SynthOptions>();
  auto out = std::make_shared<std::string>();
  CLI::App* cmd = dltrace.add_subcommand("synth", "write a synthetic data-parallel training trace set");
  std::vector<std::string> models;
  for (const auto& m : models::AllModels()) models.push_back(m.name);
  cmd->add_option("--model", o->model, "model whose gradients are reduced: " + CLI::detail::join(models, ", "));
  cmd->add_option("--ranks", o->ranks, "data-parallel ranks")->check(Positive());
  cmd->add_option("--ranks-per-host", o->ranks_per_host, "ranks sharing a host")->check(Positive());
  cmd->add_option("--iterations", o->iterations, "training iterations")->check(Positive());
  cmd->add_option("--compute-ms", o->compute_ms, "forward + backward time per iteration (0: per model)")
      ->check(NonNegative());
  cmd->add_option("--dtype", o->dtype, "gradient type")->check(CLI::IsMember({"fp32", "bf16"}));
  cmd->add_option_function<double>(
         "--bucket-mb", [o](double mb) { o->bucket_bytes = uint64_t(mb * (1 << 20)); },
         "DDP gradient bucket cap in MiB")
      ->default_str(CLI::detail::to_string(double(o->bucket_bytes) / (1 << 20)))
      ->check(Positive());
  cmd->add_option("--link-gbps", o->link_gbps, "link rate that sets each all-reduce's recorded time")
      ->check(Positive());
  cmd->add_option("-o,--output", *out, "output directory; must not exist")->type_name("DIR")->required();
  return {cmd, [o, out](const Args&) { return RunSynth(*o, *out); }};
}

}  // namespace dltrace::cli
