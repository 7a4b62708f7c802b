// SPDX-License-Identifier: GPL-2.0-only
// TraceWriter: builds chunk FlatBuffers (new shape-dictionary entries plus
// packed per-event columns; version 1: a whole dictionary and FlatBuffers
// columns per chunk) and appends them as length + CRC-32C framed records.
#include "dltrace/formats/writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <algorithm>
#include <cstring>
#include <deque>
#include <limits>
#include <type_traits>
#include <unordered_map>

#include "chunk_generated.h"
#include "chunk_v2_generated.h"
#include "dltrace/formats/crc32c.h"
#include "header_generated.h"
#include "packed.h"

namespace dltrace::formats {
namespace fbv = fb::v1;

namespace {

std::string Errno(const std::string& what, const std::string& path) {
  return path + ": " + what + ": " + std::strerror(errno);
}

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fbv::KeyValue>>> EncodeKeyValues(
    flatbuffers::FlatBufferBuilder& b, const KeyValues& kvs) {
  std::vector<flatbuffers::Offset<fbv::KeyValue>> out;
  for (const auto& [k, v] : kvs) out.push_back(fbv::CreateKeyValueDirect(b, k.c_str(), v.c_str()));
  return b.CreateVector(out);
}

// Shape identity: every OpEvent field that goes into OpShape. Hashing the
// fields directly (not a serialised key) keeps the flusher cheap.
struct ShapeHash {
  size_t operator()(const OpEvent* o) const {
    uint64_t h = 0x9E3779B97F4A7C15ull;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001B3ull + (h >> 29); };
    mix(uint64_t(o->kind) | uint64_t(o->datatype) << 8 | uint64_t(o->red_op) << 16 |
        uint64_t(o->captured_in_graph) << 24 | uint64_t(o->comm) << 32);
    mix(o->count);
    mix(o->bytes);
    mix(uint64_t(uint32_t(o->peer)) | uint64_t(uint32_t(o->tag)) << 32);
    mix(o->stream);
    mix(o->thread);
    mix(uint64_t(uint8_t(o->nccl_algorithm)) | uint64_t(uint8_t(o->nccl_protocol)) << 8 |
        uint64_t(o->nccl_channels) << 16);
    for (auto v : o->peer_send_bytes) mix(v);
    mix(o->peer_send_bytes.size());
    for (auto v : o->peer_recv_bytes) mix(v);
    return size_t(h);
  }
};

struct ShapeEqual {
  bool operator()(const OpEvent* a, const OpEvent* b) const {
    return a->kind == b->kind && a->comm == b->comm && a->count == b->count &&
           a->datatype == b->datatype && a->bytes == b->bytes && a->red_op == b->red_op &&
           a->peer == b->peer && a->tag == b->tag && a->stream == b->stream &&
           a->thread == b->thread && a->captured_in_graph == b->captured_in_graph &&
           a->peer_send_bytes == b->peer_send_bytes && a->peer_recv_bytes == b->peer_recv_bytes &&
           a->nccl_algorithm == b->nccl_algorithm && a->nccl_protocol == b->nccl_protocol &&
           a->nccl_channels == b->nccl_channels;
  }
};

// A column stored narrow when every value fits, wide otherwise.
template <typename Narrow, typename Wide>
struct Column {
  std::vector<Wide> values;
  bool any_set = false;  // some value differs from the default
  bool fits() const {
    for (Wide v : values)
      if (v < Wide(std::numeric_limits<Narrow>::min()) ||
          v > Wide(std::numeric_limits<Narrow>::max()))
        return false;
    return true;
  }
  // Narrow/wide sentinels must map onto each other.
  std::vector<Narrow> narrow(Wide wide_sentinel, Narrow narrow_sentinel) const {
    std::vector<Narrow> out;
    out.reserve(values.size());
    for (Wide v : values) out.push_back(v == wide_sentinel ? narrow_sentinel : Narrow(v));
    return out;
  }
};

}  // namespace

std::vector<uint8_t> EncodeHeader(const Header& h) {
  flatbuffers::FlatBufferBuilder b(1024);
  std::vector<flatbuffers::Offset<flatbuffers::String>> argv;
  for (const auto& a : h.command_line) argv.push_back(b.CreateString(a));
  auto argv_off = b.CreateVector(argv);
  auto root = fbv::CreateFileHeader(
      b, h.schema_version, h.global_rank, h.world_size, h.local_rank, b.CreateString(h.host), h.pid,
      argv_off, h.start_monotonic_ns, h.start_realtime_ns, b.CreateString(h.recorder_version),
      b.CreateString(h.nccl_version), b.CreateString(h.mpi_version), h.gpu_device,
      b.CreateString(h.gpu_bus_id), b.CreateString(h.job_id), EncodeKeyValues(b, h.rank_env),
      EncodeKeyValues(b, h.attributes), h.nccl_env.empty() ? 0 : EncodeKeyValues(b, h.nccl_env));
  fbv::FinishFileHeaderBuffer(b, root);
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

// Version 2: the shapes written since the chunk that started the current
// dictionary, and what decides when the next chunk starts a new one.
struct WriterDictionary {
  std::deque<OpEvent> shapes;  // id = position; stable addresses for `ids`
  std::unordered_map<const OpEvent*, uint32_t, ShapeHash, ShapeEqual> ids;
  std::vector<Communicator> comms;  // every communicator of the file, repeated by a new dictionary
  // Entries new in the previous chunk, which the next chunk repeats: losing
  // one chunk then never costs the shapes it defined.
  uint32_t last_base = 0;  // ids last_base ... shapes.size() - 1
  std::vector<Communicator> last_comms;
  uint32_t first_chunk = 0;         // the chunk that started it
  uint64_t bytes = 0;               // file bytes since it started
  uint64_t entry_bytes = 0;         // of which shape and communicator entries
  // A chunk's packed data before it goes into the FlatBuffer (kept, and
  // not zeroed: every byte used is written first).
  std::unique_ptr<uint8_t[]> scratch;
  size_t scratch_size = 0;
};

// The chunk being filled: each op's times and the id of its shape among
// the chunk's distinct shapes (ids in order of first use, which both chunk
// versions number their new entries in). A loop of one call compares each
// op with the one before only (or, through RepeatOpRoom, not at all) and
// stores its times: no OpEvent is kept per op.
struct PendingChunk {
  // The ops, in pages that are kept for the next chunk: adding one never
  // moves the ones before (as a growing vector would: a copy of each op).
  class Ops {
   public:
    static constexpr size_t kPage = 4096;
    size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }
    const OpTimes& times(size_t i) const { return pages_[i / kPage]->times[i % kPage]; }
    // Room for up to *N more ops, contiguous (fewer at a page's end):
    // fill their times, then Added(count, shape id).
    OpTimes* Room(size_t* n) {
      const size_t page = n_ / kPage, at = n_ % kPage;
      if (page == pages_.size()) pages_.emplace_back(new Page);  // not zeroed: filled before read
      *n = std::min(*n, kPage - at);
      return &pages_[page]->times[at];
    }
    void Added(size_t n, uint32_t shape) {
      uint32_t* ids = &pages_[n_ / kPage]->shape[n_ % kPage];
      std::fill(ids, ids + n, shape);
      n_ += n;
    }
    void clear() { n_ = 0; }
    // F(times, shape id) for each op from FROM on, page by page.
    template <typename F>
    void ForEach(F f, size_t from = 0) const {
      for (size_t i = from; i < n_;) {
        const Page& page = *pages_[i / kPage];
        const size_t at = i % kPage, end = std::min(kPage, n_ - (i - at));
        const uint32_t* shape = page.shape + at;
        for (const OpTimes *t = page.times + at, *stop = page.times + end; t != stop; ++t, ++shape)
          f(*t, *shape);
        i += end - at;
      }
    }

   private:
    struct Page {
      OpTimes times[kPage];
      uint32_t shape[kPage];
    };
    std::vector<std::unique_ptr<Page>> pages_;
    size_t n_ = 0;
  };
  Ops ops;
  std::deque<OpEvent> shapes;  // id = position; stable addresses for `ids`
  std::unordered_map<const OpEvent*, uint32_t, ShapeHash, ShapeEqual> ids;
  // The shape of the op added last, kept across chunks (RepeatOpRoom), and
  // its id in this chunk (-1 until an op of this chunk uses it).
  OpEvent last;
  bool has_last = false;
  int64_t last_id = -1;

  uint32_t Intern(const OpEvent& op) {
    auto it = ids.find(&op);
    if (it != ids.end()) return it->second;
    shapes.push_back(op);
    return ids.emplace(&shapes.back(), uint32_t(shapes.size() - 1)).first->second;
  }
  uint32_t LastId() {
    if (last_id < 0) last_id = Intern(last);
    return uint32_t(last_id);
  }
  void Clear() {
    ops.clear();
    ids.clear();
    shapes.clear();
    last_id = -1;
  }
};

TraceWriter::TraceWriter(int fd, std::string path, uint32_t schema_version, uint64_t start_ns)
    : fd_(fd),
      path_(std::move(path)),
      pending_(std::make_unique<PendingChunk>()),
      schema_version_(schema_version),
      start_ns_(start_ns),
      dict_(std::make_unique<WriterDictionary>()) {}

TraceWriter::~TraceWriter() {
  if (fd_ >= 0) ::close(fd_);
}

std::unique_ptr<TraceWriter> TraceWriter::Create(const std::string& path, const Header& header,
                                                 std::string* error, uint32_t schema_version) {
  if (schema_version != 1 && schema_version != kSchemaVersion) {
    *error = path + ": cannot write trace schema version " + std::to_string(schema_version);
    return nullptr;
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error = Errno("cannot create trace file", path);
    return nullptr;
  }
  auto w = FromFd(fd, path, header, error, schema_version);
  // A file without a whole header is no trace: leave nothing that a reader
  // of the directory would have to refuse.
  if (!w) ::unlink(path.c_str());
  return w;
}

std::unique_ptr<TraceWriter> TraceWriter::FromFd(int fd, const std::string& path,
                                                 const Header& header, std::string* error,
                                                 uint32_t schema_version) {
  if (schema_version != 1 && schema_version != kSchemaVersion) {
    ::close(fd);
    *error = path + ": cannot write trace schema version " + std::to_string(schema_version);
    return nullptr;
  }
  std::unique_ptr<TraceWriter> w(
      new TraceWriter(fd, path, schema_version, header.start_monotonic_ns));
  Header h = header;
  h.schema_version = schema_version;
  std::vector<uint8_t> payload = EncodeHeader(h);
  if (!w->WriteAll(kFileMagic, sizeof(kFileMagic), error) ||
      !w->WriteFrame(payload.data(), payload.size(), error))
    return nullptr;
  w->bytes_written_ = sizeof(kFileMagic) + 8 + payload.size();
  // No room for even the footer: the writer starts failed, the header stays.
  std::string err;
  if (!w->Reserve(0, &err)) w->Fail(err, errno);
  return w;
}

void TraceWriter::AddCommunicator(const Communicator& comm) { comms_.push_back(comm); }

size_t TraceWriter::pending_ops() const { return pending_->ops.size(); }

void TraceWriter::AddOp(const OpEvent& op) {
  if (failed()) {
    ++ops_lost_;
    return;
  }
  PendingChunk& p = *pending_;
  uint32_t id;
  // Training loops repeat: most ops share the previous op's shape.
  if (p.has_last && ShapeEqual()(&p.last, &op)) {
    id = p.LastId();
  } else {
    id = p.Intern(op);
    p.last = op;
    p.has_last = true;
    p.last_id = id;
  }
  OpTimes t{};
  const bool gpu = op.gpu_start_ns && op.gpu_end_ns;
  t.has = uint8_t((gpu ? OpTimes::kGpuTimes : 0) | (op.completion_ns ? OpTimes::kCompletion : 0));
  t.group = op.group;
  t.seq = op.seq;
  t.enter_ns = op.enter_ns;
  t.exit_ns = op.exit_ns;
  if (gpu) {
    t.gpu_start_ns = *op.gpu_start_ns;
    t.gpu_end_ns = *op.gpu_end_ns;
  }
  t.completion_ns = op.completion_ns.value_or(0);
  size_t one = 1;
  *p.ops.Room(&one) = t;
  p.ops.Added(1, id);
  FlushIfFull();
}

OpTimes* TraceWriter::RepeatOpRoom(size_t* n) {
  PendingChunk& p = *pending_;
  if (failed() || !p.has_last) {  // nothing is kept: room for them to be counted as lost
    *n = std::min<size_t>(*n, 256);
    lost_room_.resize(*n);
    return lost_room_.data();
  }
  *n = std::min(*n, std::min(kMaxOpsPerChunk, kMaxShapesPerChunk) - p.ops.size());
  return p.ops.Room(n);
}

void TraceWriter::AddedRepeatOps(size_t n) {
  PendingChunk& p = *pending_;
  if (failed() || !p.has_last) {  // (no op before: a caller's mistake)
    ops_lost_ += n;
    return;
  }
  p.ops.Added(n, p.LastId());
  FlushIfFull();
}

void TraceWriter::FlushIfFull() {
  // Distinct shapes are at most the ops, so flushing at either limit
  // keeps version 1's u16 shape index from wrapping. A failure here is
  // kept in failure_ and returned by the next Flush.
  const size_t n = pending_->ops.size();
  if (__builtin_expect(n >= kMaxOpsPerChunk || n >= kMaxShapesPerChunk, 0)) {
    std::string err;
    Flush(&err);
  }
}

void TraceWriter::AddSample(const ResourceSample& sample) {
  if (!failed()) samples_.push_back(sample);
}

bool TraceWriter::Reserve(size_t size, std::string* error) {
  if (!can_reserve_) return true;
  if (::fallocate(fd_, FALLOC_FL_KEEP_SIZE, off_t(bytes_written_),
                  off_t(size + kFooterReserve)) == 0)
    return true;
  if (errno == EOPNOTSUPP || errno == ENOSYS || errno == EINVAL || errno == ESPIPE ||
      errno == ENODEV) {
    can_reserve_ = false;  // NFSv3, some FUSE file systems, a pipe: write and see
    return true;
  }
  *error = Errno("write failed", path_);
  return false;
}

void TraceWriter::Fail(const std::string& error, int err) {
  if (failure_.empty()) {
    failure_ = error;
    failure_errno_ = err;
  }
  // Cut a torn frame off, so the file stays whole frames and takes a footer.
  if (fd_ >= 0) {
    int saved = errno;
    if (::ftruncate(fd_, off_t(bytes_written_)) == 0) ::lseek(fd_, 0, SEEK_END);
    errno = saved;
  }
  ops_lost_ += pending_->ops.size();
  comms_.clear();
  pending_->Clear();
  samples_.clear();
}

bool TraceWriter::WriteAll(const void* data, size_t size, std::string* error) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd_, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = Errno("write failed", path_);
      return false;
    }
    p += n;
    size -= size_t(n);
  }
  return true;
}

bool TraceWriter::WriteFrame(const uint8_t* payload, size_t size, std::string* error) {
  if (size > kMaxFramePayload) {
    *error = path_ + ": chunk of " + std::to_string(size) + " bytes exceeds the frame limit";
    return false;
  }
  uint8_t prefix[8];
  uint32_t len = uint32_t(size);
  uint32_t crc = Crc32c(payload, size);
  for (int i = 0; i < 4; ++i) {
    prefix[i] = uint8_t(len >> (8 * i));
    prefix[4 + i] = uint8_t(crc >> (8 * i));
  }
  // One writev per frame keeps a killed writer's torn tail to the last frame.
  iovec iov[2] = {{prefix, sizeof(prefix)}, {const_cast<uint8_t*>(payload), size}};
  int first = 0;
  while (first < 2) {
    ssize_t n = ::writev(fd_, iov + first, 2 - first);
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = Errno("write failed", path_);
      return false;
    }
    for (size_t left = size_t(n); left > 0 && first < 2;) {
      size_t step = std::min(left, iov[first].iov_len);
      iov[first].iov_base = static_cast<uint8_t*>(iov[first].iov_base) + step;
      iov[first].iov_len -= step;
      left -= step;
      if (iov[first].iov_len == 0) ++first;
    }
    while (first < 2 && iov[first].iov_len == 0) ++first;
  }
  return true;
}

bool TraceWriter::Flush(std::string* error) {
  if (failed()) {
    Fail(failure_, failure_errno_);  // counts and forgets what is pending
    *error = failure_;
    return false;
  }
  if (fd_ < 0) {
    *error = path_ + ": writer is closed";
    return false;
  }
  if (pending_records() == 0) return true;
  return WriteChunk(nullptr, error);
}

bool TraceWriter::Close(const Footer& footer, std::string* error) {
  if (fd_ < 0) {
    *error = path_ + ": writer is closed";
    return false;
  }
  std::string flush_error;
  Flush(&flush_error);
  Footer f = footer;
  bool ok = true;
  if (failed()) {
    // What reached the file, and what the caller counted plus what never did.
    f.events_written = ops_written_;
    f.samples_written = samples_written_;
    f.events_dropped += ops_lost_;
    f.write_error = failure_.substr(0, 256);
    f.reason = f.reason.substr(0, 64);
    *error = failure_;
    ok = false;
  }
  // A removed file takes no footer that anyone could read.
  struct stat st {};
  bool removed = ::fstat(fd_, &st) == 0 && st.st_nlink == 0;
  std::string footer_error;
  bool footer_ok = !removed && WriteChunk(&f, &footer_error);
  if (!footer_ok && ok) {
    *error = removed ? path_ + ": trace file was removed while recording" : footer_error;
    ok = false;
  }
  // Give back the reserve past the end of the file.
  if (can_reserve_) {
    int ignored = ::ftruncate(fd_, off_t(bytes_written_));
    (void)ignored;
  }
  if (ok && ::fsync(fd_) != 0 && errno != EINVAL) {
    *error = Errno("fsync failed", path_);
    ok = false;
  }
  if (::close(fd_) != 0 && ok) {
    *error = Errno("close failed", path_);
    ok = false;
  }
  fd_ = -1;
  footer_written_ = footer_ok;
  return ok;
}

namespace {

// What one chunk holds, for either layout.
struct ChunkInput {
  uint32_t index;
  uint64_t events_before;
  const std::vector<Communicator>& comms;
  const PendingChunk::Ops& ops;
  const std::deque<OpEvent>& shapes;  // ops' shape ids index these
  const std::vector<ResourceSample>& samples;
  const Footer* footer;
};

flatbuffers::Offset<fbv::Communicator> EncodeCommunicator(flatbuffers::FlatBufferBuilder& b,
                                                          const Communicator& c) {
  return fbv::CreateCommunicator(b, c.id, c.api, b.CreateString(c.name), c.size, c.rank,
                                 b.CreateVector(c.members), c.parent, c.color, c.key,
                                 c.nccl_unique_id_hash, c.cuda_device, b.CreateString(c.bus_id),
                                 c.created_ns);
}

flatbuffers::Offset<fbv::OpShape> EncodeShape(flatbuffers::FlatBufferBuilder& b, const OpEvent& op) {
  return fbv::CreateOpShape(b, op.kind, op.comm, op.count, op.datatype, op.bytes, op.red_op, op.peer,
                            op.tag, op.stream, op.thread, op.captured_in_graph,
                            op.peer_send_bytes.empty() ? 0 : b.CreateVector(op.peer_send_bytes),
                            op.peer_recv_bytes.empty() ? 0 : b.CreateVector(op.peer_recv_bytes),
                            op.nccl_algorithm, op.nccl_protocol, op.nccl_channels);
}

flatbuffers::Offset<fbv::Footer> EncodeFooter(flatbuffers::FlatBufferBuilder& b, const Footer& f) {
  std::vector<flatbuffers::Offset<fbv::CallCount>> unrecorded;
  for (const auto& [name, calls] : f.unrecorded)
    unrecorded.push_back(fbv::CreateCallCount(b, b.CreateString(name), calls));
  return fbv::CreateFooter(b, f.events_written, f.events_dropped, f.samples_written,
                           f.end_monotonic_ns, f.end_realtime_ns, b.CreateString(f.reason),
                           f.write_error.empty() ? 0 : b.CreateString(f.write_error),
                           unrecorded.empty() ? 0 : b.CreateVector(unrecorded));
}

// Version 1: the whole shape dictionary and FlatBuffers columns in every chunk.
void EncodeChunkV1(flatbuffers::FlatBufferBuilder& b, const ChunkInput& in) {
  const Footer* footer = in.footer;

  std::vector<flatbuffers::Offset<fbv::Communicator>> comms;
  for (const auto& c : in.comms) comms.push_back(EncodeCommunicator(b, c));

  // Shape dictionary (the chunk's shapes, in order of first use) and
  // per-event columns.
  std::vector<flatbuffers::Offset<fbv::OpShape>> shapes;
  for (const auto& shape : in.shapes) shapes.push_back(EncodeShape(b, shape));
  std::vector<uint16_t> shape_col;
  Column<uint32_t, uint64_t> seq;
  Column<uint32_t, uint64_t> group;
  Column<int32_t, int64_t> enter;
  Column<uint32_t, uint64_t> duration;
  Column<int32_t, int64_t> gpu_start;
  Column<uint32_t, uint64_t> gpu_duration;
  Column<uint32_t, uint64_t> completion;
  const int64_t base_ns = in.ops.empty() ? 0 : in.ops.times(0).enter_ns;
  int64_t prev_enter = base_ns;
  in.ops.ForEach([&](const OpTimes& op, uint32_t shape) {
    shape_col.push_back(uint16_t(shape));
    seq.values.push_back(op.seq);
    group.values.push_back(op.group);
    group.any_set |= op.group != 0;
    enter.values.push_back(op.enter_ns - prev_enter);
    prev_enter = op.enter_ns;
    duration.values.push_back(uint64_t(op.exit_ns - op.enter_ns));
    bool gpu = op.has & OpTimes::kGpuTimes;
    gpu_start.values.push_back(gpu ? op.gpu_start_ns - op.enter_ns : INT64_MIN);
    gpu_duration.values.push_back(gpu ? uint64_t(op.gpu_end_ns - op.gpu_start_ns) : 0);
    gpu_start.any_set |= gpu;
    bool has_completion = op.has & OpTimes::kCompletion;
    completion.values.push_back(has_completion ? uint64_t(op.completion_ns - op.enter_ns)
                                               : UINT64_MAX);
    completion.any_set |= has_completion;
  });
  // A negative duration cannot be stored as unsigned without the wide form.
  auto duration_fits = [&] {
    bool fits = true;
    in.ops.ForEach([&](const OpTimes& op, uint32_t) {
      if (op.exit_ns < op.enter_ns || uint64_t(op.exit_ns - op.enter_ns) > UINT32_MAX)
        fits = false;
    });
    return fits;
  };

  flatbuffers::Offset<fbv::OpColumns> columns = 0;
  if (!in.ops.empty()) {
    auto shape_off = b.CreateVector(shape_col);
    flatbuffers::Offset<flatbuffers::Vector<uint32_t>> seq_n = 0, group_n = 0, dur_n = 0,
                                                      gdur_n = 0, comp_n = 0;
    flatbuffers::Offset<flatbuffers::Vector<uint64_t>> seq_w = 0, dur_w = 0, gdur_w = 0,
                                                      comp_w = 0;
    flatbuffers::Offset<flatbuffers::Vector<int32_t>> enter_n = 0, gst_n = 0;
    flatbuffers::Offset<flatbuffers::Vector<int64_t>> enter_w = 0, gst_w = 0;
    if (seq.fits())
      seq_n = b.CreateVector(seq.narrow(UINT64_MAX, UINT32_MAX));
    else
      seq_w = b.CreateVector(seq.values);
    if (group.any_set) group_n = b.CreateVector(group.narrow(UINT64_MAX, UINT32_MAX));
    if (enter.fits())
      enter_n = b.CreateVector(enter.narrow(INT64_MIN, INT32_MIN));
    else
      enter_w = b.CreateVector(enter.values);
    if (duration_fits())
      dur_n = b.CreateVector(duration.narrow(UINT64_MAX, UINT32_MAX));
    else
      dur_w = b.CreateVector(duration.values);
    if (gpu_start.any_set) {
      // INT32_MIN is the narrow "unknown", so a real offset of INT32_MIN goes wide.
      bool fits = true;
      for (size_t i = 0; i < in.ops.size(); ++i) {
        int64_t v = gpu_start.values[i];
        if (v != INT64_MIN && (v <= INT32_MIN || v > INT32_MAX)) fits = false;
        if (gpu_duration.values[i] > UINT32_MAX) fits = false;
      }
      if (fits) {
        gst_n = b.CreateVector(gpu_start.narrow(INT64_MIN, INT32_MIN));
        gdur_n = b.CreateVector(gpu_duration.narrow(UINT64_MAX, UINT32_MAX));
      } else {
        gst_w = b.CreateVector(gpu_start.values);
        gdur_w = b.CreateVector(gpu_duration.values);
      }
    }
    if (completion.any_set) {
      bool fits = true;
      for (uint64_t v : completion.values)
        if (v != UINT64_MAX && v >= UINT32_MAX) fits = false;
      if (fits)
        comp_n = b.CreateVector(completion.narrow(UINT64_MAX, UINT32_MAX));
      else
        comp_w = b.CreateVector(completion.values);
    }
    columns = fbv::CreateOpColumns(b, shape_off, seq_n, seq_w, group_n, enter_n, enter_w, dur_n,
                                   dur_w, gst_n, gst_w, gdur_n, gdur_w, comp_n, comp_w);
  }

  flatbuffers::Offset<flatbuffers::Vector<const fbv::ResourceSample*>> samples = 0;
  if (!in.samples.empty()) {
    std::vector<fbv::ResourceSample> s;
    for (const auto& r : in.samples)
      s.emplace_back(r.time_ns, r.cpu_percent, r.rss_bytes, r.net_rx_bytes, r.net_tx_bytes,
                     r.disk_read_bytes, r.disk_write_bytes);
    samples = b.CreateVectorOfStructs(s);
  }
  flatbuffers::Offset<fbv::Footer> footer_off = footer ? EncodeFooter(b, *footer) : 0;
  auto root = fbv::CreateChunk(b, in.index, base_ns, comms.empty() ? 0 : b.CreateVector(comms),
                               shapes.empty() ? 0 : b.CreateVector(shapes), columns, samples,
                               footer_off, in.events_before);
  fbv::FinishChunkBuffer(b, root);
}

// Version 2 (formats/README.md, "Chunk data"). A chunk starts a new
// dictionary (shape ids from 0, every communicator repeated) when it is the
// first, when the dictionary holds kMaxDictionaryShapes shapes, or once the
// file has grown by kDictionaryRefresh times the dictionary bytes written
// since the last new one: a reader that lost a chunk with entries in it has
// every shape again within that many bytes, at a cost of 1/kDictionaryRefresh.
constexpr uint64_t kDictionaryRefresh = 32;
constexpr size_t kMaxDictionaryShapes = 1u << 16;

// Column modes of an optional per-event value.
enum : uint64_t { kNone = 0, kAll = 1, kSome = 2 };  // kSome: a presence bitmap first


void PutBitmap(packed::Writer* out, const PendingChunk::Ops& ops, uint8_t has) {
  for (size_t i = 0; i < ops.size(); i += 8) {
    uint8_t byte = 0;
    for (size_t j = 0; j < 8 && i + j < ops.size(); ++j)
      if (ops.times(i + j).has & has) byte |= uint8_t(1u << j);
    out->Byte(byte);
  }
}

struct ChunkV2Result {
  bool new_dictionary = false;
  uint64_t entry_bytes = 0;  // of shapes and communicators
};

ChunkV2Result EncodeChunkV2(flatbuffers::FlatBufferBuilder& b, const ChunkInput& in,
                            uint64_t start_ns, WriterDictionary& d) {
  using namespace packed;
  ChunkV2Result r;
  // Only chunks with operations start a dictionary or repeat entries: the
  // footer chunk stays small enough for the space reserved for it.
  const bool has_ops = !in.ops.empty();
  r.new_dictionary = in.index == 0 || (has_ops && (d.ids.size() >= kMaxDictionaryShapes ||
                                                   d.bytes >= kDictionaryRefresh * d.entry_bytes));
  if (r.new_dictionary) {  // every communicator again; shape ids from 0
    d.ids.clear();
    d.shapes.clear();
    d.last_base = 0;
    d.last_comms = d.comms;
  }
  const size_t before = b.GetSize();
  // Communicators: the ones new in the previous chunk again, then this chunk's.
  std::vector<flatbuffers::Offset<fbv::Communicator>> comms;
  if (has_ops) {
    for (const auto& c : d.last_comms) comms.push_back(EncodeCommunicator(b, c));
    d.last_comms.clear();
  }
  for (const auto& c : in.comms) {
    comms.push_back(EncodeCommunicator(b, c));
    d.comms.push_back(c);
    d.last_comms.push_back(c);
  }
  // Shapes: the ones new in the previous chunk again, then this chunk's,
  // ids continuing the dictionary's.
  const uint32_t shapes_base = has_ops ? d.last_base : uint32_t(d.shapes.size());
  std::vector<flatbuffers::Offset<fbv::OpShape>> shapes;
  if (has_ops) {
    for (size_t id = shapes_base; id < d.shapes.size(); ++id)
      shapes.push_back(EncodeShape(b, d.shapes[id]));
    d.last_base = uint32_t(d.shapes.size());
  }
  // The chunk's shapes (in order of first use) as dictionary ids; new ones
  // join the dictionary.
  std::vector<uint32_t> ids;
  ids.reserve(in.shapes.size());
  for (const auto& op : in.shapes) {
    auto it = d.ids.find(&op);
    if (it == d.ids.end()) {
      OpEvent& shape = d.shapes.emplace_back(op);
      it = d.ids.emplace(&shape, uint32_t(d.shapes.size() - 1)).first;
      shapes.push_back(EncodeShape(b, op));
    }
    ids.push_back(it->second);
  }
  auto shapes_off = shapes.empty() ? 0 : b.CreateVector(shapes);
  auto comms_off = comms.empty() ? 0 : b.CreateVector(comms);
  r.entry_bytes = b.GetSize() - before;

  // Room for every value at its longest: the writer checks no bounds.
  // (Plus the enter and duration columns twice: made in one pass, below,
  // into the scratch's tail, then copied into place.)
  const size_t kMax = packed::kMaxVarintBytes;
  const size_t columns = 2 * in.ops.size() * kMax;
  const size_t bound = 8 * kMax + (in.ops.size() + 7) / 8 * 2 + in.ops.size() * 8 * kMax +
                       kMax + in.samples.size() * (4 + 6 * kMax) + columns;
  if (d.scratch_size < bound) {
    d.scratch.reset(new uint8_t[bound]);
    d.scratch_size = bound;
  }
  uint8_t* const buf = d.scratch.get();
  packed::Writer out(buf);
  out.U(in.index);
  out.U(in.events_before);
  out.U(r.new_dictionary ? 0 : in.index - d.first_chunk);
  out.U(shapes_base);
  out.U(in.ops.size());
  if (!in.ops.empty()) {
    const auto& ops = in.ops;
    const OpTimes& first = ops.times(0);
    // One pass over the ops for what every chunk needs: the columns of
    // enter deltas and durations (into the scratch's tail, each at its
    // longest) and what the flags say (sequence numbers consecutive, any
    // group, which optional times). The other columns are rare and take
    // passes of their own.
    uint8_t* const enters = buf + (bound - columns);
    uint8_t* const durations = enters + in.ops.size() * kMax;
    packed::Writer enter_out(enters), duration_out(durations);
    uint64_t seq_gaps = 0, groups = 0, next_seq = first.seq;
    uint8_t has_any = 0, has_all = 0xFF;
    // (The first op's enter delta, from itself, is a 0 byte, left out below.)
    int64_t prev_enter = first.enter_ns;
    ops.ForEach([&](const OpTimes& t, uint32_t) {
      seq_gaps |= t.seq ^ next_seq;
      next_seq = t.seq + 1;
      groups |= t.group;
      has_any |= t.has;
      has_all &= t.has;
      enter_out.S(Diff(uint64_t(t.enter_ns), uint64_t(prev_enter)));
      prev_enter = t.enter_ns;
      duration_out.S(Diff(uint64_t(t.exit_ns), uint64_t(t.enter_ns)));
    });
    const bool consecutive = seq_gaps == 0, grouped = groups != 0;
    auto mode = [&](uint8_t bit) {
      return (has_any & bit) == 0 ? kNone : (has_all & bit) != 0 ? kAll : kSome;
    };
    const uint64_t gpu = mode(OpTimes::kGpuTimes);
    const uint64_t completion = mode(OpTimes::kCompletion);
    out.U(uint64_t(consecutive) | uint64_t(grouped) << 1 | gpu << 2 | completion << 4);
    out.S(Diff(uint64_t(first.enter_ns), start_ns));
    out.U(first.seq);
    if (ids.size() == 1 && ids[0] < 0x80) {
      // One shape (a loop of one call): the same byte n times.
      out.Fill(uint8_t(ids[0]), ops.size());
    } else if (std::all_of(ids.begin(), ids.end(), [](uint32_t id) { return id < 0x80; })) {
      ops.ForEach([&](const OpTimes&, uint32_t shape) { out.Byte(uint8_t(ids[shape])); });
    } else {
      ops.ForEach([&](const OpTimes&, uint32_t shape) { out.U(ids[shape]); });
    }
    if (!consecutive) {
      uint64_t prev = first.seq;
      ops.ForEach([&](const OpTimes& t, uint32_t) {
        out.S(Diff(t.seq, prev + 1));
        prev = t.seq;
      }, 1);
    }
    out.Bytes(enters + 1, size_t(enter_out.end() - enters) - 1);
    out.Bytes(durations, size_t(duration_out.end() - durations));
    if (grouped) ops.ForEach([&](const OpTimes& t, uint32_t) { out.U(t.group); });
    if (gpu == kSome) PutBitmap(&out, ops, OpTimes::kGpuTimes);
    if (gpu != kNone)
      ops.ForEach([&](const OpTimes& t, uint32_t) {
        if (t.has & OpTimes::kGpuTimes) {
          out.S(Diff(uint64_t(t.gpu_start_ns), uint64_t(t.enter_ns)));
          out.S(Diff(uint64_t(t.gpu_end_ns), uint64_t(t.gpu_start_ns)));
        }
      });
    if (completion == kSome) PutBitmap(&out, ops, OpTimes::kCompletion);
    if (completion != kNone)
      ops.ForEach([&](const OpTimes& t, uint32_t) {
        if (t.has & OpTimes::kCompletion)
          out.S(Diff(uint64_t(t.completion_ns), uint64_t(t.enter_ns)));
      });
  }
  // Resource samples: the first one's time from the header's start and its
  // counters whole, the later ones as differences from the one before.
  out.U(in.samples.size());
  const ResourceSample* last = nullptr;
  for (const auto& s : in.samples) {
    out.S(Diff(s.time_ns, last ? last->time_ns : start_ns));
    uint32_t cpu;
    std::memcpy(&cpu, &s.cpu_percent, 4);
    for (int i = 0; i < 4; ++i) out.Byte(uint8_t(cpu >> (8 * i)));
    const uint64_t now[] = {s.rss_bytes, s.net_rx_bytes, s.net_tx_bytes, s.disk_read_bytes,
                            s.disk_write_bytes};
    const uint64_t was[] = {last ? last->rss_bytes : 0, last ? last->net_rx_bytes : 0,
                            last ? last->net_tx_bytes : 0, last ? last->disk_read_bytes : 0,
                            last ? last->disk_write_bytes : 0};
    for (int i = 0; i < 5; ++i) {
      if (last)
        out.S(Diff(now[i], was[i]));
      else
        out.U(now[i]);
    }
    last = &s;
  }
  auto data_off = b.CreateVector(buf, size_t(out.end() - buf));
  auto footer_off = in.footer ? EncodeFooter(b, *in.footer) : 0;
  fb::v2::FinishChunkBuffer(b, fb::v2::CreateChunk(b, data_off, shapes_off, comms_off, footer_off));
  return r;
}

}  // namespace

bool TraceWriter::WriteChunk(const Footer* footer, std::string* error) {
  // Sized for the chunk's likely bytes, so that the builder does not grow
  // (and copy itself) on the way.
  flatbuffers::FlatBufferBuilder b(64 * 1024 + pending_->ops.size() * 16);
  const ChunkInput in{next_chunk_, ops_written_, comms_, pending_->ops, pending_->shapes,
                      samples_, footer};
  ChunkV2Result v2;
  if (schema_version_ == 1)
    EncodeChunkV1(b, in);
  else
    v2 = EncodeChunkV2(b, in, start_ns_, *dict_);
  // The footer goes into the reserve; every other chunk first makes sure
  // that it and the reserve after it are allocated, so a full disk is seen
  // before a torn frame is written.
  if ((!footer && !Reserve(8 + b.GetSize(), error)) ||
      !WriteFrame(b.GetBufferPointer(), b.GetSize(), error)) {
    if (!footer) Fail(*error, errno);
    else if (::ftruncate(fd_, off_t(bytes_written_)) == 0) ::lseek(fd_, 0, SEEK_END);
    return false;
  }
  bytes_written_ += 8 + b.GetSize();
  if (v2.new_dictionary) {
    dict_->first_chunk = next_chunk_;
    dict_->bytes = dict_->entry_bytes = 0;
  }
  dict_->bytes += 8 + b.GetSize();
  dict_->entry_bytes += v2.entry_bytes;
  ++next_chunk_;
  ops_written_ += pending_->ops.size();
  samples_written_ += samples_.size();
  comms_.clear();
  pending_->Clear();
  samples_.clear();
  if (footer) return true;
  // Writes to a file whose directory was removed succeed and vanish.
  struct stat st {};
  if (::fstat(fd_, &st) == 0 && st.st_nlink == 0) {
    errno = ENOENT;
    *error = Errno("trace file removed while recording", path_);
    Fail(*error, ENOENT);
    return false;
  }
  return true;
}

}  // namespace dltrace::formats
