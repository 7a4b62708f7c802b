// SPDX-License-Identifier: GPL-2.0-only
// Writes one rank's .dltrace file: a header frame, then one checksummed
// chunk frame per Flush(), and a footer in the last chunk on Close().
// Chunks share one operation-shape dictionary per file: each carries only
// the shapes new in it, and now and then one starts the dictionary afresh
// so that a reader who lost a chunk soon has every shape again.
// A write that fails (disk full, I/O error, file removed) leaves the file a
// whole number of frames, stops the writer, and Close() still writes the
// footer into space reserved for it beforehand.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dltrace/formats/trace.h"

namespace dltrace::formats {

struct WriterDictionary;  // version 2: the file's shapes so far (writer.cc)
struct PendingChunk;      // the ops of the chunk being filled and their shapes (writer.cc)

// What an op adds besides its shape (OpEvent without the fields that go
// into the shape dictionary): for TraceWriter::AddRepeatOps. A plain
// struct (copied as bytes in bulk): value-initialise it, `OpTimes t{};`.
struct OpTimes {
  enum Has : uint8_t { kGpuTimes = 1, kCompletion = 2 };
  uint8_t has;  // which of the optional times are set
  uint32_t group;
  uint64_t seq;
  int64_t enter_ns, exit_ns;
  int64_t gpu_start_ns, gpu_end_ns, completion_ns;
};

// Bytes at the start of every trace file.
constexpr char kFileMagic[8] = {'\x89', 'D', 'L', 'T', '\r', '\n', '\x1a', '\n'};
// Upper bound on one frame's payload; readers treat larger lengths as corrupt.
constexpr uint32_t kMaxFramePayload = 256u << 20;

class TraceWriter {
 public:
  // Creates PATH (failing if it exists: a run never overwrites another) and
  // writes the header. Returns null and sets *error on failure.
  // `schema_version` picks the layout: kSchemaVersion, or 1 for the older,
  // larger one (benchmarks and compatibility tests); the header says which,
  // whatever header.schema_version holds.
  static std::unique_ptr<TraceWriter> Create(const std::string& path, const Header& header,
                                             std::string* error,
                                             uint32_t schema_version = kSchemaVersion);
  // Same, on a file descriptor the caller opened; the writer owns it.
  static std::unique_ptr<TraceWriter> FromFd(int fd, const std::string& path,
                                             const Header& header, std::string* error,
                                             uint32_t schema_version = kSchemaVersion);
  ~TraceWriter();

  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  void AddCommunicator(const Communicator& comm);
  void AddOp(const OpEvent& op);
  // Ops whose shape (every field but seq, group and the times) equals
  // that of the op added last, each with its own times, written in place:
  // RepeatOpRoom gives room for up to *N of them (contiguous; it lowers *N
  // to what fits), the caller fills in times, AddedRepeatOps(count) adds
  // them. No shape comparison and no copy: the recorder's path for a loop
  // of one call. Needs an op added before (AddOp).
  OpTimes* RepeatOpRoom(size_t* n);
  void AddedRepeatOps(size_t n);
  void AddSample(const ResourceSample& sample);

  size_t pending_ops() const;
  size_t pending_samples() const { return samples_.size(); }
  size_t pending_records() const { return pending_ops() + comms_.size() + samples_.size(); }
  uint64_t ops_written() const { return ops_written_; }
  uint64_t samples_written() const { return samples_written_; }
  uint64_t bytes_written() const { return bytes_written_; }
  const std::string& path() const { return path_; }

  // After a failed write: the first error ("PATH: write failed: No space
  // left on device"), its errno, and the operations given to the writer
  // that never reached the file (those of the failed chunk and every one
  // added since). Empty / 0 while every write succeeded.
  bool failed() const { return !failure_.empty(); }
  const std::string& failure() const { return failure_; }
  int failure_errno() const { return failure_errno_; }
  uint64_t ops_lost() const { return ops_lost_; }
  // After Close(): whether the footer chunk reached the file.
  bool footer_written() const { return footer_written_; }

  // Writes what is pending as one chunk; does nothing when nothing is.
  // False once a write failed (then and on every later call).
  bool Flush(std::string* error);
  // Flushes, writes the footer chunk and closes the file. After a failed
  // write it writes only the footer (write_error and the lost operations
  // added to it); false if even that could not be written.
  bool Close(const Footer& footer, std::string* error);

  // Space kept allocated past the end of the file (fallocate, where the
  // file system supports it) so that a full disk still takes the footer
  // chunk (a few hundred bytes: its texts are capped).
  static constexpr uint32_t kFooterReserve = 1024;

  // Largest number of events or distinct shapes in one chunk; AddOp
  // flushes by itself when either is reached (version 1 indexes shapes
  // with 16 bits).
  static constexpr size_t kMaxOpsPerChunk = 1u << 16;
  static constexpr size_t kMaxShapesPerChunk = 0xFFFF;

 private:
  TraceWriter(int fd, std::string path, uint32_t schema_version, uint64_t start_ns);
  bool WriteFrame(const uint8_t* payload, size_t size, std::string* error);
  bool WriteChunk(const Footer* footer, std::string* error);
  bool WriteAll(const void* data, size_t size, std::string* error);
  // After an op was added: a chunk at its size limit is written.
  void FlushIfFull();
  // Allocates [bytes_written_, bytes_written_ + size + kFooterReserve).
  bool Reserve(size_t size, std::string* error);
  // Records the first failure, cuts a torn frame off, forgets what was pending.
  void Fail(const std::string& error, int err);

  int fd_ = -1;
  std::string path_;
  uint32_t next_chunk_ = 0;
  uint64_t ops_written_ = 0;
  uint64_t samples_written_ = 0;
  uint64_t bytes_written_ = 0;  // end of the last whole frame
  bool can_reserve_ = true;     // false where fallocate is not supported
  std::string failure_;
  int failure_errno_ = 0;
  uint64_t ops_lost_ = 0;
  bool footer_written_ = false;
  std::vector<Communicator> comms_;
  std::unique_ptr<PendingChunk> pending_;  // the ops not written yet
  std::vector<OpTimes> lost_room_;         // RepeatOpRoom's room once nothing is kept
  std::vector<ResourceSample> samples_;
  uint32_t schema_version_;
  uint64_t start_ns_;  // header.start_monotonic_ns: version 2 times are relative to it
  std::unique_ptr<WriterDictionary> dict_;
};

// Serialises a header frame payload (exposed for tests that craft files).
std::vector<uint8_t> EncodeHeader(const Header& header);

}  // namespace dltrace::formats
