// SPDX-License-Identifier: GPL-2.0-only
// The NCCL side of the recorder: the communicator registry, groups, what each
// intercepted call records, and the wrappers generated from tables/nccl.py
// (record/gen_wrappers.py). Each wrapper forwards to the real function (dlsym(RTLD_NEXT), once),
// recording or not; nothing here needs nccl.h or CUDA to build.
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpu_timing.h"
#include "nccl_abi.h"
#include "nccl_types.h"
#include "recorder.h"

namespace dltrace::record {
namespace {

using formats::DataType;
using formats::OpEvent;
using formats::OpKind;
using formats::RedOp;

thread_local int t_depth = 0;  // > 0 inside a wrapper: NCCL's calls to itself are not recorded

// ---- the real functions -----------------------------------------------------

struct FindNccl {
  const char* name;
  void* found = nullptr;
};

// libnccl loaded outside the global scope (the dependency of a Python
// extension opened with RTLD_LOCAL) is invisible to RTLD_NEXT: find it among
// the loaded objects by name and ask it directly.
int FindInLoadedNccl(dl_phdr_info* info, size_t, void* data) {
  auto* f = static_cast<FindNccl*>(data);
  const char* path = info->dlpi_name;
  const char* base = path ? std::strrchr(path, '/') : nullptr;
  base = base ? base + 1 : path;
  if (!base || std::strncmp(base, "libnccl.so", 10) != 0) return 0;
  void* handle = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
  if (!handle) return 0;
  f->found = dlsym(handle, f->name);
  dlclose(handle);
  return f->found ? 1 : 0;
}

void* ResolveReal(const char* name, void* self) {
  void* p = dlsym(RTLD_NEXT, name);
  if (p && p != self) return p;
  FindNccl f{name};
  dl_iterate_phdr(&FindInLoadedNccl, &f);
  return f.found != self ? f.found : nullptr;
}

template <typename Fn>
Fn Real(const char* name, Fn self) {
  return reinterpret_cast<Fn>(ResolveReal(name, reinterpret_cast<void*>(self)));
}

ncclResult_t Missing(const char* name) {
  static std::atomic<bool> said{false};
  if (!said.exchange(true) && !Recorder::Get().settings().quiet)
    std::fprintf(
        stderr, "dltrace: the loaded libnccl has no %s; the call returns ncclInvalidUsage\n", name);
  return ncclInvalidUsage;
}

// Helpers the recorder calls itself, resolved once like the wrappers.
#define DLTRACE_NCCL_HELPER(name, params, args)                               \
  ncclResult_t Call_##name params {                                           \
    using Fn = ncclResult_t(*) params;                                        \
    static const Fn real = reinterpret_cast<Fn>(ResolveReal(#name, nullptr)); \
    return real ? real args : ncclInvalidUsage;                               \
  }
DLTRACE_NCCL_HELPERS(DLTRACE_NCCL_HELPER)
#undef DLTRACE_NCCL_HELPER

// ---- communicators ------------------------------------------------------------

struct CommEntry {
  uint32_t id = 0;
  int size = 0;
  int rank = -1;
  uint64_t hash = 0;
  int device = -1;
  std::atomic<uint64_t> collective_seq{0};  // matches one collective across ranks
  std::atomic<uint64_t> p2p_seq{0};
  int splits = 0;          // ncclCommSplit calls on it so far (all members make them)
  int shrinks = 0;         // ncclCommShrink calls (only the ranks that stay make them)
  bool described = false;  // its Communicator record was written
  formats::Communicator record;
};

std::mutex g_comm_mu;
std::unordered_map<ncclComm_t, CommEntry*> g_comms;
std::atomic<uint64_t> g_comm_generation{1};  // bumped on every destroy: invalidates caches

// NCCL's own hash of a unique id (its getHash: DJB2a over the 128 bytes,
// chars sign-extended), the "commHash" NCCL logs: equal on every rank.
uint64_t UniqueIdHash(const ncclUniqueId& id) {
  uint64_t h = 5381;
  for (char ch : id.internal) h = ((h << 5) + h) ^ uint64_t(int64_t(ch));
  return h;
}

// A derived identity for communicators made without a unique id in sight
// (splits, shrinks, ncclCommInitAll): every member computes the same value.
uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 29);
}

// Members of NCCL communicators are only known per process: the record
// carries this rank; merge puts the global ranks together across files.
void Describe(CommEntry* e) {
  if (e->described) return;
  if (e->size <= 0 || e->rank < 0) {
    // A nonblocking communicator not ready at creation: ask again now.
    ncclComm_t comm = nullptr;
    for (auto& [handle, entry] : g_comms)
      if (entry == e) comm = handle;
    int n = 0, r = -1;
    if (!comm || Call_ncclCommCount(comm, &n) != ncclSuccess ||
        Call_ncclCommUserRank(comm, &r) != ncclSuccess)
      return;
    e->size = e->record.size = n;
    e->rank = e->record.rank = r;
  }
  e->described = true;
  Recorder::Get().AddCommunicator(e->record);
}

CommEntry* RegisterLocked(ncclComm_t comm, const char* how, int size, int rank, uint64_t hash,
                          int device, const CommEntry* parent, int color, int key) {
  auto* e = new CommEntry();  // never freed: a stale cache entry must stay readable
  e->id = Recorder::Get().NewCommunicatorId();
  e->size = size;
  e->rank = rank;
  e->hash = hash;
  e->device = device;
  formats::Communicator& c = e->record;
  c.id = e->id;
  c.api = formats::Api::Nccl;
  c.name = how;
  c.size = size;
  c.rank = rank;
  c.parent = parent ? int64_t(parent->id) : -1;
  c.color = color;
  c.key = key;
  c.nccl_unique_id_hash = hash;
  c.cuda_device = device;
  c.bus_id = gpu::BusId(device);
  c.created_ns = uint64_t(NowNs());
  g_comms[comm] = e;
  Describe(e);
  return e;
}

CommEntry* LookupComm(ncclComm_t comm) {
  if (!comm) {
    // NCCL rejects the call; nothing to register (Finish drops it).
    static CommEntry none;
    none.id = formats::kNoCommunicator;
    none.described = true;
    return &none;
  }
  struct Slot {
    ncclComm_t comm = nullptr;
    CommEntry* entry = nullptr;
    uint64_t generation = 0;
  };
  thread_local Slot cache[8];
  uint64_t gen = g_comm_generation.load(std::memory_order_acquire);
  Slot& s = cache[(reinterpret_cast<uintptr_t>(comm) >> 4) % 8];
  if (s.entry && s.generation == gen && s.comm == comm && s.entry->described) return s.entry;
  std::lock_guard<std::mutex> lock(g_comm_mu);
  auto it = g_comms.find(comm);
  CommEntry* e;
  if (it != g_comms.end()) {
    e = it->second;
    Describe(e);
  } else {
    // Made before recording started, or by a call we do not see.
    int n = 0, r = -1, device = -1;
    Call_ncclCommCount(comm, &n);
    Call_ncclCommUserRank(comm, &r);
    if (Call_ncclCommCuDevice(comm, &device) != ncclSuccess) device = gpu::CurrentDevice();
    e = RegisterLocked(comm, "", n, r, 0, device, nullptr, 0, 0);
  }
  s = {comm, e, gen};
  return e;
}

int DeviceOf(ncclComm_t comm) {
  int device = -1;
  if (comm && Call_ncclCommCuDevice(comm, &device) == ncclSuccess) return device;
  return gpu::CurrentDevice();
}

std::string NcclVersion() {
  int v = 0;
  if (Call_ncclGetVersion(&v) != ncclSuccess) return "";
  return NcclVersionString(v);
}

// The first communicator starts the recorder (unless MPI_Init already did).
bool EnsureStarted(const CommEntry& first, int device) {
  Recorder& r = Recorder::Get();
  if (r.active()) return true;
  if (!r.startable()) return false;
  StartInfo info = NcclStartInfo(first.rank, first.size, first.hash, NcclVersion());
  info.gpu_device = device;
  info.gpu_bus_id = gpu::BusId(device);
  if (!r.Start(info)) return false;
  gpu::Enable();
  return true;
}

// Registers a new communicator; starts the recorder first if this is the first.
void NewComm(ncclComm_t comm, const char* how, int size, int rank, uint64_t hash, int device,
             const CommEntry* parent, int color, int key) {
  if (!comm) return;
  CommEntry probe;
  probe.size = size;
  probe.rank = rank;
  probe.hash = hash;
  if (!EnsureStarted(probe, device)) return;
  std::lock_guard<std::mutex> lock(g_comm_mu);
  RegisterLocked(comm, how, size, rank, hash, device, parent, color, key);
}

void ForgetComm(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(g_comm_mu);
  // The handle value can come back for a new communicator.
  if (g_comms.erase(comm)) g_comm_generation.fetch_add(1, std::memory_order_release);
}

// ---- datatypes and reductions --------------------------------------------------

static_assert(ncclFloat8e5m2 == kNcclTypeCount - 1, "nccl_types.h follows ncclDataType_t");

RedOp RedOpOf(ncclRedOp_t op) {
  switch (int(op)) {
    case ncclSum: return RedOp::Sum;
    case ncclProd: return RedOp::Prod;
    case ncclMax: return RedOp::Max;
    case ncclMin: return RedOp::Min;
    case ncclAvg: return RedOp::Avg;
  }
  return RedOp::User;  // ncclRedOpCreatePreMulSum and later dynamic operators
}

// ---- groups -----------------------------------------------------------------------

// Operations between ncclGroupStart and ncclGroupEnd are enqueued on their
// streams only by the outermost ncclGroupEnd, so their GPU events go around it.
struct GroupedOp {
  OpEvent op;
  cudaStream_t stream;
};
thread_local int t_group_depth = 0;
thread_local uint32_t t_group_id = 0;
thread_local std::vector<GroupedOp> t_group_ops;
std::atomic<uint32_t> g_next_group{1};

// ---- one recorded call ----------------------------------------------------------

class NcclCall {
 public:
  // Lifecycle and group calls (kind Unknown) are followed whenever recording
  // may still start; operations only while recording.
  explicit NcclCall(OpKind kind) {
    Recorder& r = Recorder::Get();
    const bool lifecycle = kind == OpKind::Unknown;
    active_ = t_depth == 0 && (lifecycle ? r.startable() : r.active());
    if (active_) ++t_depth;
    op_.kind = kind;
  }
  ~NcclCall() {
    if (active_) --t_depth;
  }
  NcclCall(const NcclCall&) = delete;
  NcclCall& operator=(const NcclCall&) = delete;
  bool active() const { return active_; }

  void Operation(ncclComm_t comm, cudaStream_t stream, size_t count, ncclDataType_t type) {
    op_.enter_ns = NowNs();
    comm_ = LookupComm(comm);
    stream_ = stream;
    op_.comm = comm_->id;
    op_.count = uint64_t(count);
    const NcclType* t = NcclTypeAt(int(type));
    op_.datatype = t ? t->type : DataType::Unknown;
    op_.bytes = op_.count * (t ? t->size : 0);
    op_.stream = reinterpret_cast<uint64_t>(stream);
    op_.thread = Recorder::Get().ThreadIndex();
    if (t_group_depth > 0) {
      op_.group = t_group_id;
    } else if (gpu::enabled()) {
      timing_ = gpu::Begin(stream, &op_.captured_in_graph);
    }
  }
  void Reduction(ncclRedOp_t op) { op_.red_op = RedOpOf(op); }
  void Peer(int peer) { op_.peer = peer; }  // the root, or the other side of a send/recv
  void WholeBuffer() { op_.bytes *= uint64_t(comm_->size); }

  // Splits and shrinks: the parent and which of its splits (or shrinks) this is.
  CommEntry* parent = nullptr;
  int index = 0;
  bool outermost_group_end = false;
  ncclResult_t rc = ncclSuccess;  // the real call's result, for `after`

  void Finish() {
    op_.exit_ns = NowNs();
    const bool enqueued = rc == ncclSuccess || rc == ncclInProgress;
    if (!enqueued) {
      gpu::Abandon(timing_);  // a rejected call: nothing happened, nothing recorded
      return;
    }
    auto& seq = IsP2p() ? comm_->p2p_seq : comm_->collective_seq;
    op_.seq = seq.fetch_add(1, std::memory_order_relaxed);
    if (t_group_depth > 0) {
      t_group_ops.push_back({std::move(op_), stream_});
      return;
    }
    // In progress on a nonblocking communicator: enqueued later, untimed.
    if (rc == ncclSuccess) {
      gpu::End(timing_);
    } else {
      gpu::Abandon(timing_);
      timing_ = nullptr;
    }
    gpu::Publish(&op_, &timing_, 1);
  }

 private:
  bool IsP2p() const { return op_.kind == OpKind::NcclSend || op_.kind == OpKind::NcclRecv; }

  bool active_ = false;
  OpEvent op_;
  CommEntry* comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  gpu::Timing* timing_ = nullptr;
};

// ---- what each call records ---------------------------------------------------------

// The outermost ncclGroupEnd: start events on every stream the group used.
struct GroupStreams {
  std::vector<cudaStream_t> streams;
  std::vector<gpu::Timing*> timings;
  std::vector<bool> captured;
};
thread_local GroupStreams t_group_streams;

void BeginGroupEnd() {
  GroupStreams& g = t_group_streams;
  g = {};
  for (const GroupedOp& o : t_group_ops) {
    bool seen = false;
    for (cudaStream_t s : g.streams) seen = seen || s == o.stream;
    if (seen) continue;
    bool captured = false;
    gpu::Timing* t = gpu::enabled() ? gpu::Begin(o.stream, &captured) : nullptr;
    g.streams.push_back(o.stream);
    g.timings.push_back(t);
    g.captured.push_back(captured);
  }
}

void FinishGroupEnd(ncclResult_t rc) {
  GroupStreams& g = t_group_streams;
  std::vector<GroupedOp> ops = std::move(t_group_ops);
  t_group_ops.clear();
  for (gpu::Timing*& t : g.timings) {
    if (rc == ncclSuccess) {
      gpu::End(t);
    } else {
      gpu::Abandon(t);
      t = nullptr;
    }
  }
  if (rc != ncclSuccess && rc != ncclInProgress) return;  // the group was not enqueued
  std::vector<OpEvent> events;
  std::vector<gpu::Timing*> timings;
  events.reserve(ops.size());
  for (GroupedOp& o : ops) {
    size_t k = 0;
    while (g.streams[k] != o.stream) ++k;
    o.op.captured_in_graph = g.captured[k];
    events.push_back(std::move(o.op));
    timings.push_back(g.timings[k]);
  }
  gpu::Publish(events.data(), timings.data(), events.size());
}

bool Made(ncclResult_t rc) { return rc == ncclSuccess || rc == ncclInProgress; }

// ncclCommInitRank and its variants.
void Initialized(const NcclCall& c, ncclComm_t* comm, const char* how, int nranks, int rank,
                 uint64_t hash) {
  if (Made(c.rc) && comm) NewComm(*comm, how, nranks, rank, hash, DeviceOf(*comm), nullptr, 0, 0);
}

// One process holds every rank: an identity of its own, from host and pid.
void InitializedAll(const NcclCall& c, ncclComm_t* comms, int ndev, const int* devlist) {
  if (!Made(c.rc) || !comms) return;
  static std::atomic<uint64_t> made{0};
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  uint64_t h = 5381;
  for (const char* p = host; *p; ++p) h = Mix(h, uint64_t(*p));
  h = Mix(Mix(h, uint64_t(getpid())), made.fetch_add(1));
  for (int i = 0; i < ndev; ++i)
    NewComm(comms[i], "init_all", ndev, i, h, devlist ? devlist[i] : i, nullptr, 0, 0);
}

void SplitFrom(NcclCall& c, ncclComm_t comm) {
  if (!Recorder::Get().active() || !comm) return;
  c.parent = LookupComm(comm);
  c.index = c.parent->splits++;  // every member splits, with or without a color
}

void Split(const NcclCall& c, int color, int key, ncclComm_t* newcomm) {
  if (!c.parent || !Made(c.rc) || !newcomm || !*newcomm || color == NCCL_SPLIT_NOCOLOR) return;
  int n = 0, r = -1;  // a nonblocking child may not know yet: asked again on first use
  if (Call_ncclCommCount(*newcomm, &n) != ncclSuccess ||
      Call_ncclCommUserRank(*newcomm, &r) != ncclSuccess) {
    n = 0;
    r = -1;
  }
  uint64_t h =
      Mix(Mix(Mix(c.parent->hash, 0x73706c6974ull), uint64_t(c.index)), uint64_t(uint32_t(color)));
  NewComm(*newcomm, "split", n, r, h, c.parent->device, c.parent, color, key);
}

void ShrinkFrom(NcclCall& c, ncclComm_t comm) {
  if (!Recorder::Get().active() || !comm) return;
  c.parent = LookupComm(comm);
  c.index = c.parent->shrinks++;  // only the ranks that stay call it
}

void Shrunk(const NcclCall& c, const int* excluded, int n_excluded, ncclComm_t* newcomm) {
  if (!c.parent || !Made(c.rc) || !newcomm || !*newcomm) return;
  // The ranks that stay keep their order.
  int below = 0;
  uint64_t h = Mix(Mix(c.parent->hash, 0x736872696e6bull), uint64_t(c.index));
  for (int i = 0; i < n_excluded && excluded; ++i) {
    below += excluded[i] < c.parent->rank ? 1 : 0;
    h = Mix(h, uint64_t(uint32_t(excluded[i])));
  }
  NewComm(*newcomm, "shrink", c.parent->size - n_excluded, c.parent->rank - below, h,
          c.parent->device, c.parent, 0, 0);
}

void GroupStart() {
  if (t_group_depth++ == 0) t_group_id = g_next_group.fetch_add(1, std::memory_order_relaxed);
}

void GroupEndBegins(NcclCall& c) {
  if (t_group_depth == 0) return;  // unbalanced: NCCL itself will say so
  if (--t_group_depth == 0) {
    c.outermost_group_end = true;
    BeginGroupEnd();
  }
}

void GroupEnded(const NcclCall& c) {
  if (c.outermost_group_end) FinishGroupEnd(c.rc);
}

}  // namespace
}  // namespace dltrace::record

// ---- the wrappers, generated from tables/nccl.py ----------------------------------------
using namespace dltrace::record;
#include "nccl_wrappers.inc"
