// SPDX-License-Identifier: GPL-2.0-only
// Test double of libnccl.so.2: the public NCCL API on host memory across
// processes, enough for test programs to call every function the recorder
// wraps and check that data really moved. One POSIX shared-memory segment per
// communicator holds a barrier, a data slot per rank and a mailbox per
// (sender, receiver) pair. Each operation also keeps its stream busy for
// FAKE_NCCL_OP_NS of simulated GPU time (fake_cuda.cc). With
// NCCL_PROFILER_PLUGIN set it loads that profiler plugin and makes the calls
// NCCL 2.28 makes (init per communicator, start/stop events per operation
// with an algorithm, protocol and channel count, finalize). Test-only.
#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "nccl.h"
#include "nccl_profiler_abi.h"

namespace {

constexpr int kMaxRanks = 8;
constexpr size_t kSlotBytes = 256 * 1024;  // largest collective buffer
constexpr int kMailDepth = 8;
constexpr size_t kMailBytes = 64 * 1024;   // largest point-to-point message

struct Mailbox {
  std::atomic<uint32_t> head, tail;
  uint64_t len[kMailDepth];
  char data[kMailDepth][kMailBytes];
};

struct Shared {
  std::atomic<uint32_t> arrived;
  std::atomic<uint32_t> generation;
  int color[kMaxRanks];  // ncclCommSplit's exchange
  int key[kMaxRanks];
  char slots[kMaxRanks][kSlotBytes];
  Mailbox mail[kMaxRanks][kMaxRanks];  // [from][to]
};

}  // namespace

struct ncclComm {
  Shared* shared;
  std::string name;  // the shared-memory segment
  int rank, nranks, device;
  int splits = 0, shrinks = 0;
  void* profiler = nullptr;  // the plugin's context for this communicator
  uint64_t seq = 0;          // collectives so far (the profiler's seqNumber)
};

namespace {

int64_t OpNs() {
  static const int64_t ns = [] {
    const char* v = getenv("FAKE_NCCL_OP_NS");
    return v ? atoll(v) : 0;
  }();
  return ns;
}

int ProcessDevice() {
  const char* v = getenv("FAKE_CUDA_DEVICE");
  return v ? atoi(v) : 0;
}

void Pause(int spins) {
  if (spins < 100) {
    sched_yield();
  } else {
    timespec ts{0, 50000};
    nanosleep(&ts, nullptr);
  }
}

void Barrier(ncclComm* c) {
  Shared* s = c->shared;
  uint32_t gen = s->generation.load(std::memory_order_acquire);
  if (s->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == uint32_t(c->nranks)) {
    s->arrived.store(0, std::memory_order_relaxed);
    s->generation.fetch_add(1, std::memory_order_release);
    return;
  }
  for (int spins = 0; s->generation.load(std::memory_order_acquire) == gen; ++spins) Pause(spins);
}

// ---- the profiler plugin, as NCCL 2.28 calls it ------------------------------------
// The plugin's own declarations of the interface (record/src/nccl_profiler_abi.h),
// held here to the offsets of NCCL's ext-profiler/example headers
// (profiler_v4.h, profiler_v5.h) on x86-64, written out as numbers so that a
// layout mistake in those declarations fails this build.
namespace prof = dltrace::record::profiler;
static_assert(offsetof(prof::CollV4, seqNumber) == 0 && offsetof(prof::CollV4, func) == 8 &&
                  offsetof(prof::CollV4, sendBuff) == 16 && offsetof(prof::CollV4, recvBuff) == 24 &&
                  offsetof(prof::CollV4, count) == 32 && offsetof(prof::CollV4, root) == 40 &&
                  offsetof(prof::CollV4, datatype) == 48 && offsetof(prof::CollV4, nChannels) == 56 &&
                  offsetof(prof::CollV4, nWarps) == 57 && offsetof(prof::CollV4, algo) == 64 &&
                  offsetof(prof::CollV4, proto) == 72,
              "ncclProfilerEventDescr_v4/v5 coll");
static_assert(offsetof(prof::P2pV4, func) == 0 && offsetof(prof::P2pV4, buff) == 8 &&
                  offsetof(prof::P2pV4, datatype) == 16 && offsetof(prof::P2pV4, count) == 24 &&
                  offsetof(prof::P2pV4, peer) == 32 && offsetof(prof::P2pV4, nChannels) == 36,
              "ncclProfilerEventDescr_v4/v5 p2p");
// v4's type is a uint8_t at v5's uint64_t offset (little-endian: its low byte),
// so one v5 descriptor serves both tables.
static_assert(offsetof(prof::DescrV5, type) == 0 && offsetof(prof::DescrV5, parentObj) == 8 &&
                  offsetof(prof::DescrV5, rank) == 16 && offsetof(prof::DescrV5, coll) == 24 &&
                  offsetof(prof::DescrV4, coll) == 24,
              "ncclProfilerEventDescr_v4/v5 header");
// The v4 table differs from v5 only in init's parameters (ProfilerInit).
using ProfTable = prof::TableV5;

int ProfilerApi() {
  const char* v = getenv("FAKE_NCCL_PROFILER_API");
  return v ? atoi(v) : 5;
}

// The plugin NCCL_PROFILER_PLUGIN names, once per process; FAKE_NCCL_PROFILER_API
// = 4 asks for the v4 table (NCCL 2.26), otherwise v5 (2.28).
const ProfTable* Profiler() {
  static const ProfTable* table = []() -> const ProfTable* {
    const char* path = getenv("NCCL_PROFILER_PLUGIN");
    if (!path || !*path) return nullptr;
    void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      fprintf(stderr, "fake nccl: cannot load profiler plugin %s: %s\n", path, dlerror());
      return nullptr;
    }
    return static_cast<const ProfTable*>(dlsym(lib, ProfilerApi() == 4 ? "ncclProfiler_v4" : "ncclProfiler_v5"));
  }();
  return table;
}

// NCCL's commHash: its getHash (DJB2a, chars sign-extended) over the 128-byte unique id.
uint64_t CommHash(const std::string& name) {
  char id[NCCL_UNIQUE_ID_BYTES] = {};
  memcpy(id, name.data(), name.size() < sizeof(id) ? name.size() : sizeof(id));
  uint64_t h = 5381;
  for (char ch : id) h = ((h << 5) + h) ^ uint64_t(int64_t(ch));
  return h;
}

void ProfilerInit(ncclComm* c) {
  const ProfTable* p = Profiler();
  if (!p) return;
  int mask = 0;
  const char* per_node = getenv("LOCAL_WORLD_SIZE");
  int ppn = per_node ? atoi(per_node) : c->nranks;
  int nodes = ppn > 0 ? (c->nranks + ppn - 1) / ppn : 1;
  if (ProfilerApi() == 4)
    reinterpret_cast<const prof::TableV4*>(p)->init(&c->profiler, &mask, c->name.c_str(), CommHash(c->name),
                                                    nodes, c->nranks, c->rank, nullptr);
  else
    p->init(&c->profiler, CommHash(c->name), &mask, c->name.c_str(), nodes, c->nranks, c->rank, nullptr);
}

// What this double says NCCL chose: NCCL_ALGO / NCCL_PROTO when set (a single
// name), else Tree/LL for all-reduces up to 4 KiB, Ring/LL for other
// collectives up to 4 KiB, Ring/Simple above; 1 channel up to 4 KiB, else 2.
// tests/record/test_nccl_profiler.py expects exactly this.
struct FakeChoice {
  const char* algo;
  const char* proto;
  uint8_t channels;
};
FakeChoice Choose(const char* func, size_t bytes) {
  const bool small = bytes <= 4096;
  FakeChoice ch{small && strcmp(func, "AllReduce") == 0 ? "Tree" : "Ring", small ? "LL" : "Simple",
                uint8_t(small ? 1 : 2)};
  if (const char* a = getenv("NCCL_ALGO")) ch.algo = a;
  if (const char* p = getenv("NCCL_PROTO")) ch.proto = p;
  return ch;
}

const char* TypeName(ncclDataType_t t) {
  static const char* names[] = {"ncclInt8",    "ncclUint8",    "ncclInt32",      "ncclUint32",
                                "ncclInt64",   "ncclUint64",   "ncclFloat16",    "ncclFloat32",
                                "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
  return int(t) >= 0 && int(t) < 12 ? names[int(t)] : "ncclInt8";
}

// A profiler event around one operation: started at construction, stopped at destruction.
class ProfEvent {
 public:
  ProfEvent(ncclComm* c, const char* func, size_t count, ncclDataType_t t, int root_or_peer,
            bool p2p, size_t bytes) {
    const ProfTable* p = Profiler();
    if (!p || !c || !c->profiler) return;
    prof::DescrV5 d;
    memset(&d, 0, sizeof(d));
    d.type = p2p ? prof::kP2p : prof::kColl;
    d.rank = c->rank;
    if (p2p) {
      d.p2p = {func, nullptr, TypeName(t), count, root_or_peer, 1};
    } else {
      FakeChoice ch = Choose(func, bytes);
      d.coll = {c->seq++, func, nullptr, nullptr, count, root_or_peer, TypeName(t),
                ch.channels, 16, ch.algo, ch.proto};
    }
    p->startEvent(c->profiler, &handle_, &d);
  }
  ~ProfEvent() {
    if (handle_) Profiler()->stopEvent(handle_);
  }

 private:
  void* handle_ = nullptr;
};

// Opens (or creates) the segment NAME for a communicator of NRANKS.
ncclResult_t Open(const std::string& name, int nranks, int rank, ncclComm_t* out) {
  if (nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT, 0600);
  if (fd < 0) return ncclSystemError;
  if (ftruncate(fd, sizeof(Shared)) != 0) {
    close(fd);
    return ncclSystemError;
  }
  void* p = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return ncclSystemError;
  auto* c = new ncclComm{static_cast<Shared*>(p), name, rank, nranks, ProcessDevice()};
  Barrier(c);  // everyone has it mapped: the name can go
  if (rank == 0) shm_unlink(name.c_str());
  ProfilerInit(c);
  *out = c;
  return ncclSuccess;
}

std::string NameOf(const ncclUniqueId& id) {
  return std::string(id.internal, strnlen(id.internal, NCCL_UNIQUE_ID_BYTES));
}

size_t SizeOf(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}

template <typename T>
void ReduceInto(T* acc, const T* x, size_t n, ncclRedOp_t op) {
  for (size_t i = 0; i < n; ++i) {
    switch (op) {
      case ncclSum: case ncclAvg: acc[i] = T(acc[i] + x[i]); break;
      case ncclProd: acc[i] = T(acc[i] * x[i]); break;
      case ncclMax: acc[i] = acc[i] > x[i] ? acc[i] : x[i]; break;
      case ncclMin: acc[i] = acc[i] < x[i] ? acc[i] : x[i]; break;
      default: break;
    }
  }
}

template <typename T>
void Average(T* acc, size_t n, int ranks) {
  for (size_t i = 0; i < n; ++i) acc[i] = T(acc[i] / T(ranks));
}

// acc = reduction over the ranks' slots at OFFSET (N elements).
bool Reduce(ncclComm* c, void* out, size_t offset, size_t n, ncclDataType_t t, ncclRedOp_t op) {
  if (op < ncclSum || op > ncclAvg) return false;
  size_t bytes = n * SizeOf(t);
  std::vector<char> acc(c->shared->slots[0] + offset, c->shared->slots[0] + offset + bytes);
  for (int r = 1; r < c->nranks; ++r) {
    const char* x = c->shared->slots[r] + offset;
    switch (t) {
      case ncclInt8: ReduceInto((int8_t*)acc.data(), (const int8_t*)x, n, op); break;
      case ncclUint8: ReduceInto((uint8_t*)acc.data(), (const uint8_t*)x, n, op); break;
      case ncclInt32: ReduceInto((int32_t*)acc.data(), (const int32_t*)x, n, op); break;
      case ncclUint32: ReduceInto((uint32_t*)acc.data(), (const uint32_t*)x, n, op); break;
      case ncclInt64: ReduceInto((int64_t*)acc.data(), (const int64_t*)x, n, op); break;
      case ncclUint64: ReduceInto((uint64_t*)acc.data(), (const uint64_t*)x, n, op); break;
      case ncclFloat32: ReduceInto((float*)acc.data(), (const float*)x, n, op); break;
      case ncclFloat64: ReduceInto((double*)acc.data(), (const double*)x, n, op); break;
      default: return false;  // half precision: data movement only
    }
  }
  if (op == ncclAvg) {
    if (t == ncclFloat32) Average((float*)acc.data(), n, c->nranks);
    else if (t == ncclFloat64) Average((double*)acc.data(), n, c->nranks);
    else return false;
  }
  memcpy(out, acc.data(), bytes);
  return true;
}

// ---- groups: operations wait for the outermost ncclGroupEnd --------------------

thread_local int t_depth = 0;
struct Deferred {
  int order;  // sends first, then collectives, then receives: pairs cannot deadlock
  cudaStream_t stream;
  std::function<ncclResult_t()> run;
};
thread_local std::vector<Deferred> t_group;

// Outside a group an operation runs now; in one, nothing reaches its stream
// before the outermost ncclGroupEnd, as with NCCL.
ncclResult_t Enqueue(int order, cudaStream_t stream, std::function<ncclResult_t()> run) {
  if (t_depth > 0) {
    t_group.push_back({order, stream, std::move(run)});
    return ncclSuccess;
  }
  fakecuStreamAddWork(stream, OpNs());
  return run();
}

// A collective: every rank deposits into its slot, then reads what it needs.
ncclResult_t Collective(ncclComm_t c, cudaStream_t stream, const void* in, size_t in_bytes,
                        std::function<ncclResult_t()> out) {
  if (!c) return ncclInvalidArgument;
  if (in_bytes > kSlotBytes) return ncclInvalidArgument;
  std::vector<char> copy;
  if (in) copy.assign(static_cast<const char*>(in), static_cast<const char*>(in) + in_bytes);
  return Enqueue(1, stream, [c, copy, out]() {
    if (!copy.empty()) memcpy(c->shared->slots[c->rank], copy.data(), copy.size());
    Barrier(c);
    ncclResult_t rc = out();
    Barrier(c);
    return rc;
  });
}

}  // namespace

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t r) { return r == ncclSuccess ? "no error" : "error"; }

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  unsigned char random[8];
  if (getrandom(random, sizeof(random), 0) != sizeof(random)) return ncclSystemError;
  memset(id->internal, 0, sizeof(id->internal));
  snprintf(id->internal, sizeof(id->internal), "/dltrace-fake-nccl-%d-", int(getpid()));
  size_t len = strlen(id->internal);
  for (unsigned char b : random) {
    snprintf(id->internal + len, sizeof(id->internal) - len, "%02x", b);
    len += 2;
  }
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return Open(NameOf(id), nranks, rank, comm);
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t* config) {
  if (config && config->magic != 0xcafebeef) return ncclInvalidArgument;
  return Open(NameOf(id), nranks, rank, comm);
}

ncclResult_t ncclCommInitRankScalable(ncclComm_t* comm, int nranks, int rank, int nId,
                                      ncclUniqueId* ids, ncclConfig_t*) {
  if (nId < 1 || !ids) return ncclInvalidArgument;
  return Open(NameOf(ids[0]), nranks, rank, comm);
}

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  if (ndev != 1) return ncclInvalidUsage;  // one process, one rank: all this double needs
  ncclUniqueId id;
  ncclResult_t rc = ncclGetUniqueId(&id);
  if (rc != ncclSuccess) return rc;
  rc = Open(NameOf(id), 1, 0, &comms[0]);
  if (rc == ncclSuccess && devlist) comms[0]->device = devlist[0];
  return rc;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t*) {
  if (!comm || !newcomm) return ncclInvalidArgument;
  Shared* s = comm->shared;
  s->color[comm->rank] = color;
  s->key[comm->rank] = key;
  Barrier(comm);
  // New rank: order by key, then by old rank, among the same color.
  int size = 0, rank = 0;
  for (int r = 0; r < comm->nranks; ++r) {
    if (s->color[r] != color) continue;
    ++size;
    if (s->key[r] < key || (s->key[r] == key && r < comm->rank)) ++rank;
  }
  Barrier(comm);
  int index = comm->splits++;
  if (color == NCCL_SPLIT_NOCOLOR) {
    *newcomm = nullptr;
    return ncclSuccess;
  }
  std::string name = comm->name + "-s" + std::to_string(index) + "c" + std::to_string(color);
  return Open(name, size, rank, newcomm);
}

ncclResult_t ncclCommShrink(ncclComm_t comm, int* exclude, int n_exclude, ncclComm_t* newcomm,
                            ncclConfig_t*, int) {
  if (!comm || !newcomm || n_exclude < 0 || n_exclude >= comm->nranks) return ncclInvalidArgument;
  int below = 0;
  for (int i = 0; i < n_exclude; ++i) {
    if (exclude[i] == comm->rank) return ncclInvalidUsage;
    below += exclude[i] < comm->rank ? 1 : 0;
  }
  std::string name = comm->name + "-k" + std::to_string(comm->shrinks++);
  return Open(name, comm->nranks - n_exclude, comm->rank - below, newcomm);
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) { return comm ? ncclSuccess : ncclInvalidArgument; }

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclInvalidArgument;
  if (comm->profiler) Profiler()->finalize(comm->profiler);
  munmap(comm->shared, sizeof(Shared));
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) { return ncclCommDestroy(comm); }

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (!comm) return ncclInvalidArgument;
  *count = comm->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (!comm) return ncclInvalidArgument;
  *device = comm->device;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (!comm) return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* in, void* out, size_t count, ncclDataType_t t,
                           ncclRedOp_t op, ncclComm_t c, cudaStream_t stream) {
  size_t bytes = count * SizeOf(t);
  ProfEvent event(c, "AllReduce", count, t, 0, false, bytes);
  return Collective(c, stream, in, bytes, [=]() {
    return Reduce(c, out, 0, count, t, op) ? ncclSuccess : ncclInvalidArgument;
  });
}

ncclResult_t ncclBroadcast(const void* in, void* out, size_t count, ncclDataType_t t, int root,
                           ncclComm_t c, cudaStream_t stream) {
  if (!c || root < 0 || root >= c->nranks) return ncclInvalidArgument;
  size_t bytes = count * SizeOf(t);
  ProfEvent event(c, "Broadcast", count, t, root, false, bytes);
  return Collective(c, stream, c->rank == root ? in : nullptr, c->rank == root ? bytes : 0, [=]() {
    memcpy(out, c->shared->slots[root], bytes);
    return ncclSuccess;
  });
}

ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t t, int root, ncclComm_t c,
                       cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, t, root, c, stream);
}

ncclResult_t ncclReduce(const void* in, void* out, size_t count, ncclDataType_t t, ncclRedOp_t op,
                        int root, ncclComm_t c, cudaStream_t stream) {
  if (!c || root < 0 || root >= c->nranks) return ncclInvalidArgument;
  ProfEvent event(c, "Reduce", count, t, root, false, count * SizeOf(t));
  return Collective(c, stream, in, count * SizeOf(t), [=]() {
    if (c->rank != root) return ncclSuccess;
    return Reduce(c, out, 0, count, t, op) ? ncclSuccess : ncclInvalidArgument;
  });
}

ncclResult_t ncclAllGather(const void* in, void* out, size_t count, ncclDataType_t t,
                           ncclComm_t c, cudaStream_t stream) {
  size_t bytes = count * SizeOf(t);
  ProfEvent event(c, "AllGather", count, t, 0, false, bytes);
  return Collective(c, stream, in, bytes, [=]() {
    for (int r = 0; r < c->nranks; ++r)
      memcpy(static_cast<char*>(out) + size_t(r) * bytes, c->shared->slots[r], bytes);
    return ncclSuccess;
  });
}

ncclResult_t ncclReduceScatter(const void* in, void* out, size_t count, ncclDataType_t t,
                               ncclRedOp_t op, ncclComm_t c, cudaStream_t stream) {
  if (!c) return ncclInvalidArgument;
  size_t bytes = count * SizeOf(t);
  ProfEvent event(c, "ReduceScatter", count, t, 0, false, bytes);
  return Collective(c, stream, in, bytes * size_t(c->nranks), [=]() {
    return Reduce(c, out, size_t(c->rank) * bytes, count, t, op) ? ncclSuccess
                                                                 : ncclInvalidArgument;
  });
}

ncclResult_t ncclAlltoAll(const void* in, void* out, size_t count, ncclDataType_t t, ncclComm_t c,
                          cudaStream_t stream) {
  if (!c) return ncclInvalidArgument;
  size_t bytes = count * SizeOf(t);
  return Collective(c, stream, in, bytes * size_t(c->nranks), [=]() {
    for (int r = 0; r < c->nranks; ++r)
      memcpy(static_cast<char*>(out) + size_t(r) * bytes,
             c->shared->slots[r] + size_t(c->rank) * bytes, bytes);
    return ncclSuccess;
  });
}

ncclResult_t ncclGather(const void* in, void* out, size_t count, ncclDataType_t t, int root,
                        ncclComm_t c, cudaStream_t stream) {
  if (!c || root < 0 || root >= c->nranks) return ncclInvalidArgument;
  size_t bytes = count * SizeOf(t);
  return Collective(c, stream, in, bytes, [=]() {
    if (c->rank == root)
      for (int r = 0; r < c->nranks; ++r)
        memcpy(static_cast<char*>(out) + size_t(r) * bytes, c->shared->slots[r], bytes);
    return ncclSuccess;
  });
}

ncclResult_t ncclScatter(const void* in, void* out, size_t count, ncclDataType_t t, int root,
                         ncclComm_t c, cudaStream_t stream) {
  if (!c || root < 0 || root >= c->nranks) return ncclInvalidArgument;
  size_t bytes = count * SizeOf(t);
  bool mine = c->rank == root;
  return Collective(c, stream, mine ? in : nullptr, mine ? bytes * size_t(c->nranks) : 0, [=]() {
    memcpy(out, c->shared->slots[root] + size_t(c->rank) * bytes, bytes);
    return ncclSuccess;
  });
}

ncclResult_t ncclSend(const void* in, size_t count, ncclDataType_t t, int peer, ncclComm_t c,
                      cudaStream_t stream) {
  size_t bytes = count * SizeOf(t);
  if (!c || peer < 0 || peer >= c->nranks || bytes > kMailBytes) return ncclInvalidArgument;
  ProfEvent event(c, "Send", count, t, peer, true, bytes);
  std::vector<char> copy(static_cast<const char*>(in), static_cast<const char*>(in) + bytes);
  return Enqueue(0, stream, [=]() {
    Mailbox& m = c->shared->mail[c->rank][peer];
    uint32_t tail = m.tail.load(std::memory_order_relaxed);
    for (int spins = 0; tail - m.head.load(std::memory_order_acquire) >= kMailDepth; ++spins)
      Pause(spins);
    memcpy(m.data[tail % kMailDepth], copy.data(), copy.size());
    m.len[tail % kMailDepth] = copy.size();
    m.tail.store(tail + 1, std::memory_order_release);
    return ncclSuccess;
  });
}

ncclResult_t ncclRecv(void* out, size_t count, ncclDataType_t t, int peer, ncclComm_t c,
                      cudaStream_t stream) {
  size_t bytes = count * SizeOf(t);
  if (!c || peer < 0 || peer >= c->nranks) return ncclInvalidArgument;
  ProfEvent event(c, "Recv", count, t, peer, true, bytes);
  return Enqueue(2, stream, [=]() {
    Mailbox& m = c->shared->mail[peer][c->rank];
    uint32_t head = m.head.load(std::memory_order_relaxed);
    for (int spins = 0; m.tail.load(std::memory_order_acquire) == head; ++spins) Pause(spins);
    ncclResult_t rc = m.len[head % kMailDepth] == bytes ? ncclSuccess : ncclInvalidUsage;
    memcpy(out, m.data[head % kMailDepth], bytes < kMailBytes ? bytes : kMailBytes);
    m.head.store(head + 1, std::memory_order_release);
    return rc;
  });
}

ncclResult_t ncclGroupStart(void) {
  ++t_depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
  if (t_depth == 0) return ncclInvalidUsage;
  if (--t_depth > 0) return ncclSuccess;
  std::vector<Deferred> ops = std::move(t_group);
  t_group.clear();
  ncclResult_t result = ncclSuccess;
  for (int order = 0; order <= 2; ++order)
    for (Deferred& d : ops)
      if (d.order == order) {
        fakecuStreamAddWork(d.stream, OpNs());
        ncclResult_t rc = d.run();
        if (rc != ncclSuccess) result = rc;
      }
  return result;
}

}  // extern "C"
