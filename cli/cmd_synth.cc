// SPDX-License-Identifier: GPL-2.0-only
// dltrace synth: writes a synthetic training trace set that every other
// command accepts: DDP gradient buckets of a known model, or hybrid-parallel
// (tensor, pipeline, data, expert) transformer training as Megatron-LM runs it.
#include <cstdio>

#include "commands.h"
#include "dltrace/models/synth.h"

namespace dltrace::cli {

namespace {

int RunSynth(models::SynthOptions o, const std::string& out, bool ranks_given) {
  // --dp with no --ranks: the world follows from the parallel sizes.
  if (o.dp > 0 && !ranks_given) o.ranks = o.tp * o.pp * o.dp;
  if (std::string e = models::CheckSynthOptions(o); !e.empty()) return UsageError("synth", e);
  std::string error;
  if (!models::WriteSynthTraceSet(o, out, &error)) return Fail(error);
  if (const models::TransformerSpec* t = models::FindTransformer(o.model)) {
    const models::MegatronLayout l = models::LayoutOf(o);
    std::printf("wrote %d rank files to %s: %s (%.1fB parameters), tp %d x pp %d x dp %d%s, "
                "%d micro-batches of %d x %d tokens, %d iterations%s%s\n",
                l.world(), out.c_str(), o.model.c_str(), double(models::TransformerParameters(*t)) / 1e9,
                l.tp, l.pp, l.dp, l.ep > 1 ? (", ep " + std::to_string(l.ep)).c_str() : "",
                o.microbatches ? o.microbatches : o.pp, o.micro_batch_size,
                o.seq_len ? o.seq_len : t->seq_len, o.iterations,
                o.sequence_parallel ? ", sequence parallel" : "",
                o.zero ? (", ZeRO-" + std::to_string(o.zero)).c_str() : "");
    return kExitOk;
  }
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
  CLI::App* cmd = dltrace.add_subcommand(
      "synth", "write a synthetic training trace set: DDP, or hybrid-parallel transformer training");
  std::vector<std::string> models;
  for (const auto& m : models::AllModels()) models.push_back(m.name);
  for (const auto& m : models::AllTransformers()) models.push_back(m.name);
  cmd->add_option("--model", o->model, "model to train: " + CLI::detail::join(models, ", "));
  CLI::Option* ranks = cmd->add_option("--ranks", o->ranks, "ranks (transformers: tp x pp x dp)")->check(Positive());
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
  cmd->add_option("--local-gbps", o->local_gbps, "same-host link rate (NVLink-like) for recorded times")
      ->check(Positive());
  // Hybrid parallelism: the transformer models only.
  const char* hybrid = "Hybrid parallelism (transformer models)";
  cmd->add_option("--tp", o->tp, "tensor-parallel size (Megatron layout: innermost)")->check(Positive())->group(hybrid);
  cmd->add_option("--pp", o->pp, "pipeline stages (1F1B schedule)")->check(Positive())->group(hybrid);
  cmd->add_option("--dp", o->dp, "data-parallel size (default: ranks / (tp x pp))")
      ->check(Positive())->default_str("")->group(hybrid);
  cmd->add_option("--ep", o->ep, "expert-parallel size (MoE), within the data-parallel dimension")
      ->check(Positive())->group(hybrid);
  cmd->add_option("--microbatches", o->microbatches, "micro-batches per iteration (default: pp)")
      ->check(Positive())->default_str("")->group(hybrid);
  cmd->add_option("--micro-batch-size", o->micro_batch_size, "sequences per micro-batch")
      ->check(Positive())->group(hybrid);
  cmd->add_option("--seq-len", o->seq_len, "tokens per sequence (default: the model's)")
      ->check(Positive())->default_str("")->group(hybrid);
  cmd->add_flag("--sequence-parallel", o->sequence_parallel,
                "Megatron sequence parallelism: all-gather/reduce-scatter instead of all-reduce")
      ->group(hybrid);
  cmd->add_option("--zero", o->zero, "ZeRO stage: 0 all-reduce, 1/2 reduce-scatter + all-gather, 3 per-layer (FSDP)")
      ->check(CLI::Range(0, 3))->group(hybrid);
  cmd->add_option("--gpu-tflops", o->gpu_tflops, "GPU peak TFLOP/s for compute times")->check(Positive())->group(hybrid);
  cmd->add_option("--mfu", o->mfu, "fraction of the peak reached: t = FLOPs / tp / (tflops * mfu)")
      ->check(CLI::Range(0.0, 1.0))->group(hybrid);
  cmd->add_option("-o,--output", *out, "output directory; must not exist")->type_name("DIR")->required();
  return {cmd, [o, out, ranks](const Args&) { return RunSynth(*o, *out, ranks->count() > 0); }};
}

}  // namespace dltrace::cli
