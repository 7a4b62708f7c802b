// SPDX-License-Identifier: GPL-2.0-only
// The MPI side of the recorder: MpiCall (one recorded call), the communicator
// registry, nonblocking and persistent request tracking, and the C and
// Fortran wrappers generated from tables/mpi.py (record/gen_wrappers.py). C wrappers forward to
// PMPI_*, Fortran ones to the Fortran PMPI entry points, recording or not.
// The C++ bindings would pull in libmpi_cxx symbols; the C API is all we wrap.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "mpi_weak.h"
#include "recorder.h"

namespace dltrace::record {
namespace {

using formats::DataType;
using formats::OpKind;
using formats::RedOp;

struct CommEntry;
struct CommSlot {
  MPI_Comm comm;
  CommEntry* entry;
  uint64_t generation;  // of the communicator registry (g_comm_generation) when cached
};
struct TypeInfo {
  MPI_Datatype type;
  DataType kind;
  uint64_t size;
};
struct OpInfo {
  MPI_Op op;
  RedOp red;
};
// What the wrappers keep per thread, in one thread-local block (one GOT
// load reaches all of it).
struct MpiThreadState {
  int depth;  // > 0 inside a wrapper: nested MPI calls are not recorded
  // Most calls name the communicator of the call before.
  CommSlot last_comm;
  // ... and reuse one predefined datatype. Derived types are not cached,
  // since a freed handle can come back with another size.
  TypeInfo last_type;
  // The reduction other than MPI_SUM used last (FastReduction's cache;
  // predefined operations only, as a freed user op's handle may come back
  // as another).
  OpInfo last_op;
};
thread_local MpiThreadState t_mpi{
    0, {}, {MPI_DATATYPE_NULL, DataType::Unknown, 0}, {MPI_SUM, RedOp::Sum}};

// What every C and Fortran wrapper runs (MpiCall, the communicator and
// datatype caches' hits, the append): kept inline, as they are the hot
// path (out of line, MpiCall alone cost about 35 instructions a call).
#define DLTRACE_HOT __attribute__((always_inline)) inline

// ---- communicators -------------------------------------------------------

struct MpiOp;

struct CommEntry {
  uint32_t id = 0;
  int size = 0;
  int rank = 0;  // this process's rank in the communicator
  std::atomic<uint64_t> collective_seq{0};  // matches one collective across ranks
  std::atomic<uint64_t> p2p_seq{0};
  // An intercommunicator is described as both groups in world-rank order;
  // a peer (a rank of the remote group) is recorded as its index there.
  std::vector<int> remote_index;
  // Neighbourhood collectives: the topology's sources and destinations,
  // read once (under g_comm_mu).
  bool neighbors_known = false;
  std::vector<int> sources, destinations;
  // A window: its epoch (closing synchronisations so far) and the one-sided
  // ops waiting for the synchronisation that completes them.
  std::mutex window_mu;
  uint64_t epoch = 0;
  std::vector<MpiOp> held;
};

std::mutex g_comm_mu;
std::unordered_map<MPI_Comm, CommEntry*> g_comms;
std::atomic<uint64_t> g_comm_generation{1};  // bumped on every free: invalidates caches
MPI_Group g_world_group = MPI_GROUP_NULL;

// A communicator record for GROUP (members as world ranks, by translating
// through the groups), and its entry; REMOTE, for an intercommunicator, is
// the other group: then members are both groups in world-rank order.
CommEntry* AddEntryLocked(const char* name, MPI_Group group, MPI_Group remote, int64_t parent,
                          int color, int key) {
  auto* e = new CommEntry();  // never freed: a stale cache entry must stay readable
  e->id = Recorder::Get().NewCommunicatorId();
  formats::Communicator c;
  c.id = e->id;
  c.api = formats::Api::Mpi;
  c.name = name;
  PMPI_Group_size(group, &c.size);
  PMPI_Group_rank(group, &c.rank);
  auto world_ranks = [](MPI_Group g) {
    int n = 0;
    PMPI_Group_size(g, &n);
    std::vector<int> local(static_cast<size_t>(n)), world(static_cast<size_t>(n), -1);
    for (int i = 0; i < n; ++i) local[size_t(i)] = i;
    if (g_world_group != MPI_GROUP_NULL)
      PMPI_Group_translate_ranks(g, n, local.data(), g_world_group, world.data());
    return world;
  };
  std::vector<int> members = world_ranks(group);
  if (remote != MPI_GROUP_NULL) {
    std::vector<int> other = world_ranks(remote);
    const int self = c.rank >= 0 && c.rank < int(members.size()) ? members[size_t(c.rank)] : -1;
    std::vector<int> all = members;
    all.insert(all.end(), other.begin(), other.end());
    std::sort(all.begin(), all.end());
    auto index = [&](int w) { return int(std::lower_bound(all.begin(), all.end(), w) - all.begin()); };
    for (int w : other) e->remote_index.push_back(index(w));
    c.size = int(all.size());
    c.rank = index(self);
    members = all;
  }
  if (g_world_group != MPI_GROUP_NULL) c.members.assign(members.begin(), members.end());
  e->size = c.size;
  e->rank = c.rank;
  c.parent = parent;
  c.color = color;
  c.key = key;
  c.created_ns = uint64_t(NowNs());
  Recorder::Get().AddCommunicator(std::move(c));
  return e;
}

CommEntry* RegisterLocked(MPI_Comm comm, const char* name, int64_t parent, int color, int key) {
  MPI_Group group = MPI_GROUP_NULL, remote = MPI_GROUP_NULL;
  PMPI_Comm_group(comm, &group);
  int inter = 0;
  if (PMPI_Comm_test_inter(comm, &inter) == MPI_SUCCESS && inter)
    PMPI_Comm_remote_group(comm, &remote);
  CommEntry* e = AddEntryLocked(name, group, remote, parent, color, key);
  PMPI_Group_free(&group);
  if (remote != MPI_GROUP_NULL) PMPI_Group_free(&remote);
  g_comms[comm] = e;
  return e;
}

CommEntry* LookupCommSlow(MPI_Comm comm, uint64_t gen);

// Inline for the hot path: the communicator of the call before, checked
// against the generation (a freed handle may come back as another;
// generations start at 1, so the empty slot never hits).
__attribute__((always_inline)) inline CommEntry* LookupComm(MPI_Comm comm) {
  const uint64_t gen = g_comm_generation.load(std::memory_order_acquire);
  const CommSlot& last = t_mpi.last_comm;
  if (__builtin_expect(last.comm == comm && last.generation == gen, 1))
    return last.entry;
  return LookupCommSlow(comm, gen);
}

__attribute__((noinline)) CommEntry* LookupCommSlow(MPI_Comm comm, uint64_t gen) {
  thread_local std::array<CommSlot, 8> cache{};
  CommSlot& last = t_mpi.last_comm;
  CommSlot& s = cache[std::hash<MPI_Comm>()(comm) % cache.size()];
  if (s.entry && s.generation == gen && s.comm == comm) {
    last = s;
    return s.entry;
  }
  std::lock_guard<std::mutex> lock(g_comm_mu);
  auto it = g_comms.find(comm);
  // Communicators made by calls we do not wrap are registered on first use.
  CommEntry* e = it != g_comms.end() ? it->second : RegisterLocked(comm, "", -1, 0, 0);
  s = {comm, e, gen};
  last = s;
  return e;
}

// ---- datatypes and reductions --------------------------------------------

DataType DataTypeOf(MPI_Datatype t);

uint64_t QueryTypeSize(MPI_Datatype type) {
  if (type == MPI_DATATYPE_NULL) return 0;
  int size = 0;
  PMPI_Type_size(type, &size);
  return uint64_t(size > 0 ? size : 0);
}

const TypeInfo& DescribeNewType(MPI_Datatype type);

// (MPI_DATATYPE_NULL may hit: its cached description, kind Unknown and
// size 0, is the one DescribeNewType gives it.)
__attribute__((always_inline)) inline const TypeInfo& DescribeType(MPI_Datatype type) {
  if (__builtin_expect(type == t_mpi.last_type.type, 1)) return t_mpi.last_type;
  return DescribeNewType(type);
}

__attribute__((noinline)) const TypeInfo& DescribeNewType(MPI_Datatype type) {
  static thread_local TypeInfo fresh;
  fresh = {type, DataTypeOf(type), QueryTypeSize(type)};
  if (fresh.kind != DataType::Derived) t_mpi.last_type = fresh;
  return fresh;
}

uint64_t TypeSize(MPI_Datatype type) { return DescribeType(type).size; }

DataType DataTypeOf(MPI_Datatype t) {
  if (t == MPI_FLOAT) return DataType::Float32;
  if (t == MPI_DOUBLE) return DataType::Float64;
  if (t == MPI_INT || t == MPI_INT32_T) return DataType::Int32;
  if (t == MPI_UNSIGNED || t == MPI_UINT32_T) return DataType::Uint32;
  if (t == MPI_LONG || t == MPI_LONG_LONG || t == MPI_INT64_T) return DataType::Int64;
  if (t == MPI_UNSIGNED_LONG || t == MPI_UNSIGNED_LONG_LONG || t == MPI_UINT64_T)
    return DataType::Uint64;
  if (t == MPI_BYTE || t == MPI_PACKED) return DataType::Byte;
  if (t == MPI_CHAR) return DataType::Char;
  if (t == MPI_SIGNED_CHAR || t == MPI_INT8_T) return DataType::Int8;
  if (t == MPI_UNSIGNED_CHAR || t == MPI_UINT8_T) return DataType::Uint8;
  if (t == MPI_SHORT || t == MPI_INT16_T) return DataType::Int16;
  if (t == MPI_UNSIGNED_SHORT || t == MPI_UINT16_T) return DataType::Uint16;
  if (t == MPI_LONG_DOUBLE) return DataType::LongDouble;
  if (t == MPI_C_FLOAT_COMPLEX) return DataType::Complex64;
  if (t == MPI_C_DOUBLE_COMPLEX) return DataType::Complex128;
  if (t == MPI_2INT || t == MPI_FLOAT_INT || t == MPI_DOUBLE_INT || t == MPI_LONG_INT)
    return DataType::PairType;
  // Fortran's predefined types (mpif.h, use mpi, use mpi_f08).
  if (t == MPI_REAL || t == MPI_REAL4) return DataType::Float32;
  if (t == MPI_DOUBLE_PRECISION || t == MPI_REAL8) return DataType::Float64;
  if (t == MPI_INTEGER || t == MPI_INTEGER4) return DataType::Int32;
  if (t == MPI_INTEGER8) return DataType::Int64;
  if (t == MPI_INTEGER2) return DataType::Int16;
  if (t == MPI_INTEGER1) return DataType::Int8;
  if (t == MPI_CHARACTER) return DataType::Char;
  if (t == MPI_COMPLEX) return DataType::Complex64;
  if (t == MPI_DOUBLE_COMPLEX) return DataType::Complex128;
  if (t == MPI_2INTEGER || t == MPI_2REAL || t == MPI_2DOUBLE_PRECISION) return DataType::PairType;
  if (t == MPI_DATATYPE_NULL) return DataType::Unknown;
  return DataType::Derived;
}

RedOp RedOpOf(MPI_Op op) {
  if (op == MPI_SUM) return RedOp::Sum;
  if (op == MPI_PROD) return RedOp::Prod;
  if (op == MPI_MAX) return RedOp::Max;
  if (op == MPI_MIN) return RedOp::Min;
  if (op == MPI_LAND) return RedOp::LogicalAnd;
  if (op == MPI_LOR) return RedOp::LogicalOr;
  if (op == MPI_LXOR) return RedOp::LogicalXor;
  if (op == MPI_BAND) return RedOp::BitAnd;
  if (op == MPI_BOR) return RedOp::BitOr;
  if (op == MPI_BXOR) return RedOp::BitXor;
  if (op == MPI_MAXLOC) return RedOp::MaxLoc;
  if (op == MPI_MINLOC) return RedOp::MinLoc;
  if (op == MPI_REPLACE) return RedOp::Replace;
  return RedOp::User;
}

// ---- nonblocking requests ------------------------------------------------

// One call as a wrapper fills it in: the buffered record, and the per-peer
// byte counts of the v/w forms (empty, and free to carry, for the rest).
struct MpiOp : OpRecord {
  // Per-peer byte counts of the v/w forms; null for the rest (one pointer
  // for the hot path to set up, test and destroy, not two vectors).
  std::unique_ptr<PeerBytes> peers;

  MpiOp() = default;
  MpiOp(const OpRecord& r, PeerBytes* p) : OpRecord(r), peers(p) {}
  MpiOp(const MpiOp& o)  // persistent requests copy their template
      : OpRecord(o), peers(o.peers ? std::make_unique<PeerBytes>(*o.peers) : nullptr) {}
  MpiOp(MpiOp&&) = default;
  MpiOp& operator=(MpiOp&&) = default;
  MpiOp& operator=(const MpiOp& o) {
    if (this != &o) *this = MpiOp(o);
    return *this;
  }
  PeerBytes& Peers() {
    if (!peers) peers = std::make_unique<PeerBytes>();
    return *peers;
  }
};

// Hands OP to this thread's buffer.
DLTRACE_HOT void Emit(MpiOp& op) {
  if (__builtin_expect(op.peers == nullptr, 1))
    Recorder::Get().Append(op);
  else
    Recorder::Get().Append(op, op.peers.release());  // the flusher frees it
}

struct PendingOp {
  MpiOp op;
  MPI_Datatype datatype;  // to count received elements; null for collectives
  bool is_recv;
  const CommEntry* comm;  // translates an intercommunicator's source
};

// A peer as recorded: its rank, or on an intercommunicator (where PEER is a
// rank of the remote group) its index among both groups.
int PeerIndex(const CommEntry* e, int peer) {
  if (__builtin_expect(e == nullptr || e->remote_index.empty(), 1)) return peer;
  return peer >= 0 && size_t(peer) < e->remote_index.size() ? e->remote_index[size_t(peer)] : peer;
}

// A persistent request (MPI_*_init): the op each MPI_Start of it issues.
struct PersistentOp {
  PendingOp op;
  CommEntry* comm;  // numbers each start in the communicator's sequence
};

// Sharded so that threads completing different requests rarely meet.
// Several pending ops may share one handle: Open MPI hands out its one
// ompi_request_empty for every MPI_Isend that completed inline, so two such
// sends in flight are two ops on one handle, completed first in, first out.
struct RequestShard {
  std::mutex mu;
  std::unordered_map<MPI_Request, std::deque<PendingOp>> pending;
  std::unordered_map<MPI_Request, PersistentOp> persistent;

  void Push(MPI_Request r, PendingOp&& p) { pending[r].push_back(std::move(p)); }
  // The oldest op pending on R into *OUT; false when none is.
  bool Pop(MPI_Request r, PendingOp* out) {
    auto it = pending.find(r);
    if (it == pending.end()) return false;
    *out = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) pending.erase(it);
    return true;
  }
};
std::array<RequestShard, 64> g_requests;

RequestShard& ShardOf(MPI_Request r) { return g_requests[std::hash<MPI_Request>()(r) % 64]; }

// ---- one recorded call ---------------------------------------------------

// Persistent requests an MPI_Start/Startall of this thread is starting
// (calls do not nest, so one list per thread serves; MpiCall stays small).
thread_local std::vector<std::pair<MPI_Request, PendingOp>> t_started;
// The same for the statuses an ignored-status call needs and the requests
// a Wait/Test watches: per thread, so that no call constructs them.
thread_local MPI_Status t_status;
thread_local std::vector<MPI_Status> t_statuses;
thread_local std::vector<MPI_Request> t_watched;

// Whether a wrapper of this thread holds its next slot (a fast call inside
// whose PMPI this call runs, since an ordinary one also counts in t_mpi.depth).
DLTRACE_HOT bool SlotReserved() {
  const Recorder::ThreadBuffer* b = t_thread_buffer;
  return b != nullptr && b->reserved_by != nullptr;
}

class MpiCall {
 public:
  DLTRACE_HOT explicit MpiCall(OpKind kind) {
    // MPI_Init runs its `after` before the recorder exists: it starts it.
    // Get() first: it picks the clock (g_tsc_clock), which MPI_Init's record
    // must read at its enter as at its exit.
    Recorder& r = Recorder::Get();
    // Nested: inside an ordinary wrapper (t_mpi.depth) or a fast one (which
    // reserves the thread's slot, FastMpiCall).
    active_ = t_mpi.depth == 0 && (kind == OpKind::MpiInit || r.active()) && !SlotReserved();
    if (active_) {
      ++t_mpi.depth;
      // The record is made where it will stay: the thread's next slot in
      // its block (no copy), or the spare while there is none at hand.
      OpRecord* rec = r.Reserve(&rec_);
      if (__builtin_expect(rec == nullptr, 0)) rec = Recorder::SpareRecord();
      rec_ = rec;
      // A fresh record, field by field (the compiler merges the constant
      // stores; value-initialising in place took a `rep stos`). Every
      // field is written: the slot holds an older call's record.
      static_assert(sizeof(OpRecord) == 96, "a field added to OpRecord is set here too");
      const bool tsc = g_tsc_clock.load(std::memory_order_relaxed);
      rec->kind = kind;
      rec->datatype = DataType::Unknown;
      rec->red_op = RedOp::None;
      rec->flags = tsc ? OpRecord::kTicks : 0;
      rec->comm = formats::kNoCommunicator;
      rec->peer = -1;
      rec->tag = -1;
      rec->group = 0;
      rec->nccl_algorithm = formats::NcclAlgorithm::Unknown;
      rec->nccl_protocol = formats::NcclProtocol::Unknown;
      rec->nccl_channels = 0;
      rec->count = rec->bytes = rec->seq = rec->stream = 0;
      rec->exit_ns = rec->gpu_start_ns = rec->gpu_end_ns = rec->completion_ns = 0;
      rec->enter_ns = NowTicks(tsc);
    }
  }
  DLTRACE_HOT ~MpiCall() { Finish(); }
  bool active() const { return active_; }
  OpRecord& op() { return *rec_; }
  // The per-peer byte counts of a v/w form (made on first use).
  PeerBytes& Peers() {
    if (!peers_) peers_ = new PeerBytes();
    return *peers_;
  }
  void Discard() { record_ = false; }
  // A call that moves data but cannot be recorded: counted by name, never lost silently.
  void Unrecorded() {
    record_ = false;
    Recorder::Get().CountUnrecorded(formats::OpKindName(rec_->kind));
  }
  void SetComm(CommEntry* e) { comm_ = e; }
  CommEntry* comm() const { return comm_; }

  MPI_Status* StatusFor(MPI_Status* s) { return s == MPI_STATUS_IGNORE ? &t_status : s; }
  MPI_Status* StatusesFor(int n, MPI_Status* s) {
    if (s != MPI_STATUSES_IGNORE) return s;
    t_statuses.resize(size_t(n > 0 ? n : 0));
    return t_statuses.data();
  }

  // A nonblocking call: its op waits in the request table for completion.
  void Pend(MPI_Request* request, MPI_Datatype type, bool is_recv) {
    if (!request || *request == MPI_REQUEST_NULL || !record_) return;
    rec_->exit_ns = NowFor(*rec_);
    RequestShard& shard = ShardOf(*request);
    std::lock_guard<std::mutex> lock(shard.mu);
    shard.Push(*request, {TakeOp(), type, is_recv, comm_});
  }
  // Wait/Test: remember the handles, which PMPI overwrites on completion.
  void Watch(int n, const MPI_Request* requests) {
    t_watched.assign(requests, requests + (n > 0 ? n : 0));
    rec_->count = uint64_t(n > 0 ? n : 0);
  }
  void Completed(int i, const MPI_Status* status) {
    if (i < 0 || size_t(i) >= t_watched.size() || t_watched[size_t(i)] == MPI_REQUEST_NULL) return;
    MPI_Request r = t_watched[size_t(i)];
    RequestShard& shard = ShardOf(r);
    PendingOp p;
    {
      std::lock_guard<std::mutex> lock(shard.mu);
      if (!shard.Pop(r, &p)) return;  // unrecorded, or an inactive persistent request
    }
    p.op.completion_ns = NowFor(p.op);
    p.op.flags |= OpRecord::kCompletion;
    if (p.is_recv && status) {
      int count = 0;
      if (PMPI_Get_count(status, p.datatype, &count) == MPI_SUCCESS && count != MPI_UNDEFINED) {
        p.op.count = uint64_t(count);
        p.op.bytes = uint64_t(count) * TypeSize(p.datatype);
      }
      p.op.peer = PeerIndex(p.comm, status->MPI_SOURCE);
      p.op.tag = status->MPI_TAG;
    }
    Emit(p.op);
  }
  // MPI_*_init: the op filled in by `before` becomes the request's template.
  void Persist(MPI_Request* request, MPI_Datatype type, bool is_recv) {
    if (!request || *request == MPI_REQUEST_NULL || !record_) return;
    RequestShard& shard = ShardOf(*request);
    std::lock_guard<std::mutex> lock(shard.mu);
    shard.persistent[*request] = {{TakeOp(), type, is_recv, comm_}, comm_};
  }
  // MPI_Start/Startall: one op per started persistent request, pending from
  // the call's return like a nonblocking call's (Started, after the call).
  void Start(int n, const MPI_Request* requests) {
    record_ = false;  // the start itself is not an operation
    t_started.clear();
    for (int i = 0; i < n; ++i) {
      RequestShard& shard = ShardOf(requests[i]);
      std::lock_guard<std::mutex> lock(shard.mu);
      auto it = shard.persistent.find(requests[i]);
      if (it == shard.persistent.end()) continue;
      t_started.push_back({requests[i], it->second.op});
      MpiOp& op = t_started.back().second.op;
      op.enter_ns = rec_->enter_ns;
      op.seq = it->second.comm->p2p_seq.fetch_add(1, std::memory_order_relaxed);
    }
  }
  void Started() {
    for (auto& [request, p] : t_started) {
      p.op.exit_ns = NowFor(p.op);
      RequestShard& shard = ShardOf(request);
      std::lock_guard<std::mutex> lock(shard.mu);
      shard.Push(request, std::move(p));
    }
    t_started.clear();
  }
  // MPI_Request_free: forget a persistent request; an operation still
  // pending on it was issued all the same (kept, without completion time).
  void Free(const MPI_Request* request) {
    record_ = false;
    if (!request || *request == MPI_REQUEST_NULL) return;
    RequestShard& shard = ShardOf(*request);
    PendingOp p;
    {
      std::lock_guard<std::mutex> lock(shard.mu);
      shard.persistent.erase(*request);
      if (!shard.Pop(*request, &p)) return;
    }
    Emit(p.op);  // outside the lock: it may wait for the flusher
  }

  void AllCompleted(int n, const MPI_Status* statuses) {
    for (int i = 0; i < n; ++i) Completed(i, statuses ? &statuses[i] : nullptr);
  }
  void AnyCompleted(const int* index, const MPI_Status* status) {
    if (*index != MPI_UNDEFINED) Completed(*index, status);
  }
  void SomeCompleted(const int* outcount, const int* indices, const MPI_Status* statuses) {
    if (*outcount == MPI_UNDEFINED) return;
    for (int k = 0; k < *outcount; ++k) Completed(indices[k], statuses ? &statuses[k] : nullptr);
  }

  // A one-sided op: held on its window until the synchronisation that
  // completes it writes it (WindowSync).
  void Hold(MPI_Win) {
    if (!record_ || !comm_) return;
    rec_->exit_ns = NowFor(*rec_);
    std::lock_guard<std::mutex> lock(comm_->window_mu);
    comm_->held.push_back(TakeOp());
  }

  DLTRACE_HOT void Finish() {
    if (!active_) return;
    active_ = false;
    --t_mpi.depth;
    // A call that ends after recording stopped (MPI_Finalize) puts its op
    // where no drain reads it; MPI_Init's, when the recorder did not start,
    // is discarded by OnInit.
    if (__builtin_expect(!record_, 0)) {
      Recorder::Release();
      delete peers_;
      return;
    }
    rec_->exit_ns = NowFor(*rec_);
    Recorder::Commit(rec_, peers_);  // the flusher frees the per-peer counts
  }

 private:
  // The record, to keep elsewhere (a request's, a window's): this call
  // writes none.
  MpiOp TakeOp() {
    record_ = false;
    PeerBytes* p = peers_;
    peers_ = nullptr;
    return MpiOp(*rec_, p);
  }

  OpRecord* rec_;  // in the block (Recorder::Reserve) or the spare; set while active_
  PeerBytes* peers_ = nullptr;
  bool active_ = false;
  bool record_ = true;
  CommEntry* comm_ = nullptr;
};

// ---- what each call records (used by the table's before/after clauses) ----

DLTRACE_HOT void OnComm(MpiCall& c, MPI_Comm comm, bool collective) {
  CommEntry* e = LookupComm(comm);
  c.SetComm(e);
  c.op().comm = e->id;
  if (collective) {
    // No read-modify-write: threads that issue collectives on one
    // communicator must order them themselves (MPI-3.1, 12.4.2), so a
    // plain increment serves.
    const uint64_t seq = e->collective_seq.load(std::memory_order_relaxed);
    e->collective_seq.store(seq + 1, std::memory_order_relaxed);
    c.op().seq = seq;
  } else {
    c.op().seq = e->p2p_seq.fetch_add(1, std::memory_order_relaxed);
  }
}

void DescribePointToPoint(MpiCall& c, int count, MPI_Datatype type, int peer, int tag) {
  OpRecord& op = c.op();
  const TypeInfo& t = DescribeType(type);
  op.count = uint64_t(count > 0 ? count : 0);
  op.datatype = t.kind;
  op.bytes = op.count * t.size;
  op.peer = PeerIndex(c.comm(), peer);
  op.tag = tag;
}

void PointToPoint(MpiCall& c, int count, MPI_Datatype type, int peer, int tag, MPI_Comm comm) {
  OnComm(c, comm, false);
  DescribePointToPoint(c, count, type, peer, tag);
}

// A persistent request's template: its sequence number comes at each start.
void PointToPointInit(MpiCall& c, int count, MPI_Datatype type, int peer, int tag,
                      MPI_Comm comm) {
  CommEntry* e = LookupComm(comm);
  c.SetComm(e);
  c.op().comm = e->id;
  DescribePointToPoint(c, count, type, peer, tag);
}

void ReceivedFrom(MpiCall& c, const MPI_Status* status, MPI_Datatype type) {
  int count = 0;
  if (PMPI_Get_count(status, type, &count) == MPI_SUCCESS && count != MPI_UNDEFINED) {
    c.op().count = uint64_t(count);
    c.op().bytes = uint64_t(count) * TypeSize(type);
  }
  c.op().peer = PeerIndex(c.comm(), status->MPI_SOURCE);
  c.op().tag = status->MPI_TAG;
}

// Both directions of a sendrecv, as per-peer byte counts (index = comm rank).
void SendRecv(MpiCall& c, int scount, MPI_Datatype stype, int dest, int stag, int rcount,
              MPI_Datatype rtype, int source, MPI_Comm comm) {
  PointToPoint(c, scount, stype, dest, stag, comm);
  int n = c.comm()->size;
  c.Peers().send.assign(size_t(n), 0);
  c.Peers().recv.assign(size_t(n), 0);
  dest = PeerIndex(c.comm(), dest);
  source = PeerIndex(c.comm(), source);
  if (dest >= 0 && dest < n) c.Peers().send[size_t(dest)] = c.op().bytes;
  if (source >= 0 && source < n)
    c.Peers().recv[size_t(source)] = uint64_t(rcount > 0 ? rcount : 0) * TypeSize(rtype);
}

void SendRecvDone(MpiCall& c, const MPI_Status* status, MPI_Datatype rtype) {
  int count = 0, src = PeerIndex(c.comm(), status->MPI_SOURCE);
  auto& recv = c.Peers().recv;
  if (PMPI_Get_count(status, rtype, &count) == MPI_SUCCESS && count != MPI_UNDEFINED &&
      src >= 0 && size_t(src) < recv.size()) {
    std::fill(recv.begin(), recv.end(), 0);
    recv[size_t(src)] = uint64_t(count) * TypeSize(rtype);
  }
}

void Probe(MpiCall& c, int source, int tag, MPI_Comm comm) {
  OnComm(c, comm, false);
  c.op().peer = PeerIndex(c.comm(), source);
  c.op().tag = tag;
}

void ProbeDone(MpiCall& c, const MPI_Status* status) {
  int count = 0;
  if (PMPI_Get_count(status, MPI_BYTE, &count) == MPI_SUCCESS && count != MPI_UNDEFINED)
    c.op().bytes = uint64_t(count);
  c.op().peer = PeerIndex(c.comm(), status->MPI_SOURCE);
  c.op().tag = status->MPI_TAG;
}

DLTRACE_HOT void Collective(MpiCall& c, MPI_Comm comm, int count, MPI_Datatype type,
                            uint64_t ranks_factor, int root) {
  OnComm(c, comm, true);
  OpRecord& op = c.op();
  op.count = uint64_t(count > 0 ? count : 0);
  if (type) {
    const TypeInfo& t = DescribeType(type);
    op.datatype = t.kind;
    op.bytes = op.count * t.size * ranks_factor;
  }
  op.peer = root;
}

DLTRACE_HOT void Reduction(MpiCall& c, MPI_Op op) {
  if (__builtin_expect(op == MPI_SUM, 1)) {
    c.op().red_op = RedOp::Sum;
    return;
  }
  const RedOp r = RedOpOf(op);
  if (r != RedOp::User) t_mpi.last_op = {op, r};
  c.op().red_op = r;
}

// ---- the fast path ---------------------------------------------------------
// A row whose clauses only describe the call (a blocking collective or
// send: `before` made of Collective, Reduction and PointToPoint, no
// `after`) gets a second, shorter form from the generator:
//
//   FastMpiCall c;
//   if (c.Begin(OpKind::kind) && FastCollective(c, ...) && ...) {
//     if (!c.Enter()) return c.CallOnMonotonic(&PMPI_x, args);
//     rc = PMPI_x(args); c.Exit(); return rc;
//   }
//   return the row's ordinary wrapper (MpiCall);
//
// Begin and the Fast clauses only check and fill the thread's next slot,
// which is not yet published: everything unusual (not recording, nested,
// no slot at hand, a communicator, datatype or reduction not in this
// thread's caches) answers false before any side effect, and the ordinary
// wrapper takes the call from the start. Either clock serves: off the TSC
// (g_fast_record says kFastMonotonic) Enter answers false once the slot
// is reserved, and CallOnMonotonic, out of line, reads clock_gettime around
// PMPI, so that the TSC's form calls nothing but PMPI: it keeps two
// registers across it and reads no state twice (about 95 instructions
// against 165 for MpiCall on an 8 B MPI_Allreduce, callgrind).
class FastMpiCall {
 public:
  // The thread's next slot, if the fast path may take this call. A call
  // is nested when t_mpi.depth > 0 (inside an ordinary wrapper) or the
  // thread's slot is reserved (inside a fast one, or an ordinary one that
  // took the slot): then the call is forwarded untouched, by MpiCall.
  DLTRACE_HOT bool Begin(OpKind kind) {
    Recorder::ThreadBuffer* b = t_thread_buffer;
    if (__builtin_expect(b == nullptr ||
                             g_fast_record.load(std::memory_order_relaxed) == kFastOff, 0))
      return false;
    const uint32_t pos = b->write_pos;
    if (__builtin_expect(pos >= b->write_limit || b->reserved_by != nullptr || t_mpi.depth != 0, 0))
      return false;
    b_ = b;
    OpRecord* rec = &b->write->events[pos].op;
    // Kept in a register: without this, GCC recomputes the address from
    // the block and the position at every use.
    asm("" : "+r"(rec));
    rec_ = rec;
    // The fields no fast clause sets (the slot holds an older record);
    // each clause sets all of its own, once every check passed.
    static_assert(sizeof(OpRecord) == 96, "a field added to OpRecord is set here too");
    rec->kind = kind;
    rec->flags = OpRecord::kTicks;  // CallOnMonotonic clears it
    rec->group = 0;
    rec->nccl_algorithm = formats::NcclAlgorithm::Unknown;
    rec->nccl_protocol = formats::NcclProtocol::Unknown;
    rec->nccl_channels = 0;
    rec->stream = 0;
    // gpu_start_ns, gpu_end_ns and completion_ns stay as the slot had
    // them: no reader looks at them unless `flags` says they are set
    // (PutTimes, ExpandRecord), and a fast call sets neither flag.
    reinterpret_cast<BufferedOp*>(rec)->extras = nullptr;  // `op` is BufferedOp's first member
    return true;
  }
  OpRecord& op() { return *rec_; }
  // The communicator's sequence this call takes its number from (in
  // Enter, once every check passed).
  void Sequence(std::atomic<uint64_t>* seq, bool collective) {
    seq_ = seq;
    collective_ = collective;
  }
  // Every check passed: the call is recorded. True: on the TSC, its enter
  // time taken; false: on CLOCK_MONOTONIC, for CallOnMonotonic to time.
  // (g_fast_record read again rather than kept from Begin: one load
  // instead of a register held across the clauses.)
  DLTRACE_HOT bool Enter() {
    Reserve();
    if (__builtin_expect(g_fast_record.load(std::memory_order_relaxed) != kFastTsc, 0))
      return false;
    StoreTicks(&rec_->enter_ns);
    return true;
  }
  DLTRACE_HOT void Exit() {
    Recorder::ThreadBuffer* b = b_;
    if (__builtin_expect(b->reserved_by != nullptr, 1)) {
      StoreTicks(&rec_->exit_ns);
      Publish(b);
      return;
    }
    StoreTicks(&b->fast_owner->exit_ns);
    Recorder::CommitSpilled(b->fast_owner);
  }
  // F(ARGS) between enter and exit times of CLOCK_MONOTONIC, after an
  // Enter that said false. Out of line, and given only the slot and the
  // buffer, so that the TSC's form keeps no more registers for it.
  template <typename F, typename... A>
  DLTRACE_HOT int CallOnMonotonic(F* f, A... args) {
    return MonotonicCall(b_, rec_, f, args...);
  }
  template <typename F, typename... A>
  __attribute__((noinline)) static int MonotonicCall(Recorder::ThreadBuffer* b, OpRecord* rec,
                                                     F* f, A... args) {
    rec->flags = 0;
    rec->enter_ns = NowNs();
    const int rc = f(args...);
    if (__builtin_expect(b->reserved_by != nullptr, 1)) {
      rec->exit_ns = NowNs();
      Publish(b);
    } else {
      b->fast_owner->exit_ns = NowNs();
      Recorder::CommitSpilled(b->fast_owner);
    }
    return rc;
  }
  // The reduction (FastReduction), written with the rest in Enter.
  void SetReduction(RedOp r) { red_op_ = r; }

 private:
  // The sequence number, the reservation and the reduction: Enter's part
  // before the clock.
  DLTRACE_HOT void Reserve() {
    if (collective_) {
      // A plain increment, as in OnComm: collectives on one communicator
      // are ordered by the program.
      const uint64_t n = seq_->load(std::memory_order_relaxed);
      seq_->store(n + 1, std::memory_order_relaxed);
      rec_->seq = n;
    } else {
      rec_->seq = seq_->fetch_add(1, std::memory_order_relaxed);
    }
    // Reserved as MpiCall reserves: this makes calls from inside PMPI
    // nested, and an append from this thread meanwhile (an NCCL op
    // recorded inside the MPI library) moves the record to the spare and
    // says where in fast_owner.
    b_->reserved_by = &b_->fast_owner;
    rec_->red_op = red_op_;
  }
  // The record, still in its slot, published with its exit time.
  DLTRACE_HOT static void Publish(Recorder::ThreadBuffer* b) {
    b->reserved_by = nullptr;
    const uint32_t n = b->write_pos + 1;
    b->write_pos = n;
    b->write->count.store(n, std::memory_order_release);
  }

  Recorder::ThreadBuffer* b_ = nullptr;
  OpRecord* rec_ = nullptr;
  std::atomic<uint64_t>* seq_ = nullptr;
  bool collective_ = true;
  RedOp red_op_ = RedOp::None;
};

// The communicator of the call before, or null (no call of this thread
// used it since the last free): LookupComm's hit without its miss.
DLTRACE_HOT bool CachedComm(MPI_Comm comm, CommEntry** entry) {
  const CommSlot& last = t_mpi.last_comm;
  *entry = last.entry;
  // (Generations start at 1: the empty slot, generation 0, never hits.)
  return last.comm == comm && last.generation == g_comm_generation.load(std::memory_order_acquire);
}

// Collective, fast: every field it and OnComm set (red_op: Enter writes
// FastReduction's, or None).
DLTRACE_HOT bool FastCollective(FastMpiCall& c, MPI_Comm comm, int count, MPI_Datatype type,
                                uint64_t ranks_factor, int root) {
  CommEntry* e;
  if (__builtin_expect(!CachedComm(comm, &e) || (type && type != t_mpi.last_type.type), 0))
    return false;
  OpRecord& op = c.op();
  op.comm = e->id;
  op.count = uint64_t(count > 0 ? count : 0);
  op.datatype = type ? t_mpi.last_type.kind : DataType::Unknown;
  op.bytes = type ? op.count * t_mpi.last_type.size * ranks_factor : 0;
  op.peer = root;
  op.tag = -1;
  c.Sequence(&e->collective_seq, true);
  return true;
}

DLTRACE_HOT bool FastReduction(FastMpiCall& c, MPI_Op op) {
  if (__builtin_expect(op == MPI_SUM, 1)) {
    c.SetReduction(RedOp::Sum);
    return true;
  }
  if (op != t_mpi.last_op.op) return false;
  c.SetReduction(t_mpi.last_op.red);
  return true;
}

DLTRACE_HOT bool FastPointToPoint(FastMpiCall& c, int count, MPI_Datatype type, int peer, int tag,
                                  MPI_Comm comm) {
  CommEntry* e;
  // (An intercommunicator's peers are translated: the ordinary path.)
  if (__builtin_expect(
          !CachedComm(comm, &e) || type != t_mpi.last_type.type || !e->remote_index.empty(), 0))
    return false;
  OpRecord& op = c.op();
  op.comm = e->id;
  op.count = uint64_t(count > 0 ? count : 0);
  op.datatype = t_mpi.last_type.kind;
  op.bytes = op.count * t_mpi.last_type.size;
  op.peer = peer;
  op.tag = tag;
  c.Sequence(&e->p2p_seq, false);
  return true;
}

// Gather/Scatter/Allgather/Alltoall: bytes are the whole gathered buffer
// (this rank's block times the ranks), as nccl-tests counts them. `own` is
// the side every rank passes; with MPI_IN_PLACE the other side says it.
void Rooted(MpiCall& c, MPI_Comm comm, int root, const void* own_buf, int own_count,
            MPI_Datatype own_type, int other_count, MPI_Datatype other_type) {
  OnComm(c, comm, true);
  bool in_place = own_buf == MPI_IN_PLACE;
  int count = in_place ? other_count : own_count;
  MPI_Datatype type = in_place ? other_type : own_type;
  OpRecord& op = c.op();
  op.count = uint64_t(count > 0 ? count : 0);
  op.datatype = DataTypeOf(type);
  op.bytes = op.count * TypeSize(type) * uint64_t(c.comm()->size);
  op.peer = root;
}

std::vector<uint64_t> PerPeer(const int counts[], int n, MPI_Datatype type) {
  std::vector<uint64_t> out(static_cast<size_t>(n));
  uint64_t size = TypeSize(type);
  for (int i = 0; i < n; ++i) out[size_t(i)] = uint64_t(counts[i] > 0 ? counts[i] : 0) * size;
  return out;
}

uint64_t Sum(const std::vector<uint64_t>& v) {
  uint64_t s = 0;
  for (auto x : v) s += x;
  return s;
}

void Gatherv(MpiCall& c, MPI_Comm comm, int root, const void* sendbuf, int scount,
             MPI_Datatype stype, const int rcounts[], MPI_Datatype rtype) {
  OnComm(c, comm, true);
  OpRecord& op = c.op();
  const int rank = c.comm()->rank;
  op.peer = root;
  op.datatype = DataTypeOf(sendbuf == MPI_IN_PLACE ? rtype : stype);
  op.count = uint64_t(scount > 0 ? scount : 0);
  // recvcounts matter at the root (gatherv) or everywhere (allgatherv).
  if (root < 0 || rank == root) {
    c.Peers().recv = PerPeer(rcounts, c.comm()->size, rtype);
    op.bytes = Sum(c.Peers().recv);
  } else {
    op.bytes = op.count * TypeSize(stype);
  }
}

void Scatterv(MpiCall& c, MPI_Comm comm, int root, const int scounts[], MPI_Datatype stype,
              const void* recvbuf, int rcount, MPI_Datatype rtype) {
  OnComm(c, comm, true);
  OpRecord& op = c.op();
  const int rank = c.comm()->rank;
  op.peer = root;
  op.datatype = DataTypeOf(recvbuf == MPI_IN_PLACE ? stype : rtype);
  op.count = uint64_t(rcount > 0 ? rcount : 0);
  if (rank == root) {
    c.Peers().send = PerPeer(scounts, c.comm()->size, stype);
    op.bytes = Sum(c.Peers().send);
  } else {
    op.bytes = op.count * TypeSize(rtype);
  }
}

void Alltoallv(MpiCall& c, MPI_Comm comm, const void* sendbuf, const int scounts[],
               const MPI_Datatype stypes[], const int rcounts[], const MPI_Datatype rtypes[],
               bool per_peer_types) {
  OnComm(c, comm, true);
  OpRecord& op = c.op();
  int n = c.comm()->size;
  c.Peers().recv.resize(size_t(n));
  c.Peers().send.resize(size_t(n));
  for (int i = 0; i < n; ++i) {
    MPI_Datatype rt = per_peer_types ? rtypes[i] : rtypes[0];
    c.Peers().recv[size_t(i)] = uint64_t(rcounts[i] > 0 ? rcounts[i] : 0) * TypeSize(rt);
    // In place, what each rank sends equals what it receives.
    if (sendbuf == MPI_IN_PLACE) {
      c.Peers().send[size_t(i)] = c.Peers().recv[size_t(i)];
    } else {
      MPI_Datatype st = per_peer_types ? stypes[i] : stypes[0];
      c.Peers().send[size_t(i)] = uint64_t(scounts[i] > 0 ? scounts[i] : 0) * TypeSize(st);
    }
  }
  op.datatype = per_peer_types ? DataType::Derived : DataTypeOf(rtypes[0]);
  op.bytes = Sum(c.Peers().send);
}

void ReduceScatter(MpiCall& c, MPI_Comm comm, const int rcounts[], int block,
                   MPI_Datatype type) {
  OnComm(c, comm, true);
  OpRecord& op = c.op();
  int n = c.comm()->size;
  op.datatype = DataTypeOf(type);
  if (rcounts) {
    c.Peers().recv = PerPeer(rcounts, n, type);
    op.bytes = Sum(c.Peers().recv);
    const int rank = c.comm()->rank;
    op.count = uint64_t(rcounts[rank] > 0 ? rcounts[rank] : 0);
  } else {
    op.count = uint64_t(block > 0 ? block : 0);
    op.bytes = op.count * TypeSize(type) * uint64_t(n);
  }
}

// ---- matched probes ---------------------------------------------------------

// A message handle found by Mprobe/Improbe, until Mrecv/Imrecv takes it.
std::mutex g_message_mu;
std::unordered_map<MPI_Message, CommEntry*> g_messages;

void Matched(MpiCall& c, const MPI_Message* message) {
  if (!message || *message == MPI_MESSAGE_NULL || *message == MPI_MESSAGE_NO_PROC) return;
  std::lock_guard<std::mutex> lock(g_message_mu);
  g_messages[*message] = c.comm();
}

// The receive of a matched message: a point-to-point receive on the
// communicator it was probed on (a message from MPI_PROC_NULL moves nothing;
// one probed where the recorder did not see it, through PMPI, is counted).
void MatchedRecv(MpiCall& c, int count, MPI_Datatype type, const MPI_Message* message) {
  CommEntry* e = nullptr;
  if (message && *message != MPI_MESSAGE_NO_PROC) {
    std::lock_guard<std::mutex> lock(g_message_mu);
    auto it = g_messages.find(*message);
    if (it != g_messages.end()) {
      e = it->second;
      g_messages.erase(it);
    }
  }
  if (!e) {
    if (message && *message == MPI_MESSAGE_NO_PROC) c.Discard();
    else c.Unrecorded();
    return;
  }
  c.SetComm(e);
  c.op().comm = e->id;
  c.op().seq = e->p2p_seq.fetch_add(1, std::memory_order_relaxed);
  DescribePointToPoint(c, count, type, MPI_ANY_SOURCE, MPI_ANY_TAG);
}

// ---- neighbourhood collectives ----------------------------------------------

// The communicator's neighbours in the order of the send and receive buffers
// (MPI-3.1 7.6): a Cartesian topology lists, per dimension, the neighbour in
// the negative then the positive direction, for both; MPI_PROC_NULL stays in
// place (it moves nothing).
void ReadNeighbors(CommEntry* e, MPI_Comm comm) {
  std::lock_guard<std::mutex> lock(g_comm_mu);
  if (e->neighbors_known) return;
  int topo = MPI_UNDEFINED;
  PMPI_Topo_test(comm, &topo);
  if (topo == MPI_CART) {
    int ndims = 0;
    PMPI_Cartdim_get(comm, &ndims);
    for (int d = 0; d < ndims; ++d) {
      int src = MPI_PROC_NULL, dst = MPI_PROC_NULL;
      PMPI_Cart_shift(comm, d, 1, &src, &dst);
      e->sources.insert(e->sources.end(), {src, dst});
    }
    e->destinations = e->sources;
  } else if (topo == MPI_GRAPH) {
    int n = 0;
    PMPI_Graph_neighbors_count(comm, e->rank, &n);
    e->sources.resize(size_t(n));
    PMPI_Graph_neighbors(comm, e->rank, n, e->sources.data());
    e->destinations = e->sources;
  } else if (topo == MPI_DIST_GRAPH) {
    int in = 0, out = 0, weighted = 0;
    PMPI_Dist_graph_neighbors_count(comm, &in, &out, &weighted);
    e->sources.resize(size_t(in));
    e->destinations.resize(size_t(out));
    std::vector<int> in_w(size_t(in) + 1), out_w(size_t(out) + 1);
    PMPI_Dist_graph_neighbors(comm, in, e->sources.data(), in_w.data(), out, e->destinations.data(),
                              out_w.data());
  }
  e->neighbors_known = true;
}

// Bytes to each destination and from each source, summed per communicator
// rank. COUNTS (or else COUNT for every neighbour) and TYPES (per neighbour
// when PER_PEER_TYPES, else TYPES[0]) give a side; BLOCK_PER_PEER says
// whether neighbour k gets block k (alltoall) or all get the same (allgather).
void Neighbor(MpiCall& c, MPI_Comm comm, const int* scounts, int scount,
              const MPI_Datatype* stypes, bool send_block_per_peer, const int* rcounts, int rcount,
              const MPI_Datatype* rtypes, bool recv_block_per_peer, bool per_peer_types = false) {
  OnComm(c, comm, true);
  CommEntry* e = c.comm();
  if (!e->neighbors_known) ReadNeighbors(e, comm);
  OpRecord& op = c.op();
  c.Peers().send.assign(size_t(e->size), 0);
  c.Peers().recv.assign(size_t(e->size), 0);
  auto add = [&](const std::vector<int>& peers, const int* counts, int count,
                 const MPI_Datatype* types, bool per_peer, std::vector<uint64_t>& out) {
    uint64_t elements = 0;
    for (size_t k = 0; k < peers.size(); ++k) {
      const int n = counts && per_peer ? counts[k] : count;
      const MPI_Datatype t = per_peer_types ? types[k] : types[0];
      elements += uint64_t(n > 0 ? n : 0);
      if (peers[k] >= 0 && peers[k] < e->size)
        out[size_t(peers[k])] += uint64_t(n > 0 ? n : 0) * TypeSize(t);
    }
    return elements;
  };
  op.count = add(e->destinations, scounts, scount, stypes, send_block_per_peer, c.Peers().send);
  add(e->sources, rcounts, rcount, rtypes, recv_block_per_peer || rcounts, c.Peers().recv);
  op.datatype = per_peer_types ? DataType::Derived : DataTypeOf(stypes[0]);
  op.bytes = Sum(c.Peers().send);
}

// ---- one-sided communication -------------------------------------------------

std::unordered_map<MPI_Win, CommEntry*> g_windows;  // under g_comm_mu

CommEntry* LookupWindow(MPI_Win win) {
  thread_local MPI_Win last_win = MPI_WIN_NULL;
  thread_local CommEntry* last = nullptr;
  thread_local uint64_t last_generation = 0;
  uint64_t gen = g_comm_generation.load(std::memory_order_acquire);
  if (win == last_win && last && gen == last_generation) return last;
  std::lock_guard<std::mutex> lock(g_comm_mu);
  auto it = g_windows.find(win);
  CommEntry* e = nullptr;
  if (it != g_windows.end()) {
    e = it->second;
  } else {  // made by a call we do not wrap: described on first use
    MPI_Group group = MPI_GROUP_NULL;
    if (PMPI_Win_get_group(win, &group) != MPI_SUCCESS) return nullptr;
    e = AddEntryLocked("win", group, MPI_GROUP_NULL, -1, 0, 0);
    PMPI_Group_free(&group);
    g_windows[win] = e;
  }
  last_win = win;
  last = e;
  last_generation = gen;
  return e;
}

void OnNewWindow(MpiCall& c, MPI_Comm comm, const MPI_Win* win) {
  c.Discard();
  if (!win || *win == MPI_WIN_NULL) return;
  CommEntry* parent = LookupComm(comm);
  MPI_Group group = MPI_GROUP_NULL;
  if (PMPI_Win_get_group(*win, &group) != MPI_SUCCESS) return;
  std::lock_guard<std::mutex> lock(g_comm_mu);
  g_windows[*win] = AddEntryLocked("win", group, MPI_GROUP_NULL, int64_t(parent->id), 0, 0);
  PMPI_Group_free(&group);
}

void CompleteHeld(CommEntry* e, int peer);

void OnFreeWindow(MpiCall& c, const MPI_Win* win) {
  c.Discard();
  if (!win) return;
  CommEntry* e = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_comm_mu);
    auto it = g_windows.find(*win);
    if (it == g_windows.end()) return;
    e = it->second;
    g_windows.erase(it);
    g_comm_generation.fetch_add(1, std::memory_order_release);
  }
  CompleteHeld(e, -1);  // MPI_Win_free completes what is left
}

// Window WIN's entry made C's communicator, the op tagged with the window's
// epoch (and the epoch advanced after it when CLOSES_EPOCH); null for a
// window the recorder does not know.
CommEntry* OnWindow(MpiCall& c, MPI_Win win, bool closes_epoch) {
  CommEntry* e = LookupWindow(win);
  if (!e) return nullptr;
  c.SetComm(e);
  OpRecord& op = c.op();
  op.comm = e->id;
  std::lock_guard<std::mutex> lock(e->window_mu);
  op.tag = int32_t(e->epoch);
  if (closes_epoch) ++e->epoch;
  return e;
}

void OneSided(MpiCall& c, MPI_Win win, int target, int count, MPI_Datatype type) {
  CommEntry* e = OnWindow(c, win, false);
  if (!e) {
    c.Unrecorded();
    return;
  }
  OpRecord& op = c.op();
  op.seq = e->p2p_seq.fetch_add(1, std::memory_order_relaxed);
  const TypeInfo& t = DescribeType(type);
  op.count = uint64_t(count > 0 ? count : 0);
  op.datatype = t.kind;
  op.bytes = op.count * t.size;
  op.peer = target;
}

// Writes the ops held on window E (to PEER, or all for -1) as completed now.
void CompleteHeld(CommEntry* e, int peer) {
  std::vector<MpiOp> done;
  {
    std::lock_guard<std::mutex> lock(e->window_mu);
    auto keep = std::stable_partition(e->held.begin(), e->held.end(),
                                      [&](const MpiOp& op) { return peer >= 0 && op.peer != peer; });
    done.assign(std::make_move_iterator(keep), std::make_move_iterator(e->held.end()));
    e->held.erase(keep, e->held.end());
  }
  for (MpiOp& op : done) {
    op.completion_ns = NowFor(op);  // on the clock of the op's own times
    op.flags |= OpRecord::kCompletion;
    Emit(op);  // outside the lock: it may wait for the flusher
  }
}

enum SyncEffect { kOpens, kCompletes, kCloses };

void WindowSync(MpiCall& c, MPI_Win win, int peer, SyncEffect effect) {
  CommEntry* e = OnWindow(c, win, effect == kCloses);
  if (!e) {
    c.Discard();
    return;
  }
  c.op().peer = peer;
  if (effect != kOpens) CompleteHeld(e, peer);
}

// ---- setup, communicators, exit -----------------------------------------

void OnInit(MpiCall& c) {
  int rank = -1, size = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  StartInfo info;
  info.rank = rank;
  info.world_size = size;
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  PMPI_Get_library_version(version, &len);
  info.mpi_version = std::string(version, strnlen(version, sizeof(version)));
  info.mpi_version = info.mpi_version.substr(0, info.mpi_version.find_first_of(",\n"));
  Recorder& r = Recorder::Get();
  if (r.settings().enabled && r.settings().output.empty()) {
    // Every rank must write into the same directory: rank 0 names it.
    char dir[512] = {};
    if (rank == 0) std::snprintf(dir, sizeof(dir), "%s", Recorder::DefaultOutputDir().c_str());
    PMPI_Bcast(dir, sizeof(dir), MPI_CHAR, 0, MPI_COMM_WORLD);
    info.output_dir = dir;
  }
  if (!r.settings().enabled || !r.Start(info)) {
    c.Discard();
    return;
  }
  PMPI_Comm_group(MPI_COMM_WORLD, &g_world_group);
  std::lock_guard<std::mutex> lock(g_comm_mu);
  RegisterLocked(MPI_COMM_WORLD, "MPI_COMM_WORLD", -1, 0, 0);
  RegisterLocked(MPI_COMM_SELF, "MPI_COMM_SELF", -1, 0, 0);
}

// Requests never completed through Wait/Test (freed, cancelled) are still
// operations the program issued: keep them, without a completion time.
void FlushPendingRequests() {
  for (RequestShard& shard : g_requests) {
    std::lock_guard<std::mutex> lock(shard.mu);
    for (auto& [request, ops] : shard.pending)
      for (PendingOp& p : ops) Emit(p.op);
    shard.pending.clear();
  }
  // One-sided ops no synchronisation completed: kept, without completion time.
  std::vector<CommEntry*> windows;
  {
    std::lock_guard<std::mutex> lock(g_comm_mu);
    for (auto& [win, e] : g_windows) windows.push_back(e);
  }
  for (CommEntry* e : windows) {
    std::vector<MpiOp> held;
    {
      std::lock_guard<std::mutex> lock(e->window_mu);
      held.swap(e->held);
    }
    for (MpiOp& op : held) Emit(op);
  }
}

void OnFinalize(MpiCall& c) {
  FlushPendingRequests();
  c.Finish();
  Recorder::Get().Stop("finalize");
}

void OnAbort(MpiCall& c, MPI_Comm comm) {
  OnComm(c, comm, false);
  FlushPendingRequests();
  c.Finish();
  Recorder::Get().Stop("abort");
}

void OnNewComm(MpiCall& c, MPI_Comm parent, MPI_Comm* newcomm, const char* how, int color,
               int key) {
  c.Discard();
  if (!newcomm || *newcomm == MPI_COMM_NULL) return;
  CommEntry* p = LookupComm(parent);
  std::lock_guard<std::mutex> lock(g_comm_mu);
  RegisterLocked(*newcomm, how, int64_t(p->id), color, key);
}

void OnFreeComm(MpiCall& c, MPI_Comm* comm) {
  c.Discard();
  if (!comm) return;
  std::lock_guard<std::mutex> lock(g_comm_mu);
  // The handle value can come back for a new communicator: forget it.
  g_comms.erase(*comm);
  g_comm_generation.fetch_add(1, std::memory_order_release);
}

}  // namespace
}  // namespace dltrace::record

using dltrace::record::MpiCall;
using namespace dltrace::record;
using dltrace::formats::OpKind;

namespace dltrace::record {
namespace {

// A libmpi loaded after the recorder into a private scope (Python's mpi4py
// loads it with its extension module) leaves the recorder's weak PMPI
// references null: such a process runs its MPI calls unrecorded, through the
// library it loaded, and says once how to record them.
void* LateMpiSymbol(const char* name) {
  static void* mpi = [] {
    std::string path;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* out) {
          const char* base = std::strrchr(info->dlpi_name, '/');
          base = base ? base + 1 : info->dlpi_name;
          if (std::strncmp(base, "libmpi.so", 9) != 0) return 0;
          *static_cast<std::string*>(out) = info->dlpi_name;
          return 1;
        },
        &path);
    void* handle = path.empty() ? nullptr : dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    Dl_info self{};
    dladdr(reinterpret_cast<void*>(&LateMpiSymbol), &self);
    if (handle)
      std::fprintf(stderr,
                   "dltrace: %s was loaded after the recorder (as Python's mpi4py loads it), so this "
                   "process's MPI calls are not recorded; to record them preload it too: "
                   "LD_PRELOAD=%s:%s\n",
                   path.c_str(), self.dli_fname ? self.dli_fname : "libdltrace-record.so", path.c_str());
    return handle;
  }();
  void* f = mpi ? dlsym(mpi, name) : nullptr;
  if (!f) {
    std::fprintf(stderr, "dltrace: %s is not in any loaded MPI library; cannot forward the call\n", name);
    std::abort();
  }
  return f;
}

}  // namespace
}  // namespace dltrace::record

#include "mpi_wrappers.inc"  // the C wrappers

// ---- Fortran (mpif.h, use mpi, use mpi_f08) --------------------------------
// The wrappers are generated from the same table (mpi_fortran_wrappers.inc);
// what they share is here.
static_assert(sizeof(MPI_Fint) == sizeof(int), "Fortran INTEGER must be a C int");

// Fortran's MPI_IN_PLACE, MPI_BOTTOM, MPI_STATUS(ES)_IGNORE are addresses of
// common blocks, named as the compiler mangles them (Open MPI defines them
// in libmpi and the Fortran libraries; a program that names them holds the
// copy every library resolves to, and so does this weak reference).
#define DLTRACE_FORTRAN_SENTINEL(name)                                        \
  extern "C" MPI_Fint name __attribute__((weak));                             \
  extern "C" MPI_Fint name##_ __attribute__((weak));                          \
  extern "C" MPI_Fint name##__ __attribute__((weak));
DLTRACE_FORTRAN_SENTINEL(mpi_fortran_in_place)
DLTRACE_FORTRAN_SENTINEL(mpi_fortran_bottom)
DLTRACE_FORTRAN_SENTINEL(mpi_fortran_status_ignore)
DLTRACE_FORTRAN_SENTINEL(mpi_fortran_statuses_ignore)
#define DLTRACE_IS_FORTRAN_SENTINEL(p, name) \
  ((p) == &name || (p) == &name##_ || (p) == &name##__)

namespace dltrace::record {
namespace {

// What Open MPI's Fortran status is: the C MPI_Status, as INTEGERs.
#ifdef MPI_F_STATUS_SIZE
constexpr size_t kFortranStatusInts = MPI_F_STATUS_SIZE;
#else
constexpr size_t kFortranStatusInts = sizeof(MPI_Status) / sizeof(MPI_Fint);
#endif

const void* FortranBuffer(const void* p) {
  if (!p) return p;
  if (DLTRACE_IS_FORTRAN_SENTINEL(p, mpi_fortran_in_place)) return MPI_IN_PLACE;
  if (DLTRACE_IS_FORTRAN_SENTINEL(p, mpi_fortran_bottom)) return MPI_BOTTOM;
  return p;
}
void* FortranBuffer(void* p) { return const_cast<void*>(FortranBuffer(static_cast<const void*>(p))); }

bool IsFortranStatusIgnore(const MPI_Fint* s) {
  return s && ((&MPI_F_STATUS_IGNORE && s == MPI_F_STATUS_IGNORE) ||
               DLTRACE_IS_FORTRAN_SENTINEL(s, mpi_fortran_status_ignore));
}
bool IsFortranStatusesIgnore(const MPI_Fint* s) {
  return s && ((&MPI_F_STATUSES_IGNORE && s == MPI_F_STATUSES_IGNORE) ||
               DLTRACE_IS_FORTRAN_SENTINEL(s, mpi_fortran_statuses_ignore));
}

int FortranCommSize(MPI_Comm comm) { return LookupComm(comm)->size; }

// How many blocks a neighbourhood collective's per-neighbour arrays hold.
int FortranNeighbors(MPI_Comm comm, bool sources) {
  CommEntry* e = LookupComm(comm);
  if (!e->neighbors_known) ReadNeighbors(e, comm);
  return int(sources ? e->sources.size() : e->destinations.size());
}

// The real routine: the Fortran PMPI entry point of the same mangling, or
// else the next definition of the name itself.
template <typename Fn>
Fn* FortranEntry(Fn* pmpi, const char* name) {
  return pmpi ? pmpi : reinterpret_cast<Fn*>(dlsym(RTLD_NEXT, name));
}

}  // namespace
}  // namespace dltrace::record

#include "mpi_fortran_wrappers.inc"
