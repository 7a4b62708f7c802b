// SPDX-License-Identifier: GPL-2.0-only
// Collective algorithms: each is one table entry, a pure function from
// (collective, members, bytes, options) to steps, as nccl-tests lists collectives.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "dltrace/formats/op_kind.h"
#include "dltrace/models/nccl.h"
#include "dltrace/models/schedule.h"

namespace dltrace::models {

// Algorithms the code names: the defaults for MPI and NCCL trace sets
// (DefaultAlgorithm in lower.h), and the one that lowers collectives another
// algorithm does not define (Algorithm::fallback).
inline constexpr char kRecordedAlgorithm[] = "recorded";
inline constexpr char kRingAlgorithm[] = "ring";
inline constexpr char kNcclAlgorithm[] = "nccl";

// Same-host link models. GPUs of one host talk over NVLink-like links (300 GB/s,
// 1 us); MPI ranks of one host through shared memory: Open MPI's vader moves a
// large message with one copy (CMA) at about memory-copy speed, 10 GB/s on a
// server core, and a small one in about half a microsecond.
inline constexpr Link kNvlinkLink{2400.0, 1000.0};
inline constexpr Link kSharedMemoryLink{80.0, 500.0};

struct LowerOptions {
  // Empty: the trace set's default (DefaultAlgorithm in lower.h: nccl for
  // NCCL traces, recorded for MPI ones).
  std::string algorithm;
  // Each channel's share of an op is cut into pieces of at most this many
  // bytes, each lowered as a whole run of the algorithm (pipelining); 0: one piece.
  uint64_t chunk_bytes = 0;
  int channels = 1;  // parallel flows per peer pair; the op's bytes are split among them
  // Parameter server: number of servers (gradients sharded by bytes), whether
  // they run on workers 0..k-1 or on endpoints of their own, and whether a
  // server answers each push at once (async) or after all workers pushed.
  int servers = 1;
  bool colocated_servers = false;
  bool async_servers = false;
  int gossip_peers = 1;  // neighbours each worker exchanges with per op
  // Same-host transfers. A field left unset takes the default for the job's
  // library: NVLink-like for NCCL (kNvlinkLink), shared memory for MPI
  // (kSharedMemoryLink). See LocalLinkFor.
  std::optional<double> local_gbps;
  std::optional<double> local_latency_ns;
  // Ops per training iteration; 0: detect from the repeating pattern of ops.
  int iteration_ops = 0;
  // The host's own work in a reduction (a host profile, `dltrace calibrate`):
  // after each block a rank receives in a ring reduce-scatter it adds the
  // block into its own at REDUCE_GBPS (GB/s = bytes/ns) and pays the MPI
  // library's PER_MESSAGE_NS, as one compute step before it sends on.
  // 0 (the default): no such steps.
  double reduce_gbps = 0;
  double per_message_ns = 0;
  // MPI's eager limits: a blocking standard-mode send (MPI_Send, the send of
  // an MPI_Sendrecv) of at most this many bytes completes without its
  // receiver, so the lowering does not make it wait for the receive. Between
  // hosts and on one host; the defaults are Open MPI 4.1's
  // btl_tcp_eager_limit and btl_vader_eager_limit.
  uint64_t eager_limit_bytes = 65536;
  uint64_t eager_limit_local_bytes = 4096;
  // The nccl algorithm: the settings NCCL ran with (LowerTrace fills them
  // from the trace headers when left empty) and the machine its tuning model assumes.
  NcclSettings nccl;
  const NcclSystem* nccl_system = nullptr;  // nullptr: DefaultNcclSystem()
};

// The same-host link of OPTIONS for a job whose transfers are NCCL's (NCCL)
// or MPI's: the fields OPTIONS sets, the library's default for the others.
Link LocalLinkFor(const LowerOptions& options, bool nccl);

// One collective, as an algorithm sees it.
struct CollectiveSpec {
  formats::Collective collective = formats::Collective::kAllReduce;
  uint64_t bytes = 0;            // nccl-tests "size" (formats/README.md)
  std::vector<int32_t> members;  // endpoint ids, index = communicator rank
  int32_t root = 0;              // communicator rank of the root
  uint64_t seq = 0;              // which call on the communicator (gossip rotates peers)
  // What NCCL's profiler plugin recorded for this call (kUnknown / 0: nothing).
  NcclAlgo recorded_algo = NcclAlgo::kUnknown;
  NcclProto recorded_proto = NcclProto::kUnknown;
  int recorded_channels = 0;
};

// Step ids in a dependency list; kNoStep entries are skipped, so "the
// previous step, if any" can be passed as is.
constexpr uint32_t kNoStep = 0xFFFFFFFFu;
class DepList {
 public:
  // Up to kInline ids given in braces are copied, so a braced list needs no storage.
  static constexpr size_t kInline = 4;
  DepList(std::initializer_list<uint32_t> l) : size_(0) {
    for (uint32_t d : l)
      if (size_ < kInline) inline_[size_++] = d;
  }
  DepList(const std::vector<uint32_t>& v) : vector_(&v), size_(v.size()) {}
  const uint32_t* begin() const { return vector_ ? vector_->data() : inline_; }
  const uint32_t* end() const { return begin() + size_; }

 private:
  const std::vector<uint32_t>* vector_ = nullptr;
  size_t size_;
  uint32_t inline_[kInline] = {};
};

// Appends the steps of one schedule op at a time. A step given no
// dependencies waits for its endpoint's entry steps (what came before the op).
class StepBuilder {
 public:
  explicit StepBuilder(Schedule* schedule);

  void BeginOp(uint32_t op);
  void SetEntry(int32_t endpoint, const std::vector<uint32_t>& deps);
  void EndOp();
  // After EndOp: the op's steps on ENDPOINT that nothing else in the op waits
  // for; empty when the op did not touch it.
  const std::vector<uint32_t>& Exits(int32_t endpoint) const { return exits_[endpoint]; }
  bool Touched(int32_t endpoint) const { return touched_mark_[endpoint] == op_ + 1; }

  struct Pair {
    uint32_t send, recv;
  };
  Pair Transfer(int32_t from, int32_t to, uint64_t bytes, uint16_t channel, DepList send_deps,
                DepList recv_deps);
  uint32_t Compute(int32_t endpoint, uint64_t duration_ns, DepList deps);
  // Marks receive RECV of ENDPOINT as one the host reduces (Step::reduce),
  // unless the op's reductions run elsewhere (set_host_reduces(false): NCCL's, on the GPU).
  void Reduce(int32_t endpoint, uint32_t recv);
  void set_host_reduces(bool host_reduces) { host_reduces_ = host_reduces; }
  bool host_reduces() const { return host_reduces_; }

  const Schedule& schedule() const { return *schedule_; }
  uint16_t channel() const { return channel_; }
  void set_channel(uint16_t channel) { channel_ = channel; }

 private:
  uint32_t Add(int32_t endpoint, const Step& step, DepList deps);

  Schedule* schedule_;
  uint32_t op_ = 0;
  uint32_t transfers_ = 0;
  uint16_t channel_ = 0;
  bool host_reduces_ = true;
  std::vector<std::vector<uint32_t>> entry_;
  std::vector<std::vector<uint32_t>> exits_;
  std::vector<uint32_t> op_begin_;
  std::vector<uint32_t> touched_mark_;  // op + 1 when touched by the current op
  std::vector<int32_t> touched_;
};

// Lowers one piece of a collective on one channel (bytes = the piece's size).
// Returns false when the algorithm does not define this collective.
using LowerFn = bool (*)(const CollectiveSpec& spec, uint64_t bytes, const LowerOptions& options,
                         StepBuilder& out);

// Lowers a whole collective, channels and pipelining included, for
// algorithms that choose those per call (nccl); says what it chose in *OP.
using LowerOpFn = void (*)(const CollectiveSpec& spec, const LowerOptions& options,
                           StepBuilder& out, ScheduleOp* op);

// How many endpoints of their own (servers) an algorithm adds to the workers.
using ExtraEndpointsFn = int (*)(const LowerOptions& options);

struct Algorithm {
  const char* name;
  const char* summary;
  LowerFn lower;
  ExtraEndpointsFn extra_endpoints = nullptr;  // nullptr: none
  // Lowers the collectives LOWER does not define; must name a table entry.
  const char* fallback = kRingAlgorithm;
  LowerOpFn lower_op = nullptr;  // set: lowers whole ops instead of LOWER

  int ExtraEndpoints(const LowerOptions& options) const {
    return extra_endpoints ? extra_endpoints(options) : 0;
  }
  const Algorithm& Fallback() const;
};

const std::vector<Algorithm>& AllAlgorithms();
const Algorithm* FindAlgorithm(const std::string& name);
// The table's names in table order, for messages and help texts.
std::vector<std::string> AlgorithmNames();
// AlgorithmNames() joined: "recorded, ring, tree, ...".
std::string AlgorithmNamesJoined(const std::string& separator = ", ");

// Appends the endpoints ALGO adds for OPTIONS to S, each a server on a host
// of its own named server0, server1, ...
void AddExtraEndpoints(const Algorithm& algo, const LowerOptions& options, Schedule* s);

// Lowers SPEC with ALGO across options.channels channels and chunk_bytes
// pieces; once a piece needs a collective the algorithm does not define, it
// and the pieces after it use algo.Fallback(). Returns the name of the
// algorithm that was used last. An algorithm with lower_op lowers the whole
// op itself and fills OP's nccl_* fields (when OP is given).
const char* LowerCollective(const Algorithm& algo, const CollectiveSpec& spec,
                            const LowerOptions& options, StepBuilder& out,
                            ScheduleOp* op = nullptr);

// A schedule holding only SPEC lowered on workers 0..n-1, each on a host of
// its own (plus the algorithm's extra endpoints): what tests and the CLI
// inspect. An unknown options.algorithm lowers with ring.
Schedule LowerSingleCollective(const CollectiveSpec& spec, int32_t world_size,
                               const LowerOptions& options);

// a/parts, the first a%parts shares one larger, so shares sum to a exactly.
inline uint64_t Share(uint64_t total, uint64_t parts, uint64_t i) {
  return total / parts + (i < total % parts ? 1 : 0);
}

// NCCL's double binary tree: parent of RANK in tree 0 or 1, -1 for a root.
int32_t TreeParent(int32_t nranks, int32_t rank, int tree);

}  // namespace dltrace::models
