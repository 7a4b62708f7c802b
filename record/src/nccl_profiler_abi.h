// SPDX-License-Identifier: GPL-2.0-only
// NCCL's profiler plugin interface as dltrace uses it, declared here (no NCCL
// header needed): the function tables NCCL looks up by name in the library
// NCCL_PROFILER_PLUGIN names (ncclProfiler_v5 first, down to v1), and the
// parts of the event descriptors the plugin reads. Layouts follow NCCL's
// ext-profiler/example/nccl/profiler_v1.h .. profiler_v5.h (NCCL 2.23 to
// 2.28); union members the plugin never reads are left out (NCCL allocates
// the descriptor, the plugin only reads it).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace dltrace::record::profiler {

using Result = int;  // ncclResult_t; 0 = ncclSuccess
using DebugLogger = void (*)(int level, unsigned long flags, const char* file, int line,
                             const char* fmt, ...);

// Event types (the activation mask's bits).
enum EventType : uint64_t {
  kGroup = 1u << 0,
  kColl = 1u << 1,
  kP2p = 1u << 2,
};

// ---- v1 (NCCL 2.23): function, datatype, algorithm and protocol as numbers.
struct CollV1 {
  const char* name;
  uint64_t commHash;
  uint64_t seqNumber;
  uint8_t func;  // ncclFunc_t: Broadcast, Reduce, AllGather, ReduceScatter, AllReduce, ...
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  uint8_t datatype;  // ncclDataType_t
  uint32_t op;
  size_t trafficBytes;
  uint8_t nMaxChannels;
  uint8_t nWarps;
  uint8_t algo;   // NCCL_ALGO_*
  uint8_t proto;  // NCCL_PROTO_*
  int isCollnet;
  int isNvls;
};
struct P2pV1 {
  const char* name;
  uint64_t commHash;
  uint8_t func;
  void* buff;
  uint8_t datatype;
  size_t count;
  int peer;
};
struct DescrV1 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    CollV1 coll;
    P2pV1 p2p;
  };
};

// ---- v2 (2.24) and v3 (2.25): names as strings; v3 drops trafficBytes.
struct CollV2 {
  const char* name;
  uint64_t commHash;
  uint64_t seqNumber;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;
  size_t trafficBytes;
  uint8_t nMaxChannels;
  uint8_t nWarps;
  const char* algo;
  const char* proto;
};
struct CollV3 {
  const char* name;
  uint64_t commHash;
  uint64_t seqNumber;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;
  uint8_t nMaxChannels;
  uint8_t nWarps;
  const char* algo;
  const char* proto;
};
struct P2pV2 {
  const char* name;
  uint64_t commHash;
  const char* func;
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
};
template <typename Coll>
struct DescrV2Like {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    Coll coll;
    P2pV2 p2p;
  };
};
using DescrV2 = DescrV2Like<CollV2>;
using DescrV3 = DescrV2Like<CollV3>;

// ---- v4 (2.26) and v5 (2.28): the communicator comes with init, not the event.
struct CollV4 {
  uint64_t seqNumber;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;
  uint8_t nChannels;
  uint8_t nWarps;
  const char* algo;
  const char* proto;
};
struct P2pV4 {
  const char* func;
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
  uint8_t nChannels;
};
struct DescrV4 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    CollV4 coll;
    P2pV4 p2p;
  };
};
struct DescrV5 {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    CollV4 coll;  // v5 appends parentGroup, which the plugin does not read
    P2pV4 p2p;
  };
};

// The function tables, one per version (eState and eStateArgs are not read).
template <typename Descr, typename InitFn>
struct Table {
  const char* name;
  InitFn init;
  Result (*startEvent)(void* context, void** eHandle, Descr* eDescr);
  Result (*stopEvent)(void* eHandle);
  Result (*recordEventState)(void* eHandle, int eState, void* eStateArgs);
  Result (*finalize)(void* context);
};
using InitV1 = Result (*)(void** context, int* eActivationMask);
using InitV4 = Result (*)(void** context, int* eActivationMask, const char* commName,
                          uint64_t commHash, int nNodes, int nranks, int rank, DebugLogger logfn);
using InitV5 = Result (*)(void** context, uint64_t commId, int* eActivationMask,
                          const char* commName, int nNodes, int nranks, int rank,
                          DebugLogger logfn);
using TableV1 = Table<DescrV1, InitV1>;
using TableV2 = Table<DescrV2, InitV1>;
using TableV3 = Table<DescrV3, InitV1>;
using TableV4 = Table<DescrV4, InitV4>;
using TableV5 = Table<DescrV5, InitV5>;

}  // namespace dltrace::record::profiler
