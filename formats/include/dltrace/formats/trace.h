// SPDX-License-Identifier: GPL-2.0-only
// In-memory form of everything a .dltrace file holds. The writer and the
// reader convert between these structs and the FlatBuffers schema.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common_generated.h"

namespace dltrace::formats {

using Api = fb::v1::Api;
using OpKind = fb::v1::OpKind;
using DataType = fb::v1::DataType;
using RedOp = fb::v1::RedOp;
using NcclAlgorithm = fb::v1::NcclAlgorithm;
using NcclProtocol = fb::v1::NcclProtocol;

// The schema version this code writes and the newest it reads.
constexpr uint32_t kSchemaVersion = 2;
constexpr uint32_t kNoCommunicator = 0xFFFFFFFFu;
constexpr char kTraceFileSuffix[] = ".dltrace";

using KeyValues = std::vector<std::pair<std::string, std::string>>;

struct Header {
  uint32_t schema_version = kSchemaVersion;
  int32_t global_rank = -1;
  int32_t world_size = 0;
  int32_t local_rank = -1;
  std::string host;
  int32_t pid = 0;
  std::vector<std::string> command_line;
  uint64_t start_monotonic_ns = 0;
  uint64_t start_realtime_ns = 0;
  std::string recorder_version;
  std::string nccl_version;
  std::string mpi_version;
  int32_t gpu_device = -1;
  std::string gpu_bus_id;
  std::string job_id;
  KeyValues rank_env;
  KeyValues attributes;
  KeyValues nccl_env;  // NCCL_ALGO, NCCL_PROTO, ... as set when recording
  bool operator==(const Header&) const;
};

struct Communicator {
  uint32_t id = 0;
  Api api = Api::Unknown;
  std::string name;
  int32_t size = 0;
  int32_t rank = -1;
  std::vector<int32_t> members;  // global ranks, index = comm rank
  int64_t parent = -1;
  int32_t color = 0;
  int32_t key = 0;
  uint64_t nccl_unique_id_hash = 0;
  int32_t cuda_device = -1;
  std::string bus_id;
  uint64_t created_ns = 0;
  bool operator==(const Communicator&) const;
};

struct OpEvent {
  OpKind kind = OpKind::Unknown;
  uint32_t comm = kNoCommunicator;
  uint64_t count = 0;
  DataType datatype = DataType::Unknown;
  uint64_t bytes = 0;
  RedOp red_op = RedOp::None;
  int32_t peer = -1;  // root or peer, in communicator ranks
  int32_t tag = -1;
  uint64_t stream = 0;
  uint32_t thread = 0;
  bool captured_in_graph = false;
  std::vector<uint64_t> peer_send_bytes;
  std::vector<uint64_t> peer_recv_bytes;
  uint64_t seq = 0;
  uint32_t group = 0;
  int64_t enter_ns = 0;  // CLOCK_MONOTONIC
  int64_t exit_ns = 0;
  std::optional<int64_t> gpu_start_ns;
  std::optional<int64_t> gpu_end_ns;
  std::optional<int64_t> completion_ns;  // nonblocking ops
  // What NCCL chose (profiler plugin recordings); Unknown / 0 when not recorded.
  NcclAlgorithm nccl_algorithm = NcclAlgorithm::Unknown;
  NcclProtocol nccl_protocol = NcclProtocol::Unknown;
  uint16_t nccl_channels = 0;
  bool operator==(const OpEvent&) const;

  // Duration on the GPU when known, else on the host.
  int64_t duration_ns() const;
};

struct ResourceSample {
  uint64_t time_ns = 0;
  float cpu_percent = 0;
  uint64_t rss_bytes = 0;
  uint64_t net_rx_bytes = 0;
  uint64_t net_tx_bytes = 0;
  uint64_t disk_read_bytes = 0;
  uint64_t disk_write_bytes = 0;
  bool operator==(const ResourceSample&) const;
};

struct Footer {
  uint64_t events_written = 0;
  uint64_t events_dropped = 0;
  uint64_t samples_written = 0;
  uint64_t end_monotonic_ns = 0;
  uint64_t end_realtime_ns = 0;
  std::string reason;
  std::string write_error;  // first write failure; empty when every write succeeded
  // Calls that move data the recorder saw but could not record, by name.
  std::vector<std::pair<std::string, uint64_t>> unrecorded;
  bool operator==(const Footer&) const;
};

// Names as users know them: "MPI_Allreduce", "ncclAllReduce", "float32".
const char* OpKindName(OpKind kind);
const char* DataTypeName(DataType type);
const char* RedOpName(RedOp op);
const char* ApiName(Api api);
// NCCL's own spellings: "Tree", "Ring", "NVLS", "PAT", ...; "LL", "LL128", "Simple"
// (index = enum value; NCCL_ALGO, NCCL_PROTO and the profiler take them in any case).
extern const char* const kNcclAlgorithmNames[7];
extern const char* const kNcclProtocolNames[3];
const char* NcclAlgorithmName(NcclAlgorithm algo);
const char* NcclProtocolName(NcclProtocol proto);
// The algorithm or protocol NAME spells, in any case; Unknown for another name or null.
NcclAlgorithm ParseNcclAlgorithm(const char* name);
NcclProtocol ParseNcclProtocol(const char* name);

}  // namespace dltrace::formats
