// SPDX-License-Identifier: GPL-2.0-only
// dltrace calibrate [-o FILE]: measures this machine's host profile (reduction
// and copy rates) and prints it or writes it, for the lowering's --host-profile.
#include <cstdio>

#include "commands.h"
#include "host_profile.h"

namespace dltrace::cli {

Command AddCalibrateCommand(CLI::App& dltrace) {
  auto out = std::make_shared<std::string>();
  CLI::App* cmd = dltrace.add_subcommand(
      "calibrate", "measure the reduction and copy rates of the host it runs on (a host profile for --host-profile)");
  auto no_mpi = std::make_shared<bool>(false);
  cmd->add_option("-o,--output", *out, "write the profile (JSON) to FILE instead of stdout");
  cmd->add_flag("--no-mpi", *no_mpi, "skip the MPI per-message cost (a ping-pong under mpirun)");
  return {cmd, [out, no_mpi](const Args&) {
            std::string note;
            HostProfile p = MeasureHostProfile(!*no_mpi, &note);
            if (!note.empty()) Warn("MPI per-message cost not measured: " + note);
            if (out->empty()) {
              std::fputs(HostProfileJson(p).c_str(), stdout);
              return kExitOk;
            }
            std::string error;
            if (!WriteHostProfile(p, *out, &error)) return Fail(error);
            std::printf("host profile of %s: float sum %.2f GB/s, double sum %.2f GB/s, copy %.2f GB/s, "
                        "MPI message %.1f us -> %s\n",
                        p.host.c_str(), p.reduce_float_gbps, p.reduce_double_gbps, p.memcpy_gbps,
                        p.mpi_message_ns / 1000, out->c_str());
            return kExitOk;
          }};
}

}  // namespace dltrace::cli
