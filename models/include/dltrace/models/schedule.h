// SPDX-License-Identifier: GPL-2.0-only
// The lowered form of a trace that executors run: per endpoint, a list of
// compute/send/recv steps with explicit dependencies, plus what op each step came from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dltrace/formats/op_kind.h"
#include "dltrace/models/realloc_vector.h"

namespace dltrace::models {

enum class StepType : uint8_t { kCompute, kSend, kRecv };
const char* StepTypeName(StepType type);  // "calc", "send", "recv" (GOAL's words)

// One step of one endpoint. Its id is its index in RankSchedule::steps; every
// dependency has a smaller id, so the steps vector is already a topological order.
// 24 bytes, bit fields and all: a 16,384-rank job holds 346 million of them.
struct Step {
  Step() : bytes(0), channel(0), local(false), reduce(false), peer(-1) {}
  // (op << 32) | k (MakeTag): a transfer's k-th message of its op, or k = 0
  // for a compute step. A send and its receive carry the same tag; (sender,
  // receiver, tag) is unique in a schedule, so an executor matches receives
  // by (peer, tag).
  uint64_t tag = 0;
  // Send/recv payload, up to 256 TiB; a compute step keeps its duration here
  // (duration_ns(), up to 78 hours).
  uint64_t bytes : 48;
  uint16_t channel : 14;  // parallel flow between the same pair (NCCL channel; NCCL has at most 64)
  // Both ends on one host: executors use the local link (Schedule::local_link),
  // not the network.
  bool local : 1;
  // A receive the host reduces: the receiver adds the block into its own
  // (ring reduce-scatter, tree and chain reduce, ...), on the CPU; not set
  // where NCCL reduces on the GPU. Socket replay does that arithmetic.
  bool reduce : 1;
  int32_t peer : 24;  // endpoint index (== world rank for workers, up to 8 million); -1 for compute
  StepType type = StepType::kCompute;
  // Where this step's dependencies end in RankSchedule::deps; they begin
  // where the step before's end (RankSchedule::deps_begin).
  uint32_t deps_end = 0;

  uint64_t duration_ns() const { return bytes; }
  void set_duration_ns(uint64_t ns) { bytes = ns; }
  // The index into Schedule::ops of what it was lowered from (kNoOp: none).
  uint32_t op() const { return uint32_t(tag >> 32); }
};
static_assert(sizeof(Step) == 24, "Step grew: every lowered job holds hundreds of bytes per rank per op of them");

// A step's channel holds NCCL's channel (below 64) in its low bits and, with
// queue pairs per connection (SplitQueuePairs), the queue pair above them: the
// NIC follows the NCCL channel, the ECMP hash the whole value.
constexpr uint32_t kQueuePairShift = 6;
constexpr uint32_t kMaxQueuePairs = 1u << (14 - kQueuePairShift);  // 256; NCCL allows 128
inline uint32_t NcclChannelOf(uint32_t channel) { return channel & ((1u << kQueuePairShift) - 1); }
inline uint32_t QueuePairOf(uint32_t channel) { return channel >> kQueuePairShift; }

// Tags are (schedule op << 32) | k, the k-th transfer the op lowered to.
inline uint64_t MakeTag(uint32_t op, uint32_t k) { return (uint64_t(op) << 32) | k; }
constexpr uint32_t kNoOp = 0xFFFFFFFFu;
inline uint32_t TagOp(uint64_t tag) { return uint32_t(tag >> 32); }

enum class EndpointRole : uint8_t { kWorker, kServer };

// Who runs one rank schedule: a recorded rank, or a parameter server that
// the ps algorithm added on an endpoint of its own.
struct Endpoint {
  EndpointRole role = EndpointRole::kWorker;
  int32_t world_rank = -1;  // workers; -1 for separate servers
  int32_t host = -1;        // index into Schedule::hosts
};

// Steps and dependencies grow with realloc (realloc_vector.h): lowering
// appends them one at a time, and a large job's are gigabytes.
struct RankSchedule {
  ReallocVector<Step> steps;
  ReallocVector<uint32_t> deps;  // step ids, concatenated in step order; Step::deps_end indexes it

  // Step S's dependencies; S must be one of STEPS.
  const uint32_t* deps_begin(const Step& s) const { return deps.data() + DepsBegin(s); }
  const uint32_t* deps_end(const Step& s) const { return deps.data() + s.deps_end; }
  uint32_t DepsBegin(const Step& s) const { return &s == steps.data() ? 0 : (&s - 1)->deps_end; }
  uint32_t DepCount(const Step& s) const { return s.deps_end - DepsBegin(s); }
};

// What a group of steps was lowered from: one recorded collective call, one
// matched point-to-point transfer, or a compute gap.
struct ScheduleOp {
  enum class Source : uint8_t { kCollective, kTransfer, kCompute, kSynthetic, kOneSided };
  Source source = Source::kCollective;
  formats::Collective collective = formats::Collective::kNone;
  formats::OpKind kind = formats::OpKind::Unknown;  // the recorded call
  uint32_t recorded = 0;  // index into MergedTrace::calls, ::transfers or ::one_sided (by source)
  int32_t iteration = 0;
  int32_t comm = -1;        // index into MergedTrace::comms; -1 when none
  uint64_t bytes = 0;       // as recorded (nccl-tests "size")
  formats::DataType datatype = formats::DataType::Unknown;  // of a collective, as recorded
  std::string algorithm;    // the algorithm that actually lowered it
  // The nccl algorithm's lowering: NCCL's algorithm ("Ring", "Tree", "PAT")
  // and protocol ("LL", "LL128", "Simple"), its channels, and why ("recorded",
  // "NCCL_ALGO", "NCCL_PROTO", "tuning model"). Empty / 0 for other algorithms.
  std::string nccl_algorithm, nccl_protocol, nccl_reason;
  int32_t nccl_channels = 0;
};

// Bandwidth and latency of a link class, for executors and the estimate.
struct Link {
  double gbps = 0;        // gigabits per second
  double latency_ns = 0;  // per message
};

struct Schedule {
  std::vector<Endpoint> endpoints;  // index = endpoint id; workers first, by world rank
  std::vector<RankSchedule> ranks;  // one per endpoint
  std::vector<ScheduleOp> ops;
  std::vector<std::string> hosts;
  int32_t world_size = 0;
  int32_t iterations = 0;
  Link local_link;  // same-host transfers (NVLink-like)
  std::string algorithm;  // what it was lowered with: the one asked for, or the trace's default

  uint64_t step_count() const;
};

// Per endpoint: bytes sent/received and step counts.
struct RankTotals {
  uint64_t sent_bytes = 0, recv_bytes = 0;
  uint64_t local_sent_bytes = 0;
  uint64_t sends = 0, recvs = 0, computes = 0;
  uint64_t compute_ns = 0;
};
std::vector<RankTotals> ComputeTotals(const Schedule& schedule);

// Checks the invariants executors rely on: dependencies point backwards, peers
// exist, every send has exactly one receive with the same (pair, tag, bytes)
// and vice versa. Returns the problems found (empty when sound), at most `limit`.
std::vector<std::string> CheckSchedule(const Schedule& schedule, size_t limit = 20);

// The schedule's message tags ((op << 32) | k) numbered densely from 0 in
// order, the same on every endpoint: for formats whose tags are 32-bit (GOAL,
// Chakra).
class DenseTags {
 public:
  explicit DenseTags(const Schedule& schedule);
  uint32_t operator()(uint64_t tag) const;
  size_t size() const { return tags_.size(); }

 private:
  std::vector<uint64_t> tags_;  // sorted, distinct
};

// One endpoint's "rank E { ... }" block in LogGOPSim's GOAL syntax
// ("l3: send 8b to 1 tag 7", "l4 requires l3", calc in nanoseconds), with a
// "//" comment naming each op. A whole GOAL file is "num_ranks N" then every
// endpoint's block.
std::string FormatGoal(const Schedule& schedule, int32_t endpoint, const DenseTags& tags);

}  // namespace dltrace::models
