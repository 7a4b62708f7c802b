// SPDX-License-Identifier: GPL-2.0-only
// dltrace recover PATH...: the rest of a killed run's traces from the raw
// files its processes left (DLTRACE_RAW); the same code as dltrace-recover.
#include "commands.h"
#include "recover_paths.h"

namespace dltrace::cli {

Command AddRecoverCommand(CLI::App& dltrace) {
  auto paths = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = dltrace.add_subcommand(
      "recover", "finish the traces of killed processes from the raw files they left");
  cmd->add_option("PATH", *paths,
                  "a trace directory (each rank whose raw file is left), a trace file, or a "
                  "raw file")
      ->required()
      ->default_str("");
  return {cmd, [paths](const Args&) {
            return record::RecoverPaths(*paths, "dltrace recover") == 0 ? kExitOk : kExitError;
          }};
}

}  // namespace dltrace::cli
