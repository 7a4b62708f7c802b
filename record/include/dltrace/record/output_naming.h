// SPDX-License-Identifier: GPL-2.0-only
// How a recorded run's output is named: the %-codes of DLTRACE_OUTPUT and
// `dltrace record -o`, shared by the recorder (each rank's file) and
// `dltrace record` (the directory it makes, alone or as one Slurm task).
#pragma once

#include <cstdlib>
#include <string>

#include "dltrace/formats/rank_env.h"

namespace dltrace::record {

// The launcher's job step, as Slurm numbers it within a job (sacct's JOBID.STEP).
inline constexpr const char* kStepIdVariable = "SLURM_STEP_ID";

// The first of `names` set (and not empty) in the environment, else "".
template <typename Names>
std::string FirstSetVariable(const Names& names) {
  for (const char* n : names)
    if (const char* v = std::getenv(n); v && *v) return v;
  return "";
}

inline std::string JobIdFromEnvironment() { return FirstSetVariable(formats::kJobIdVariables); }
inline std::string StepIdFromEnvironment() {
  const char* names[] = {kStepIdVariable};
  return FirstSetVariable(names);
}

struct OutputNameValues {
  int rank = -1;  // < 0: unknown
  std::string host;
  int pid = 0;
  std::string job;   // empty: not under a job launcher
  std::string step;  // empty: not in a Slurm job step
};

// %r rank (p<pid> when unknown), %h host, %p pid, %j job id ("nojob"),
// %s step id ("nostep"), %% a '%'; any other %x stays as it is.
inline std::string ExpandOutputTemplate(const std::string& tmpl, const OutputNameValues& v) {
  std::string out;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] != '%' || i + 1 == tmpl.size()) {
      out += tmpl[i];
      continue;
    }
    switch (tmpl[++i]) {
      case 'r': out += v.rank >= 0 ? std::to_string(v.rank) : "p" + std::to_string(v.pid); break;
      case 'h': out += v.host; break;
      case 'p': out += std::to_string(v.pid); break;
      case 'j': out += v.job.empty() ? "nojob" : v.job; break;
      case 's': out += v.step.empty() ? "nostep" : v.step; break;
      case '%': out += '%'; break;
      default: out += '%'; out += tmpl[i];
    }
  }
  return out;
}

}  // namespace dltrace::record
