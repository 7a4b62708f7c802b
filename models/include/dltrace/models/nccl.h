// SPDX-License-Identifier: GPL-2.0-only
// NCCL's own choice of algorithm, protocol and channels for one collective:
// the tuning model of NCCL's src/graph/tuning.cc and src/enqueue.cc as data and pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dltrace/formats/op_kind.h"

namespace dltrace::models {

// NCCL's numbering (NCCL_ALGO_* and NCCL_PROTO_* in its device.h), which the
// profiler plugin reports and the trace stores (formats' NcclAlgorithm + 1).
enum class NcclAlgo : int8_t {
  kUnknown = -1,
  kTree = 0,
  kRing,
  kCollNetDirect,
  kCollNetChain,
  kNvls,
  kNvlsTree,
  kPat,
};
enum class NcclProto : int8_t { kUnknown = -1, kLL = 0, kLL128, kSimple };
constexpr int kNcclAlgos = 7;
constexpr int kNcclProtos = 3;

// "Tree", "Ring", "CollNetDirect", ... / "LL", "LL128", "Simple": NCCL's own
// spellings (NCCL_ALGO and NCCL_PROTO accept them, case-insensitively).
const char* NcclAlgoName(NcclAlgo algo);
const char* NcclProtoName(NcclProto proto);
NcclAlgo ParseNcclAlgo(const std::string& name);    // kUnknown when not one
NcclProto ParseNcclProto(const std::string& name);  // kUnknown when not one

// Payload per byte on the wire: LL sends 8-byte lines with 4 bytes of data
// and a 4-byte flag; LL128 128-byte lines with 120 bytes of data; Simple
// sends the data as is.
double NcclPayloadEfficiency(NcclProto proto);
// Bytes on the wire that carry PAYLOAD bytes of data with PROTO (rounded up).
uint64_t NcclWireBytes(NcclProto proto, uint64_t payload);

// NCCL settings a job ran with, as the recorder stores them from the
// environment (unset: empty / 0) and NCCL's version ("2.28.9").
struct NcclSettings {
  std::string algo;   // NCCL_ALGO, NCCL's list syntax ("Ring", "^Tree", "allreduce:tree;...")
  std::string proto;  // NCCL_PROTO
  int min_channels = 0;    // NCCL_MIN_NCHANNELS
  int max_channels = 0;    // NCCL_MAX_NCHANNELS
  int nthreads = 0;        // NCCL_NTHREADS
  uint64_t buffsize = 0;   // NCCL_BUFFSIZE (Simple's buffer; default 4 MiB)
  std::string version;     // "2.28.9"; empty: the tables' version
};

// Settings from NAME=VALUE pairs (a trace header's nccl_env, the variables
// of formats::kNcclSettingVariables); unknown names are ignored.
NcclSettings NcclSettingsFrom(const std::vector<std::pair<std::string, std::string>>& env,
                              const std::string& version);

// What NCCL's topology search found for one algorithm's graph (its INFO line
// "Pattern P, crossNic C, nChannels N, bw I/E, type T/T"): channels and
// per-channel bandwidth inside a node and across nodes, GB/s.
struct NcclGraph {
  int channels = 0;
  double bw_intra = 0;
  double bw_inter = 0;
};

// The machine the tuning model assumes: GPU generation, CPU vendor, links,
// and the graphs NCCL's search finds on one node and across nodes.
struct NcclSystem {
  const char* name;
  int compute_capability;  // 80 Ampere, 90 Hopper
  bool amd_cpu;            // picks the LL bandwidth cap and the network overhead
  bool nvlink;             // intra-node links are NVLink (else PCI)
  NcclGraph ring_single, tree_single;  // one node
  NcclGraph ring_multi, tree_multi;    // several nodes
  const char* source;
};
const NcclSystem& DefaultNcclSystem();

// What one collective call looks like to the tuning model.
struct NcclCall {
  formats::Collective collective = formats::Collective::kAllReduce;
  uint64_t bytes = 0;  // nccl-tests "size" (NCCL's nBytes for the tuning)
  int ranks = 0;
  int nodes = 1;
};

// Why a lowering used the algorithm and protocol it did.
enum class NcclReason : uint8_t { kRecorded, kAlgoSetting, kProtoSetting, kTuningModel };
// "recorded", "NCCL_ALGO", "NCCL_PROTO", "tuning model"
const char* NcclReasonName(NcclReason reason);

struct NcclChoice {
  NcclAlgo algo = NcclAlgo::kRing;
  NcclProto proto = NcclProto::kSimple;
  int channels = 1;
  // Payload bytes one channel moves per pipeline step (NCCL's chunkSize).
  uint64_t chunk_bytes = 0;
  NcclReason reason = NcclReason::kTuningModel;
  double time_us = 0;  // the model's estimate for the choice
};

// The tuning model: latency (us) and bus bandwidth (GB/s, already turned
// into algorithm bandwidth) of every algorithm and protocol for CALL's
// collective, rank and node count, as ncclTopoTuneModel fills
// comm->latencies / comm->bandwidths (bandwidth 0: not available).
struct NcclTuningTable {
  double latency_us[kNcclAlgos][kNcclProtos] = {};
  double bandwidth[kNcclAlgos][kNcclProtos] = {};
};
NcclTuningTable NcclTuning(const NcclCall& call, const NcclSettings& settings,
                           const NcclSystem& system);
// Time in us NCCL's model gives one call of (ALGO, PROTO); < 0 when unavailable.
double NcclAlgoTime(const NcclTuningTable& table, const NcclCall& call, NcclAlgo algo,
                    NcclProto proto, const NcclSystem& system, const NcclSettings& settings);

// NCCL's choice for CALL: the fastest available (algorithm, protocol) by the
// model, restricted by NCCL_ALGO / NCCL_PROTO (reason kAlgoSetting / kProtoSetting when they
// narrowed the choice to one the
// model would not have made, NCCL_ALGO first), then its channel count and chunk size.
NcclChoice ChooseNccl(const NcclCall& call, const NcclSettings& settings,
                      const NcclSystem& system = DefaultNcclSystem());

// Channels and chunk size for a given (ALGO, PROTO), as enqueue.cc derives them.
NcclChoice NcclChannelsFor(const NcclCall& call, NcclAlgo algo, NcclProto proto,
                           const NcclSettings& settings, const NcclSystem& system);

// Per-step latency in us of PROTO for ALGO on a hop inside a node (NVLink or
// PCI) or across nodes (NCCL's hwLatencies table), and the base latency of
// launching one operation (baseLatencies).
double NcclStepLatencyUs(NcclAlgo algo, NcclProto proto, bool inter_node, const NcclSystem& system);
double NcclBaseLatencyUs(NcclAlgo algo, NcclProto proto);

// Whether NCCL version VERSION ("2.28.9") is at least MAJOR.MINOR; an empty
// or unreadable version counts as new.
bool NcclVersionAtLeast(const std::string& version, int major, int minor);

}  // namespace dltrace::models
