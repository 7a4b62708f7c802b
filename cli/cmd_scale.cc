// SPDX-License-Identifier: GPL-2.0-only
// dltrace scale TRACE --ranks N -o DIR: a trace set grown to N ranks along
// its data-parallel dimension, which every other command accepts.
#include <cstdio>

#include "commands.h"
#include "dltrace/models/scale.h"

namespace dltrace::cli {

namespace {

struct ScaleCommandOptions {
  std::string path, out;
  models::ScaleOptions scale;
};

int RunScale(const ScaleCommandOptions& o) {
  models::ScaleResult result;
  std::string error;
  if (!models::ScaleTraceSet(o.path, o.scale, o.out, &result, &error)) return Fail(error);
  std::printf("wrote %d rank files to %s from %d ranks of %s (%s)\n", result.to_ranks,
              o.out.c_str(), result.from_ranks, o.path.c_str(), result.how.c_str());
  return kExitOk;
}

}  // namespace

Command AddScaleCommand(CLI::App& dltrace) {
  auto o = std::make_shared<ScaleCommandOptions>();
  CLI::App* cmd = dltrace.add_subcommand(
      "scale", "grow a data-parallel or synth-made hybrid trace set to more (or fewer) ranks");
  AddTraceArgument(cmd, &o->path, "TRACE");
  cmd->add_option("--ranks", o->scale.ranks, "ranks of the new trace set")->check(Positive())->required();
  cmd->add_option("--ranks-per-host", o->scale.ranks_per_host,
                  "ranks sharing a host (default: as in TRACE)")
      ->check(Positive())
      ->default_str("");
  cmd->add_option("-o,--output", o->out, "output directory; must not exist")->type_name("DIR")->required();
  cmd->footer(
      "Data-parallel jobs (collectives on communicators spanning every rank) repeat their "
      "recorded ranks' calls; hybrid jobs written by `dltrace synth` are written again with a "
      "larger data-parallel size. Point-to-point patterns cannot be scaled.");
  return {cmd, [o](const Args&) { return RunScale(*o); }};
}

}  // namespace dltrace::cli
