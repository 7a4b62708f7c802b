// Reads one .dltrace file back. Every frame is checked (length, CRC-32C,
// FlatBuffers verifier, column shapes); reading stops cleanly at a torn
// tail or at corrupt bytes and says where, keeping what came before.
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
  kCorrupt,             // a frame failed its checks; records before it were kept
  kUnsupportedVersion,  // written by a newer dltrace
  kNotATrace,           // wrong magic or header identifier
  kIoError,             // could not open or map the file
};

const char* ReadStatusName(ReadStatus status);

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

  // The header was read, so the records (possibly partial) mean something.
  bool usable() const { return has_header; }
  // Not an error, but not everything the recorder meant to write.
  bool incomplete() const {
    return status == ReadStatus::kNoFooter || status == ReadStatus::kTruncated;
  }
};

// Reads from memory; `name` is used in messages.
RankTrace ReadTraceBuffer(const uint8_t* data, size_t size, const std::string& name);
// Reads a file (memory-mapped).
RankTrace ReadTraceFile(const std::string& path);

}  // namespace dltrace::formats
