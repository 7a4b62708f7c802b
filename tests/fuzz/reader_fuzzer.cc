// SPDX-License-Identifier: GPL-2.0-only
// libFuzzer target for the trace reader. When the first input byte is odd,
// the rest is treated as a trace whose frame checksums are recomputed, so the
// fuzzer reaches the FlatBuffers verifier and column decoding, not just CRCs.
#include <cstdint>
#include <cstring>
#include <vector>

#include "dltrace/formats/crc32c.h"
#include "dltrace/formats/reader.h"

using namespace dltrace::formats;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::vector<uint8_t> buf(data + 1, data + size);
  if (data[0] & 1) {
    for (size_t pos = 8; pos + 8 <= buf.size();) {
      uint32_t len = 0;
      for (int i = 0; i < 4; ++i) len |= uint32_t(buf[pos + i]) << (8 * i);
      if (len > buf.size() - pos - 8) break;
      uint32_t crc = Crc32c(buf.data() + pos + 8, len);
      for (int i = 0; i < 4; ++i) buf[pos + 4 + i] = uint8_t(crc >> (8 * i));
      pos += 8 + len;
    }
  }
  RankTrace t = ReadTraceBuffer(buf.data(), buf.size(), "fuzz");
  // Touch the decoded values so nothing is optimised away.
  volatile uint64_t sink = t.ops.size() + t.communicators.size() + t.samples.size();
  (void)sink;
  return 0;
}
