// SPDX-License-Identifier: GPL-2.0-only
// Growing a job to more ranks: a data-parallel trace set (recorded or
// synthetic) or a hybrid one made by synth, rewritten at a new rank count.
#pragma once

#include <string>

namespace dltrace::models {

struct ScaleOptions {
  int ranks = 0;
  int ranks_per_host = 0;  // 0: as many as the input's fullest host
};

// What ScaleTraceSet did, for the command's summary line.
struct ScaleResult {
  int from_ranks = 0, to_ranks = 0;
  std::string how;  // "data-parallel: ..." or "hybrid: ..."
};

// Reads the trace set at PATH and writes one of options.ranks ranks into DIR
// (which must not exist). Data-parallel jobs (every communicator spans all
// ranks, collectives only) copy rank r % n's calls to rank r, so per-rank
// payloads and compute stay as recorded; hybrid jobs written by synth are
// written again with a data-parallel size of ranks / (tp x pp).
// Communicators (members, ids), sequence numbers and hosts are rebuilt.
// False with one line in *error when the input cannot be scaled, and why.
bool ScaleTraceSet(const std::string& path, const ScaleOptions& options, const std::string& dir,
                   ScaleResult* result, std::string* error);

}  // namespace dltrace::models
