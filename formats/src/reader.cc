// SPDX-License-Identifier: GPL-2.0-only
// ReadTraceBuffer: walks the frames of a trace file, verifying each one, and
// decodes chunk columns back into OpEvents.
#include "dltrace/formats/reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "chunk_generated.h"
#include "chunk_v2_generated.h"
#include "dltrace/formats/crc32c.h"
#include "dltrace/formats/writer.h"
#include "header_generated.h"
#include "packed.h"

namespace dltrace::formats {
namespace fbv = fb::v1;

const char* ReadStatusName(ReadStatus status) {
  switch (status) {
    case ReadStatus::kComplete: return "complete";
    case ReadStatus::kNoFooter: return "no footer";
    case ReadStatus::kTruncated: return "truncated";
    case ReadStatus::kDamaged: return "damaged";
    case ReadStatus::kCorrupt: return "corrupt";
    case ReadStatus::kUnsupportedVersion: return "unsupported version";
    case ReadStatus::kNotATrace: return "not a trace";
    case ReadStatus::kIoError: return "I/O error";
  }
  return "unknown";
}

namespace {

std::string Str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

KeyValues DecodeKeyValues(
    const flatbuffers::Vector<flatbuffers::Offset<fbv::KeyValue>>* kvs) {
  KeyValues out;
  if (kvs)
    for (const auto* kv : *kvs) out.emplace_back(Str(kv->key()), Str(kv->value()));
  return out;
}

Header DecodeHeader(const fbv::FileHeader& h) {
  Header out;
  out.schema_version = h.schema_version();
  out.global_rank = h.global_rank();
  out.world_size = h.world_size();
  out.local_rank = h.local_rank();
  out.host = Str(h.host());
  out.pid = h.pid();
  if (h.command_line())
    for (const auto* a : *h.command_line()) out.command_line.push_back(Str(a));
  out.start_monotonic_ns = h.start_monotonic_ns();
  out.start_realtime_ns = h.start_realtime_ns();
  out.recorder_version = Str(h.recorder_version());
  out.nccl_version = Str(h.nccl_version());
  out.mpi_version = Str(h.mpi_version());
  out.gpu_device = h.gpu_device();
  out.gpu_bus_id = Str(h.gpu_bus_id());
  out.job_id = Str(h.job_id());
  out.rank_env = DecodeKeyValues(h.rank_env());
  out.attributes = DecodeKeyValues(h.attributes());
  out.nccl_env = DecodeKeyValues(h.nccl_env());
  return out;
}

// Returns the i-th value of a narrow-or-wide column pair.
template <typename N, typename W>
struct ColumnView {
  const flatbuffers::Vector<N>* narrow;
  const flatbuffers::Vector<W>* wide;
  bool present() const { return narrow || wide; }
  bool sized(size_t n) const {
    if (narrow && wide) return false;
    if (narrow) return narrow->size() == n;
    if (wide) return wide->size() == n;
    return true;
  }
  bool is_sentinel(size_t i, N ns, W ws) const {
    return narrow ? narrow->Get(flatbuffers::uoffset_t(i)) == ns
                  : wide->Get(flatbuffers::uoffset_t(i)) == ws;
  }
  W get(size_t i) const {
    return narrow ? W(narrow->Get(flatbuffers::uoffset_t(i)))
                  : wide->Get(flatbuffers::uoffset_t(i));
  }
};

// The verifier checks a vector's length prefix, not that 8-byte elements
// are 8-aligned; a crafted file could make every read of them misaligned.
template <typename V>
bool Aligned(const V* v) {
  return !v || reinterpret_cast<uintptr_t>(v->Data()) % 8 == 0;
}

bool ChunkVectorsAligned(const fbv::Chunk& c) {
  if (!Aligned(c.samples())) return false;
  if (c.shapes()) {
    for (const auto* s : *c.shapes())
      if (!Aligned(s->peer_send_bytes()) || !Aligned(s->peer_recv_bytes())) return false;
  }
  if (const auto* o = c.ops()) {
    return Aligned(o->seq_wide()) && Aligned(o->enter_delta_ns_wide()) &&
           Aligned(o->duration_ns_wide()) && Aligned(o->gpu_start_offset_ns_wide()) &&
           Aligned(o->gpu_duration_ns_wide()) && Aligned(o->completion_offset_ns_wide());
  }
  return true;
}

// The shape fields of `op` (everything but timing and sequence).
void DecodeShape(const fbv::OpShape& s, OpEvent* op) {
  op->kind = s.kind();
  op->comm = s.comm();
  op->count = s.count();
  op->datatype = s.datatype();
  op->bytes = s.bytes();
  op->red_op = s.red_op();
  op->peer = s.peer();
  op->tag = s.tag();
  op->stream = s.stream();
  op->thread = s.thread();
  op->captured_in_graph = s.captured_in_graph();
  op->nccl_algorithm = s.nccl_algorithm();
  op->nccl_protocol = s.nccl_protocol();
  op->nccl_channels = s.nccl_channels();
  if (s.peer_send_bytes())
    op->peer_send_bytes.assign(s.peer_send_bytes()->begin(), s.peer_send_bytes()->end());
  if (s.peer_recv_bytes())
    op->peer_recv_bytes.assign(s.peer_recv_bytes()->begin(), s.peer_recv_bytes()->end());
}

void DecodeCommunicators(
    const flatbuffers::Vector<flatbuffers::Offset<fbv::Communicator>>* comms, RankTrace* out) {
  if (!comms) return;
  for (const auto* fc : *comms) {
    Communicator comm;
    comm.id = fc->id();
    comm.api = fc->api();
    comm.name = Str(fc->name());
    comm.size = fc->size();
    comm.rank = fc->rank();
    if (fc->members()) comm.members.assign(fc->members()->begin(), fc->members()->end());
    comm.parent = fc->parent();
    comm.color = fc->color();
    comm.key = fc->key();
    comm.nccl_unique_id_hash = fc->nccl_unique_id_hash();
    comm.cuda_device = fc->cuda_device();
    comm.bus_id = Str(fc->bus_id());
    comm.created_ns = fc->created_ns();
    out->communicators.push_back(std::move(comm));
  }
}

void DecodeFooter(const fbv::Footer* f, RankTrace* out) {
  if (!f) return;
  out->footer = Footer{f->events_written(),   f->events_dropped(),  f->samples_written(),
                       f->end_monotonic_ns(), f->end_realtime_ns(), Str(f->reason()),
                       Str(f->write_error()), {}};
  if (f->unrecorded())
    for (const auto* c : *f->unrecorded())
      if (c) out->footer->unrecorded.emplace_back(Str(c->name()), c->calls());
}

// Decodes one verified version-1 chunk into `out`. Returns an error text or "".
std::string DecodeChunk(const fbv::Chunk& c, RankTrace* out) {
  if (!ChunkVectorsAligned(c)) return "misaligned 8-byte vector";
  DecodeCommunicators(c.communicators(), out);
  if (const auto* cols = c.ops()) {
    const auto* shape = cols->shape();
    size_t n = shape ? shape->size() : 0;
    size_t nshapes = c.shapes() ? c.shapes()->size() : 0;
    ColumnView<uint32_t, uint64_t> seq{cols->seq(), cols->seq_wide()};
    ColumnView<uint32_t, uint64_t> group{cols->group(), nullptr};
    ColumnView<int32_t, int64_t> enter{cols->enter_delta_ns(), cols->enter_delta_ns_wide()};
    ColumnView<uint32_t, uint64_t> dur{cols->duration_ns(), cols->duration_ns_wide()};
    ColumnView<int32_t, int64_t> gst{cols->gpu_start_offset_ns(), cols->gpu_start_offset_ns_wide()};
    ColumnView<uint32_t, uint64_t> gdur{cols->gpu_duration_ns(), cols->gpu_duration_ns_wide()};
    ColumnView<uint32_t, uint64_t> comp{cols->completion_offset_ns(),
                                        cols->completion_offset_ns_wide()};
    if (!seq.present() || !enter.present() || !dur.present())
      return "operation columns missing";
    if (!seq.sized(n) || !group.sized(n) || !enter.sized(n) || !dur.sized(n) || !gst.sized(n) ||
        !gdur.sized(n) || !comp.sized(n) || gst.present() != gdur.present())
      return "operation columns disagree in length";
    int64_t enter_ns = c.base_ns();
    for (size_t i = 0; i < n; ++i) {
      uint16_t si = shape->Get(flatbuffers::uoffset_t(i));
      if (si >= nshapes) return "operation refers to shape " + std::to_string(si) + " of " +
                                std::to_string(nshapes);
      OpEvent op;
      DecodeShape(*c.shapes()->Get(si), &op);
      op.seq = seq.get(i);
      op.group = group.present() ? uint32_t(group.get(i)) : 0;
      // Unsigned wrap-around keeps hostile deltas defined; real ones never wrap.
      enter_ns = int64_t(uint64_t(enter_ns) + uint64_t(enter.get(i)));
      op.enter_ns = enter_ns;
      op.exit_ns = int64_t(uint64_t(enter_ns) + dur.get(i));
      if (gst.present() && !gst.is_sentinel(i, INT32_MIN, INT64_MIN)) {
        op.gpu_start_ns = int64_t(uint64_t(enter_ns) + uint64_t(gst.get(i)));
        op.gpu_end_ns = int64_t(uint64_t(*op.gpu_start_ns) + gdur.get(i));
      }
      if (comp.present() && !comp.is_sentinel(i, UINT32_MAX, UINT64_MAX))
        op.completion_ns = int64_t(uint64_t(enter_ns) + comp.get(i));
      out->ops.push_back(std::move(op));
    }
  }
  if (c.samples()) {
    for (const auto* s : *c.samples()) {
      out->samples.push_back({s->time_ns(), s->cpu_percent(), s->rss_bytes(), s->net_rx_bytes(),
                              s->net_tx_bytes(), s->disk_read_bytes(), s->disk_write_bytes()});
    }
  }
  DecodeFooter(c.footer(), out);
  return "";
}

}  // namespace

namespace {

// One chunk frame that passed every check, decoded on its own.
// A version-2 chunk's ops come with shape ids, resolved against the
// file's dictionary only when the chunk is taken in file order.
struct ChunkFrame {
  uint32_t len = 0;
  uint32_t index = 0;
  std::optional<uint64_t> events_before;
  RankTrace records;
  bool v2 = false;
  uint32_t dictionary_back = 0;  // index - index of the chunk that started the dictionary
  uint32_t shapes_base = 0;      // id of new_shapes[0]
  std::vector<OpEvent> new_shapes;
  std::vector<uint32_t> shape_ids;  // one per op in records.ops
};

// How to read the chunks of one file: its schema version and time origin.
struct Layout {
  uint32_t version = 1;
  uint64_t start_ns = 0;
};

bool ChunkV2VectorsAligned(const fb::v2::Chunk& c) {
  if (c.shapes())
    for (const auto* s : *c.shapes())
      if (!Aligned(s->peer_send_bytes()) || !Aligned(s->peer_recv_bytes())) return false;
  return true;
}

// Decodes one verified version-2 chunk (formats/README.md, "Chunk data")
// into *f, checking everything that needs no other chunk. Returns an error
// text or "".
std::string DecodeChunkV2(const fb::v2::Chunk& c, uint64_t start_ns, ChunkFrame* f) {
  if (!ChunkV2VectorsAligned(c)) return "misaligned 8-byte vector";
  if (!c.data()) return "chunk data missing";
  packed::Reader r(c.data()->data(), c.data()->size());
  const char* kBad = "malformed packed columns";
  uint64_t index = r.U(), events_before = r.U(), back = r.U(), shapes_base = r.U(), n = r.U();
  const uint64_t nshapes = c.shapes() ? c.shapes()->size() : 0;
  if (!r.ok() || index > UINT32_MAX || back > index || shapes_base > UINT32_MAX ||
      shapes_base + nshapes > UINT32_MAX)
    return kBad;
  // Every op takes at least two bytes (shape id, duration): a count past
  // that is damage, not a reason to allocate.
  if (n > r.left() / 2) return kBad;
  f->v2 = true;
  f->index = uint32_t(index);
  f->events_before = events_before;
  f->dictionary_back = uint32_t(back);
  f->shapes_base = uint32_t(shapes_base);
  if (c.shapes())
    for (const auto* s : *c.shapes()) DecodeShape(*s, &f->new_shapes.emplace_back());
  DecodeCommunicators(c.communicators(), &f->records);
  auto& ops = f->records.ops;
  if (n > 0) {
    uint64_t flags = r.U();
    const bool consecutive = flags & 1, grouped = flags & 2;
    const uint64_t gpu = (flags >> 2) & 3, completion = (flags >> 4) & 3;
    if (flags >> 6 || gpu == 3 || completion == 3) return kBad;
    const uint64_t enter0 = start_ns + uint64_t(r.S());
    const uint64_t seq0 = r.U();
    ops.resize(n);
    f->shape_ids.resize(n);
    for (auto& id : f->shape_ids) {
      uint64_t v = r.U();
      if (v >= shapes_base + nshapes)
        return "operation refers to shape " + std::to_string(v) + " of " +
               std::to_string(shapes_base + nshapes);
      id = uint32_t(v);
    }
    // Unsigned wrap-around keeps hostile deltas defined; real ones never wrap.
    ops[0].seq = seq0;
    for (size_t i = 1; i < n; ++i)
      ops[i].seq = ops[i - 1].seq + 1 + (consecutive ? 0 : uint64_t(r.S()));
    ops[0].enter_ns = int64_t(enter0);
    for (size_t i = 1; i < n; ++i) ops[i].enter_ns = int64_t(uint64_t(ops[i - 1].enter_ns) + uint64_t(r.S()));
    for (auto& op : ops) op.exit_ns = int64_t(uint64_t(op.enter_ns) + uint64_t(r.S()));
    if (grouped)
      for (auto& op : ops) {
        uint64_t g = r.U();
        if (g > UINT32_MAX) return kBad;
        op.group = uint32_t(g);
      }
    auto present = [&](uint64_t mode, std::vector<bool>* has) {
      has->assign(n, mode == 1);
      if (mode != 2) return;
      const uint8_t* bits = r.Bytes((n + 7) / 8);
      if (bits)
        for (size_t i = 0; i < n; ++i) (*has)[i] = bits[i / 8] >> (i % 8) & 1;
    };
    std::vector<bool> has;
    present(gpu, &has);
    for (size_t i = 0; i < n; ++i)
      if (has[i]) {
        ops[i].gpu_start_ns = int64_t(uint64_t(ops[i].enter_ns) + uint64_t(r.S()));
        ops[i].gpu_end_ns = int64_t(uint64_t(*ops[i].gpu_start_ns) + uint64_t(r.S()));
      }
    present(completion, &has);
    for (size_t i = 0; i < n; ++i)
      if (has[i]) ops[i].completion_ns = int64_t(uint64_t(ops[i].enter_ns) + uint64_t(r.S()));
  }
  uint64_t m = r.U();
  if (m > r.left() / 10) return kBad;  // a sample takes at least 10 bytes
  auto& samples = f->records.samples;
  samples.resize(m);
  for (size_t i = 0; i < m; ++i) {
    ResourceSample& s = samples[i];
    const ResourceSample* last = i ? &samples[i - 1] : nullptr;
    s.time_ns = (last ? last->time_ns : start_ns) + uint64_t(r.S());
    const uint8_t* cpu = r.Bytes(4);
    if (!cpu) return kBad;
    uint32_t bits = uint32_t(cpu[0]) | uint32_t(cpu[1]) << 8 | uint32_t(cpu[2]) << 16 |
                    uint32_t(cpu[3]) << 24;
    std::memcpy(&s.cpu_percent, &bits, 4);
    uint64_t* now[] = {&s.rss_bytes, &s.net_rx_bytes, &s.net_tx_bytes, &s.disk_read_bytes,
                       &s.disk_write_bytes};
    const uint64_t was[] = {last ? last->rss_bytes : 0, last ? last->net_rx_bytes : 0,
                            last ? last->net_tx_bytes : 0, last ? last->disk_read_bytes : 0,
                            last ? last->disk_write_bytes : 0};
    for (int k = 0; k < 5; ++k) *now[k] = last ? was[k] + uint64_t(r.S()) : r.U();
  }
  if (!r.ok() || !r.done()) return kBad;
  DecodeFooter(c.footer(), &f->records);
  return "";
}

enum class FrameCheck { kOk, kTruncated, kBad };

// Checks the chunk frame at `pos` (length, checksum, verifier, columns) and
// decodes it into *frame; *why says what failed.
// The frame at `pos` (length, CRC-32C, payload), header and chunks alike:
// kOk with its checksummed payload in *payload (8-aligned, copied into
// *aligned when the file has it elsewhere) and length in *len; kTruncated
// when the file ends inside it (*len set once its 8 framing bytes are there);
// kBad with *why.
FrameCheck CheckFrame(const uint8_t* data, size_t size, size_t pos, const uint8_t** payload, uint32_t* len,
                      std::vector<uint64_t>* aligned, std::string* why) {
  if (size - pos < 8) return FrameCheck::kTruncated;
  uint32_t crc = 0;
  *len = 0;
  for (int i = 0; i < 4; ++i) {
    *len |= uint32_t(data[pos + i]) << (8 * i);
    crc |= uint32_t(data[pos + 4 + i]) << (8 * i);
  }
  if (*len > kMaxFramePayload) {
    *why = "frame length " + std::to_string(*len) + " exceeds the limit";
    return FrameCheck::kBad;
  }
  if (size - pos - 8 < *len) return FrameCheck::kTruncated;
  *payload = data + pos + 8;
  // FlatBuffers reads 8-byte scalars in place; the writer keeps payloads
  // 8-aligned, but a damaged or hand-made file may not.
  if (reinterpret_cast<uintptr_t>(*payload) % 8 != 0) {
    aligned->assign(*len / 8 + 1, 0);
    std::memcpy(aligned->data(), *payload, *len);
    *payload = reinterpret_cast<const uint8_t*>(aligned->data());
  }
  if (Crc32c(*payload, *len) != crc) {
    *why = "checksum mismatch";
    return FrameCheck::kBad;
  }
  return FrameCheck::kOk;
}

FrameCheck CheckChunkFrame(const uint8_t* data, size_t size, size_t pos, const Layout& layout,
                           ChunkFrame* frame, std::string* why) {
  const uint8_t* payload = nullptr;
  uint32_t len = 0;
  std::vector<uint64_t> aligned;
  if (FrameCheck framed = CheckFrame(data, size, pos, &payload, &len, &aligned, why); framed != FrameCheck::kOk)
    return framed;
  flatbuffers::Verifier verifier(payload, len, /*max_depth=*/16, /*max_tables=*/8u << 20);
  if (layout.version >= 2) {
    if (len < 8 || !fb::v2::ChunkBufferHasIdentifier(payload) ||
        !fb::v2::VerifyChunkBuffer(verifier)) {
      *why = "malformed FlatBuffer";
      return FrameCheck::kBad;
    }
    std::string err = DecodeChunkV2(*fb::v2::GetChunk(payload), layout.start_ns, frame);
    if (!err.empty()) {
      *why = err;
      return FrameCheck::kBad;
    }
    frame->len = len;
    return FrameCheck::kOk;
  }
  if (len < 8 || !fbv::ChunkBufferHasIdentifier(payload) || !fbv::VerifyChunkBuffer(verifier)) {
    *why = "malformed FlatBuffer";
    return FrameCheck::kBad;
  }
  const auto* c = fbv::GetChunk(payload);
  std::string err = DecodeChunk(*c, &frame->records);
  if (!err.empty()) {
    *why = err;
    return FrameCheck::kBad;
  }
  frame->len = len;
  frame->index = c->index();
  if (c->events_before()) frame->events_before = *c->events_before();
  return FrameCheck::kOk;
}

// Resynchronisation: the first offset at or after `from` that starts a
// chunk frame passing every check, numbered `min_index` or later. A chunk
// frame carries the FlatBuffers identifier "DLTC" at a fixed place (12
// bytes in: length, checksum, root offset), so only offsets where those
// four bytes sit are tried. Accepting garbage as a chunk would need the
// marker (2^-32 for random bytes), a length that fits, a CRC-32C equal to
// the one stored (2^-32), a FlatBuffer that passes the verifier and a
// chunk number past the last one read: about 2^-64 per offset.
size_t FindChunkFrame(const uint8_t* data, size_t size, size_t from, uint32_t min_index,
                      const Layout& layout, ChunkFrame* frame) {
  static const char kMarker[4] = {'D', 'L', 'T', 'C'};
  for (size_t q = from; q + 16 <= size;) {
    const void* hit = ::memmem(data + q + 12, size - q - 12, kMarker, sizeof(kMarker));
    if (!hit) break;
    size_t at = size_t(static_cast<const uint8_t*>(hit) - data) - 12;
    ChunkFrame f;
    std::string why;
    if (CheckChunkFrame(data, size, at, layout, &f, &why) == FrameCheck::kOk &&
        f.index >= min_index) {
      *frame = std::move(f);
      return at;
    }
    q = at + 1;
  }
  return size_t(-1);
}

std::string Thousands(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = int(s.size()) - 3; i > 0; i -= 3) s.insert(size_t(i), ",");
  return s;
}

std::string DescribeSkip(const SkippedBytes& k, uint64_t size) {
  std::string out = "corrupt chunk " + std::to_string(k.first_chunk) + " at byte " +
                    std::to_string(k.begin) + ": " + k.why + "; skipped bytes " +
                    std::to_string(k.begin) + "-" + std::to_string(k.end);
  std::string lost;
  if (k.chunks_lost >= 0)
    lost = std::to_string(k.chunks_lost) + (k.chunks_lost == 1 ? " chunk, " : " chunks, ");
  lost += k.events_lost >= 0 ? Thousands(uint64_t(k.events_lost)) + " events lost"
                             : "events lost unknown";
  out += " (" + lost + ")";
  if (k.end >= size && k.chunks_lost < 0) out += ", no valid chunk after it";
  if (k.events_unresolved > 0)
    out += "; " + Thousands(uint64_t(k.events_unresolved)) +
           " later events dropped: their operation shapes were defined in the lost bytes";
  return out;
}

}  // namespace

RankTrace ReadTraceBuffer(const uint8_t* data, size_t size, const std::string& name) {
  RankTrace out;
  out.path = name;
  out.file_bytes = size;
  auto stop = [&](ReadStatus status, uint64_t offset, const std::string& why) {
    out.status = status;
    out.error_offset = offset;
    out.message = name + ": " + why;
    return out;
  };

  if (size < sizeof(kFileMagic)) {
    if (size == 0) return stop(ReadStatus::kNotATrace, 0, "empty file, not a dltrace trace");
    if (std::memcmp(data, kFileMagic, size) == 0)
      return stop(ReadStatus::kTruncated, size,
                  "truncated at byte " + std::to_string(size) + ", inside the file magic");
    return stop(ReadStatus::kNotATrace, 0, "not a dltrace trace (bad magic)");
  }
  if (std::memcmp(data, kFileMagic, sizeof(kFileMagic)) != 0)
    return stop(ReadStatus::kNotATrace, 0, "not a dltrace trace (bad magic)");

  // The header frame: without it nothing after means anything.
  size_t pos = sizeof(kFileMagic);
  Layout layout;
  {
    const std::string at = " at byte " + std::to_string(pos);
    const uint8_t* payload = nullptr;
    uint32_t len = 0;
    std::vector<uint64_t> aligned;
    std::string why;
    switch (CheckFrame(data, size, pos, &payload, &len, &aligned, &why)) {
      case FrameCheck::kOk:
        break;
      case FrameCheck::kTruncated:
        if (size - pos < 8)
          return stop(ReadStatus::kTruncated, pos,
                      "truncated at byte " + std::to_string(size) + ", before the header");
        return stop(ReadStatus::kTruncated, pos,
                    "truncated at byte " + std::to_string(size) + " inside header (frame" + at + " needs " +
                        std::to_string(len + 8) + " bytes; 0 whole chunks read)");
      case FrameCheck::kBad:
        return stop(ReadStatus::kCorrupt, pos, "corrupt header" + at + ": " + why);
    }
    flatbuffers::Verifier verifier(payload, len, /*max_depth=*/16, /*max_tables=*/8u << 20);
    if (len < 8 || !fbv::FileHeaderBufferHasIdentifier(payload))
      return stop(ReadStatus::kNotATrace, pos, "not a dltrace trace (no header frame)");
    if (!fbv::VerifyFileHeaderBuffer(verifier))
      return stop(ReadStatus::kCorrupt, pos, "corrupt header" + at + ": malformed FlatBuffer");
    const auto* h = fbv::GetFileHeader(payload);
    if (h->schema_version() > kSchemaVersion)
      return stop(ReadStatus::kUnsupportedVersion, pos,
                  "written with trace schema version " + std::to_string(h->schema_version()) +
                      ", this dltrace reads versions up to " + std::to_string(kSchemaVersion) +
                      "; upgrade dltrace");
    if (h->schema_version() == 0)
      return stop(ReadStatus::kCorrupt, pos, "corrupt header" + at + ": schema version 0");
    out.header = DecodeHeader(*h);
    out.has_header = true;
    layout.version = h->schema_version();
    layout.start_ns = h->start_monotonic_ns();
    pos += 8 + size_t(len);
  }

  // Chunks, skipping over frames that fail their checks.
  uint32_t next_index = 0;
  std::string tail;  // how the file ends when it does not end on a footer
  uint64_t tail_offset = 0;
  // Version 2: the shape dictionary as far as it is known (an entry lost
  // with a skipped chunk is missing), and which chunk started it.
  std::unordered_map<uint32_t, OpEvent> shapes;
  uint32_t dictionary_start = 0;
  std::unordered_set<uint32_t> comm_ids;  // a new dictionary repeats the communicators
  uint64_t unresolved = 0;                // ops dropped for a missing shape
  auto take = [&](ChunkFrame& f, size_t at, std::optional<SkippedBytes> loss) {
    if (f.index > next_index && !loss) {
      loss = SkippedBytes{at, at, next_index, -1, -1,
                          "chunk says it is number " + std::to_string(f.index)};
    }
    const uint64_t seen = out.ops.size() + unresolved;
    if (loss) {
      loss->end = at;
      loss->chunks_lost = int64_t(f.index) - int64_t(next_index);
      if (f.events_before && *f.events_before >= seen)
        loss->events_lost = int64_t(*f.events_before - seen);
      out.skipped.push_back(*loss);
    }
    RankTrace& r = f.records;
    if (f.v2) {
      // A chunk that starts a dictionary, or one whose dictionary began in
      // a chunk that was lost, drops what is known: its ids mean other shapes.
      const uint32_t start = f.index - f.dictionary_back;
      if (f.dictionary_back == 0 || out.chunks == 0 || start != dictionary_start) shapes.clear();
      dictionary_start = start;
      for (size_t k = 0; k < f.new_shapes.size(); ++k)
        shapes[f.shapes_base + uint32_t(k)] = std::move(f.new_shapes[k]);
      uint64_t missing = 0;
      for (size_t i = 0; i < r.ops.size(); ++i) {
        auto it = shapes.find(f.shape_ids[i]);
        if (it == shapes.end()) {
          ++missing;
          continue;
        }
        OpEvent op = it->second;
        op.seq = r.ops[i].seq;
        op.group = r.ops[i].group;
        op.enter_ns = r.ops[i].enter_ns;
        op.exit_ns = r.ops[i].exit_ns;
        op.gpu_start_ns = r.ops[i].gpu_start_ns;
        op.gpu_end_ns = r.ops[i].gpu_end_ns;
        op.completion_ns = r.ops[i].completion_ns;
        out.ops.push_back(std::move(op));
      }
      if (missing > 0) {
        // Only a loss before this chunk can leave an entry missing; a file
        // that refers to a shape it never defined says so as damage here.
        if (out.skipped.empty())
          out.skipped.push_back({at, at, f.index, 0, 0, "operations refer to shapes no chunk defined"});
        out.skipped.back().events_unresolved += int64_t(missing);
        unresolved += missing;
      }
      for (auto& c : r.communicators)
        if (comm_ids.insert(c.id).second) out.communicators.push_back(std::move(c));
    } else {
      for (auto& c : r.communicators) out.communicators.push_back(std::move(c));
      for (auto& o : r.ops) out.ops.push_back(std::move(o));
    }
    out.samples.insert(out.samples.end(), r.samples.begin(), r.samples.end());
    if (r.footer) out.footer = r.footer;
    next_index = f.index + 1;
    ++out.chunks;
  };
  while (pos < size) {
    const std::string at = " at byte " + std::to_string(pos);
    if (out.footer) {
      out.skipped.push_back({pos, size, next_index, 0, 0, "data after the footer"});
      break;
    }
    ChunkFrame f;
    std::string why;
    FrameCheck check = CheckChunkFrame(data, size, pos, layout, &f, &why);
    if (check == FrameCheck::kOk && f.index < next_index) {
      check = FrameCheck::kBad;
      why = "chunk says it is number " + std::to_string(f.index);
    }
    if (check == FrameCheck::kOk) {
      take(f, pos, std::nullopt);
      pos += 8 + size_t(f.len);
      continue;
    }
    // A torn tail ends the file, unless a valid chunk follows (then the
    // frame's length was damaged, not cut).
    ChunkFrame next;
    size_t q = FindChunkFrame(data, size, pos + 1, next_index, layout, &next);
    if (q == size_t(-1)) {
      if (check == FrameCheck::kTruncated) {
        tail_offset = pos;
        if (size - pos < 8)
          tail = "truncated at byte " + std::to_string(size) + " inside the frame prefix of chunk " +
                 std::to_string(next_index) + " (" + std::to_string(out.chunks) +
                 " whole chunks read)";
        else
          tail = "truncated at byte " + std::to_string(size) + " inside chunk " +
                 std::to_string(next_index) + " (frame" + at + " needs " +
                 std::to_string(8 + (uint64_t(data[pos]) | uint64_t(data[pos + 1]) << 8 |
                                     uint64_t(data[pos + 2]) << 16 |
                                     uint64_t(data[pos + 3]) << 24)) +
                 " bytes; " + std::to_string(out.chunks) + " whole chunks read)";
      } else {
        out.skipped.push_back({pos, size, next_index, -1, -1, why});
      }
      break;
    }
    if (check == FrameCheck::kTruncated) why = "frame length runs past the end of the file";
    take(next, q, SkippedBytes{pos, q, next_index, -1, -1, why});
    pos = q + 8 + size_t(next.len);
  }

  // Where the footer counts what the file should hold, a single loss of
  // unknown size is what is missing.
  if (out.footer && out.footer->events_written >= out.ops.size() + unresolved) {
    int64_t missing = int64_t(out.footer->events_written - out.ops.size() - unresolved);
    int unknown = 0;
    for (const auto& k : out.skipped) {
      if (k.events_lost < 0) ++unknown;
      else missing -= k.events_lost;
    }
    if (unknown == 1 && missing >= 0)
      for (auto& k : out.skipped)
        if (k.events_lost < 0) k.events_lost = missing;
  }
  if (tail.empty() && !out.footer) {
    tail_offset = pos;
    tail = "no footer after " + std::to_string(out.chunks) +
           " chunks: the recording did not finish (process killed?)";
  }
  if (out.skipped.empty()) {
    if (tail.empty()) {
      out.status = ReadStatus::kComplete;
      return out;
    }
    return stop(tail.rfind("truncated", 0) == 0 ? ReadStatus::kTruncated : ReadStatus::kNoFooter,
                tail_offset, tail);
  }
  std::string why;
  for (const auto& k : out.skipped) why += (why.empty() ? "" : "; ") + DescribeSkip(k, size);
  if (!tail.empty()) why += "; " + tail;
  return stop(ReadStatus::kDamaged, out.skipped.front().begin, why);
}

RankTrace ReadTraceFile(const std::string& path) {
  RankTrace fail;
  fail.path = path;
  fail.status = ReadStatus::kIoError;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    fail.message = path + ": cannot open: " + std::strerror(errno);
    return fail;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    fail.message = path + ": not a regular file";
    ::close(fd);
    return fail;
  }
  size_t size = size_t(st.st_size);
  if (size == 0) {
    ::close(fd);
    return ReadTraceBuffer(nullptr, 0, path);
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) {
    fail.message = path + ": cannot map: " + std::strerror(errno);
    return fail;
  }
  RankTrace out = ReadTraceBuffer(static_cast<const uint8_t*>(map), size, path);
  ::munmap(map, size);
  return out;
}

}  // namespace dltrace::formats
