// SPDX-License-Identifier: GPL-2.0-only
// libdltrace-nccl-profiler.so: the recorder as an NCCL profiler plugin, for
// programs whose NCCL the interposer cannot see (linked in statically). NCCL
// loads it by itself (NCCL_PROFILER_PLUGIN=path) and reports each collective
// and point-to-point operation with the algorithm, protocol and channels it
// chose; the plugin writes them to the same trace files the interposer writes.
#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "nccl_profiler_abi.h"
#include "nccl_types.h"
#include "recorder.h"

namespace dltrace::record {
namespace {

using formats::DataType;
using formats::NcclAlgorithm;
using formats::NcclProtocol;
using formats::ParseNcclAlgorithm;
using formats::ParseNcclProtocol;
using formats::OpEvent;
using formats::OpKind;

// One communicator, as NCCL's init call describes it (v4 and later) or as
// its first event names it (v1-v3).
struct Context {
  uint32_t comm = formats::kNoCommunicator;
  uint64_t hash = 0;
  int nranks = 0, rank = -1;
  bool described = false;
};

// One operation between startEvent and stopEvent.
struct Event {
  OpEvent op;
};

std::mutex g_mu;  // communicator registration
const char* g_api = "";  // which table NCCL took

// Names as NCCL's ncclFuncToString / ncclDatatypeToString / ncclAlgoStr spell them.
OpKind KindOf(const char* func) {
  if (!func) return OpKind::Unknown;
  static const std::pair<const char*, OpKind> names[] = {
      {"AllReduce", OpKind::NcclAllReduce}, {"Broadcast", OpKind::NcclBroadcast},
      {"Reduce", OpKind::NcclReduce},       {"AllGather", OpKind::NcclAllGather},
      {"ReduceScatter", OpKind::NcclReduceScatter}, {"Send", OpKind::NcclSend},
      {"Recv", OpKind::NcclRecv}};
  for (const auto& [n, k] : names)
    if (std::strcmp(func, n) == 0) return k;
  return OpKind::Unknown;
}
OpKind KindOf(uint8_t func) {
  switch (func) {  // ncclFunc_t
    case 0: return OpKind::NcclBroadcast;
    case 1: return OpKind::NcclReduce;
    case 2: return OpKind::NcclAllGather;
    case 3: return OpKind::NcclReduceScatter;
    case 4: return OpKind::NcclAllReduce;
    case 6: return OpKind::NcclSend;
    case 7: return OpKind::NcclRecv;
    default: return OpKind::Unknown;
  }
}



// NCCL's version from the program itself when it exports ncclGetVersion
// (a static NCCL often does not: the plugin table's version says the range).
std::string NcclVersion() {
  using Fn = int (*)(int*);
  auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "ncclGetVersion"));
  int v = 0;
  if (!fn || fn(&v) != 0) return "";
  return NcclVersionString(v);
}

// The first communicator starts the recorder, as with the interposer.
bool EnsureStarted(const Context& c) {
  Recorder& r = Recorder::Get();
  if (r.active()) return true;
  if (!r.startable()) return false;
  StartInfo info = NcclStartInfo(c.rank, c.nranks, c.hash, NcclVersion());
  info.attributes.emplace_back("nccl.profiler_api", g_api);
  return r.Start(info);
}

// Writes C's communicator record once (its size and rank may come with the first event).
void Describe(Context* c, int rank) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (c->described) return;
  if (c->rank < 0) c->rank = rank;
  if (!EnsureStarted(*c)) return;
  c->described = true;
  c->comm = Recorder::Get().NewCommunicatorId();
  formats::Communicator rec;
  rec.id = c->comm;
  rec.api = formats::Api::Nccl;
  rec.name = "profiler";
  rec.size = c->nranks;
  rec.rank = c->rank;
  rec.nccl_unique_id_hash = c->hash;  // NCCL's commHash: the hash of the unique id
  rec.created_ns = uint64_t(NowNs());
  Recorder::Get().AddCommunicator(std::move(rec));
}

// v1-v3 contexts carry no communicator: events name it by hash.
Context* ContextFor(Context* init, uint64_t hash) {
  if (init->hash == hash || init->hash == 0) {
    init->hash = hash;
    return init;
  }
  static std::unordered_map<uint64_t, Context*> by_hash;
  std::lock_guard<std::mutex> lock(g_mu);
  Context*& c = by_hash[hash];
  if (!c) {
    c = new Context();
    c->hash = hash;
  }
  return c;
}

// Starts recording one operation of context C (kind, counts, NCCL's choice).
Event* Begin(Context* c, int rank, OpKind kind, size_t count, int type, int peer_or_root,
             uint64_t seq, NcclAlgorithm algo, NcclProtocol proto, int channels) {
  if (kind == OpKind::Unknown) return nullptr;
  Describe(c, rank);
  if (!c->described || !Recorder::Get().active()) return nullptr;
  auto* e = new Event();
  OpEvent& op = e->op;
  op.kind = kind;
  op.comm = c->comm;
  op.count = count;
  const NcclType* t = NcclTypeAt(type);
  op.datatype = t ? t->type : DataType::Unknown;
  uint64_t bytes = uint64_t(count) * (t ? t->size : 0);
  // nccl-tests "size": the whole gathered buffer / the whole scattered input.
  if ((kind == OpKind::NcclAllGather || kind == OpKind::NcclReduceScatter) && c->nranks > 0)
    bytes *= uint64_t(c->nranks);
  op.bytes = bytes;
  const bool rooted = kind == OpKind::NcclBroadcast || kind == OpKind::NcclReduce;
  op.peer = rooted || kind == OpKind::NcclSend || kind == OpKind::NcclRecv ? peer_or_root : -1;
  op.seq = seq;
  op.thread = Recorder::Get().ThreadIndex();
  op.nccl_algorithm = algo;
  op.nccl_protocol = proto;
  op.nccl_channels = uint16_t(channels);
  op.enter_ns = NowNs();
  return e;
}

// Whether the interposer (libdltrace-record.so, preloaded) records NCCL in
// this process: it is loaded and so is a shared libnccl whose calls it
// sees. The plugin then stays out, so one recorder writes the rank's file
// (dltrace record --nccl auto offers both).
bool InterposerRecordsNccl() {
  struct Seen {
    bool interposer = false, nccl = false;
  } seen;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Seen*>(data);
        const char* path = info->dlpi_name;
        const char* base = path ? std::strrchr(path, '/') : nullptr;
        base = base ? base + 1 : path;
        if (!base) return 0;
        if (std::strncmp(base, "libdltrace-record.so", 20) == 0) s->interposer = true;
        if (std::strncmp(base, "libnccl.so", 10) == 0) s->nccl = true;
        return 0;
      },
      &seen);
  return seen.interposer && seen.nccl;
}

Context* NewContext(uint64_t hash, int nranks, int rank) {
  static const bool inert = InterposerRecordsNccl();
  if (inert) return nullptr;
  auto* c = new Context();
  c->hash = hash;
  c->nranks = nranks;
  c->rank = rank;
  return c;
}

constexpr int kMask = int(profiler::kColl | profiler::kP2p);

// A null context (the interposer records NCCL) asks for no events.
profiler::Result InitV1(void** context, int* mask) {
  *context = NewContext(0, 0, -1);
  *mask = *context ? kMask : 0;
  return 0;
}
profiler::Result InitV4(void** context, int* mask, const char*, uint64_t hash, int, int nranks,
                        int rank, profiler::DebugLogger) {
  *context = NewContext(hash, nranks, rank);
  *mask = *context ? kMask : 0;
  return 0;
}
profiler::Result InitV5(void** context, uint64_t hash, int* mask, const char*, int, int nranks,
                        int rank, profiler::DebugLogger) {
  *context = NewContext(hash, nranks, rank);
  *mask = *context ? kMask : 0;
  return 0;
}

// The event's fields, decoded the same way for every version: v1 gives
// function, datatype, algorithm and protocol as numbers, v2 on as names.
int TypeIndexOf(uint8_t datatype) { return datatype < 12 ? int(datatype) : -1; }
int TypeIndexOf(const char* datatype) { return NcclTypeIndex(datatype); }
NcclAlgorithm AlgorithmOf(uint8_t algo) { return algo < 7 ? NcclAlgorithm(algo) : NcclAlgorithm::Unknown; }
NcclAlgorithm AlgorithmOf(const char* algo) { return ParseNcclAlgorithm(algo); }
NcclProtocol ProtocolOf(uint8_t proto) { return proto < 3 ? NcclProtocol(proto) : NcclProtocol::Unknown; }
NcclProtocol ProtocolOf(const char* proto) { return ParseNcclProtocol(proto); }

// v1-v3 events name their communicator by hash; from v4 on, init's context is it.
template <typename Event>
Context* CommOf(Context* init, const Event& e) { return ContextFor(init, e.commHash); }
Context* CommOf(Context* init, const profiler::CollV4&) { return init; }
Context* CommOf(Context* init, const profiler::P2pV4&) { return init; }

// v1-v3 give a collective's most channels and none for point-to-point; v4 on the number used.
int ChannelsOf(const profiler::CollV1& c) { return c.nMaxChannels; }
int ChannelsOf(const profiler::CollV2& c) { return c.nMaxChannels; }
int ChannelsOf(const profiler::CollV3& c) { return c.nMaxChannels; }
int ChannelsOf(const profiler::CollV4& c) { return c.nChannels; }
int ChannelsOf(const profiler::P2pV1&) { return 0; }
int ChannelsOf(const profiler::P2pV2&) { return 0; }
int ChannelsOf(const profiler::P2pV4& p) { return p.nChannels; }

// startEvent of every table version.
template <typename Descr>
profiler::Result Start(void* context, void** handle, Descr* d) {
  *handle = nullptr;
  auto* init = static_cast<Context*>(context);
  if (!init) return 0;
  if (d->type == profiler::kColl) {
    const auto& c = d->coll;
    *handle = Begin(CommOf(init, c), d->rank, KindOf(c.func), c.count, TypeIndexOf(c.datatype),
                    c.root, c.seqNumber, AlgorithmOf(c.algo), ProtocolOf(c.proto), ChannelsOf(c));
  } else if (d->type == profiler::kP2p) {
    const auto& p = d->p2p;
    *handle = Begin(CommOf(init, p), d->rank, KindOf(p.func), p.count, TypeIndexOf(p.datatype),
                    p.peer, 0, NcclAlgorithm::Unknown, NcclProtocol::Unknown, ChannelsOf(p));
  }
  return 0;
}

profiler::Result Stop(void* handle) {
  auto* e = static_cast<Event*>(handle);
  if (!e) return 0;
  e->op.exit_ns = NowNs();
  if (Recorder::Get().active()) Recorder::Get().Append(std::move(e->op));
  delete e;
  return 0;
}

profiler::Result RecordState(void*, int, void*) { return 0; }

profiler::Result Finalize(void* context) {
  // Contexts stay: events of other communicators may still name them.
  (void)context;
  return 0;
}

}  // namespace
}  // namespace dltrace::record

namespace p = dltrace::record::profiler;
namespace r = dltrace::record;

// The tables NCCL looks up; every other symbol of the library is hidden.
// Each init notes which table NCCL took (it asks for the newest it knows).
namespace dltrace::record {
namespace {
constexpr char kV1[] = "v1", kV2[] = "v2", kV3[] = "v3", kV4[] = "v4", kV5[] = "v5";
p::Result NoteV1(void** c, int* m) { g_api = kV1; return InitV1(c, m); }
p::Result NoteV2(void** c, int* m) { g_api = kV2; return InitV1(c, m); }
p::Result NoteV3(void** c, int* m) { g_api = kV3; return InitV1(c, m); }
p::Result NoteV4(void** c, int* m, const char* n, uint64_t h, int nn, int nr, int rk, p::DebugLogger l) {
  g_api = kV4;
  return InitV4(c, m, n, h, nn, nr, rk, l);
}
p::Result NoteV5(void** c, uint64_t h, int* m, const char* n, int nn, int nr, int rk, p::DebugLogger l) {
  g_api = kV5;
  return InitV5(c, h, m, n, nn, nr, rk, l);
}
}  // namespace
}  // namespace dltrace::record

extern "C" {
__attribute__((visibility("default"))) p::TableV5 ncclProfiler_v5 = {
    "dltrace", r::NoteV5, r::Start<p::DescrV5>, r::Stop, r::RecordState, r::Finalize};
__attribute__((visibility("default"))) p::TableV4 ncclProfiler_v4 = {
    "dltrace", r::NoteV4, r::Start<p::DescrV4>, r::Stop, r::RecordState, r::Finalize};
__attribute__((visibility("default"))) p::TableV3 ncclProfiler_v3 = {
    "dltrace", r::NoteV3, r::Start<p::DescrV3>, r::Stop, r::RecordState, r::Finalize};
__attribute__((visibility("default"))) p::TableV2 ncclProfiler_v2 = {
    "dltrace", r::NoteV2, r::Start<p::DescrV2>, r::Stop, r::RecordState, r::Finalize};
__attribute__((visibility("default"))) p::TableV1 ncclProfiler_v1 = {
    "dltrace", r::NoteV1, r::Start<p::DescrV1>, r::Stop, r::RecordState, r::Finalize};
}
