// SPDX-License-Identifier: GPL-2.0-only
// dltrace-recover: writes the rest of a trace from the raw file that a
// process recorded with DLTRACE_RAW left when it was killed (SIGKILL, OOM).
// The same as `dltrace recover` (src/recover_paths.cc).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "recover_paths.h"

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help")) {
    std::fprintf(argc < 2 ? stderr : stdout,
                 "usage: dltrace-recover PATH...\n"
                 "  PATH: a raw file (DLTRACE_RAW), a trace file whose process was killed, or\n"
                 "  a trace directory (each rank file with a raw file left). Appends the events\n"
                 "  the raw file holds beyond the trace, writes its footer, removes the raw file.\n");
    return argc < 2 ? 2 : 0;
  }
  return dltrace::record::RecoverPaths(std::vector<std::string>(argv + 1, argv + argc),
                                       "dltrace-recover");
}
