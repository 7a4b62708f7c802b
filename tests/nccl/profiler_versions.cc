// SPDX-License-Identifier: GPL-2.0-only
// Test-only: the NCCL profiler plugin called through its v1, v2 or v3 table
// (argv[1]), as NCCL 2.23, 2.24 and 2.25 call it; fake_nccl.cc calls v4 and v5.
// One communicator (hash 0x1234), rank 0: an AllReduce of 1000 float32 (seq 7,
// Ring, LL128, 3 channels), then a Send of 10 float32 to rank 1.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "nccl_profiler_abi.h"

namespace p = dltrace::record::profiler;

namespace {

constexpr uint64_t kCommHash = 0x1234;

template <class Table, class Descr>
int Run(const char* table_name, Descr coll, Descr p2p) {
  const char* path = std::getenv("NCCL_PROFILER_PLUGIN");
  void* lib = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
  auto* t = lib ? static_cast<Table*>(dlsym(lib, table_name)) : nullptr;
  if (!t) {
    std::fprintf(stderr, "profiler_versions: no %s in %s\n", table_name, path ? path : "(unset)");
    return 1;
  }
  void* context = nullptr;
  int mask = 0;
  t->init(&context, &mask);
  for (Descr* d : {&coll, &p2p}) {
    void* handle = nullptr;
    t->startEvent(context, &handle, d);
    if (handle) t->stopEvent(handle);
  }
  t->finalize(context);
  return (mask & p::kColl) && (mask & p::kP2p) ? 0 : 1;
}

// v2 and v3: function, datatype, algorithm and protocol by name.
template <class Table, class Descr>
int RunNamed(const char* table_name) {
  Descr coll{}, p2p{};
  coll.type = p::kColl;
  coll.coll.commHash = kCommHash;
  coll.coll.seqNumber = 7;
  coll.coll.func = "AllReduce";
  coll.coll.count = 1000;
  coll.coll.datatype = "ncclFloat32";
  coll.coll.nMaxChannels = 3;
  coll.coll.algo = "Ring";
  coll.coll.proto = "LL128";
  p2p.type = p::kP2p;
  p2p.p2p.commHash = kCommHash;
  p2p.p2p.func = "Send";
  p2p.p2p.datatype = "ncclFloat32";
  p2p.p2p.count = 10;
  p2p.p2p.peer = 1;
  return Run<Table>(table_name, coll, p2p);
}

// v1: the same by number (ncclFunc_t, ncclDataType_t, NCCL_ALGO_*, NCCL_PROTO_*).
int RunV1() {
  p::DescrV1 coll{}, p2p{};
  coll.type = p::kColl;
  coll.coll.commHash = kCommHash;
  coll.coll.seqNumber = 7;
  coll.coll.func = 4;  // AllReduce
  coll.coll.count = 1000;
  coll.coll.datatype = 7;  // ncclFloat32
  coll.coll.nMaxChannels = 3;
  coll.coll.algo = 1;   // Ring
  coll.coll.proto = 1;  // LL128
  p2p.type = p::kP2p;
  p2p.p2p.commHash = kCommHash;
  p2p.p2p.func = 6;  // Send
  p2p.p2p.datatype = 7;
  p2p.p2p.count = 10;
  p2p.p2p.peer = 1;
  return Run<p::TableV1>("ncclProfiler_v1", coll, p2p);
}

}  // namespace

int main(int argc, char** argv) {
  const char* v = argc > 1 ? argv[1] : "";
  if (std::strcmp(v, "v1") == 0) return RunV1();
  if (std::strcmp(v, "v2") == 0) return RunNamed<p::TableV2, p::DescrV2>("ncclProfiler_v2");
  if (std::strcmp(v, "v3") == 0) return RunNamed<p::TableV3, p::DescrV3>("ncclProfiler_v3");
  std::fprintf(stderr, "usage: dltrace-nccl-profiler-versions v1|v2|v3\n");
  return 2;
}
