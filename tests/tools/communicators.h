// SPDX-License-Identifier: GPL-2.0-only
// Communicators the C++ tests, benchmarks and sample-trace tool put in their
// traces: MPI_COMM_WORLD as the MPI recorder registers it.
#pragma once

#include <cstdint>

#include "dltrace/formats/trace.h"

namespace dltrace_test {

// MPI_COMM_WORLD (id 0) of SIZE ranks as rank RANK sees it; members 0..SIZE-1.
inline dltrace::formats::Communicator MpiWorld(int32_t size, int32_t rank) {
  dltrace::formats::Communicator world;
  world.id = 0;
  world.api = dltrace::formats::Api::Mpi;
  world.name = "MPI_COMM_WORLD";
  world.size = size;
  world.rank = rank;
  for (int32_t m = 0; m < size; ++m) world.members.push_back(m);
  return world;
}

}  // namespace dltrace_test
