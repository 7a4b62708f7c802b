// SPDX-License-Identifier: GPL-2.0-only
// Reads one .dltrace file back. Every frame is checked (length, CRC-32C,
// FlatBuffers verifier, column shapes); reading stops cleanly at a torn
// tail and says where, keeping what came before. A chunk that fails its
// checks is skipped: the reader finds the next valid chunk frame and reads
// on, and says which bytes, chunks and (where known) events were lost.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dltrace/formats/trace.h"

namespace dltrace::formats {

enum class ReadStatus {
  kComplete,            // header, whole chunks and a footer
  kNoFooter,            // ends on a chunk boundary without a footer (killed between flushes)
  kTruncated,           // ends inside a frame (killed while writing)
  kDamaged,             // chunks failed their checks and were skipped (see `skipped`)
  kCorrupt,             // the header frame failed its checks
  kUnsupportedVersion,  // written by a newer dltrace
  kNotATrace,           // wrong magic or header identifier
  kIoError,             // could not open or map the file
};

const char* ReadStatusName(ReadStatus status);

// Bytes the reader skipped: a run of frames that failed their checks (or
// garbage after the footer), up to the next valid chunk or the end.
struct SkippedBytes {
  uint64_t begin = 0;        // byte offset of the first bad frame
  uint64_t end = 0;          // offset of the next valid chunk, or the file size
  uint32_t first_chunk = 0;  // index the first lost chunk would have had
  int64_t chunks_lost = -1;  // -1: unknown (no valid chunk after the loss)
  int64_t events_lost = -1;  // -1: unknown
  std::string why;           // the first check that failed, e.g. "checksum mismatch"
  // Version 2: events in later chunks that were dropped because their
  // operation shape was defined in these bytes (until a chunk starts a new
  // shape dictionary). Not part of events_lost, which counts the events
  // the skipped bytes held.
  int64_t events_unresolved = 0;
};

struct RankTrace {
  std::string path;
  ReadStatus status = ReadStatus::kIoError;
  std::string message;       // one line naming the file and the cause; empty when complete
  uint64_t error_offset = 0;  // byte where reading stopped, for non-complete statuses
  uint64_t file_bytes = 0;
  uint32_t chunks = 0;
  bool has_header = false;
  Header header;
  std::vector<Communicator> communicators;
  std::vector<OpEvent> ops;
  std::vector<ResourceSample> samples;
  std::optional<Footer> footer;
  std::vector<SkippedBytes> skipped;  // empty unless status is kDamaged

  // The header was read, so the records (possibly partial) mean something.
  bool usable() const { return has_header; }
  // Not an error, but not everything the recorder meant to write.
  bool incomplete() const {
    return status == ReadStatus::kNoFooter || status == ReadStatus::kTruncated ||
           status == ReadStatus::kDamaged;
  }
};

// Reads from memory; `name` is used in messages.
RankTrace ReadTraceBuffer(const uint8_t* data, size_t size, const std::string& name);
// Reads a file (memory-mapped).
RankTrace ReadTraceFile(const std::string& path);

}  // namespace dltrace::formats
