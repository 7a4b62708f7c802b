// SPDX-License-Identifier: GPL-2.0-only
// A small data-parallel recording the C++ tests build on: written by the
// synthesiser into a directory and loaded back.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "dltrace/formats/trace_set.h"
#include "dltrace/models/synth.h"

namespace dltrace_test {

// resnet50 on 4 ranks, RANKS_PER_HOST to a host, 3 iterations of 20 ms
// compute: written to DIR and loaded into SET (a test failure when either fails).
inline void WriteSmallSynthSet(const std::string& dir, int ranks_per_host,
                               dltrace::formats::TraceSet* set) {
  dltrace::models::SynthOptions o;
  o.ranks = 4;
  o.ranks_per_host = ranks_per_host;
  o.iterations = 3;
  o.compute_ms = 20;
  std::string error;
  ASSERT_TRUE(dltrace::models::WriteSynthTraceSet(o, dir, &error)) << error;
  ASSERT_TRUE(dltrace::formats::LoadTraceSet(dir, set, &error)) << error;
}

}  // namespace dltrace_test
