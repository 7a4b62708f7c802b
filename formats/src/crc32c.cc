// SPDX-License-Identifier: GPL-2.0-only
// CRC-32C: the SSE4.2 crc32 instruction where the CPU has it (8 bytes an
// instruction), else a table-driven loop; both compute the same function.
#include "dltrace/formats/crc32c.h"

#include <array>
#include <cstring>

namespace dltrace::formats {
namespace {

std::array<std::array<uint32_t, 256>, 4> MakeTables() {
  std::array<std::array<uint32_t, 256>, 4> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (int s = 1; s < 4; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  }
  return t;
}

const std::array<std::array<uint32_t, 256>, 4> kTables = MakeTables();

#if defined(__x86_64__)
// The instruction's polynomial is CRC-32C's (0x1EDC6F41, bit-reflected
// 0x82F63B78), updating an uninverted register as the table loop does.
__attribute__((target("sse4.2"))) uint32_t Crc32cSse42(const uint8_t* p, size_t size,
                                                        uint32_t crc) {
  uint64_t c = ~crc;
  for (; size >= 8; p += 8, size -= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = __builtin_ia32_crc32di(c, v);
  }
  uint32_t c32 = uint32_t(c);
  while (size--) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return ~c32;
}

bool HasSse42() {
  __builtin_cpu_init();  // may run before the CPU model is initialised (a static initialiser)
  return __builtin_cpu_supports("sse4.2");
}
const bool kHasSse42 = HasSse42();
#endif

}  // namespace

uint32_t Crc32cPortable(const void* data, size_t size, uint32_t crc) {
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
  while (size >= 4) {
    crc ^= uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
    crc = kTables[3][crc & 0xFF] ^ kTables[2][(crc >> 8) & 0xFF] ^
          kTables[1][(crc >> 16) & 0xFF] ^ kTables[0][crc >> 24];
    p += 4;
    size -= 4;
  }
  while (size--) crc = (crc >> 8) ^ kTables[0][(crc ^ *p++) & 0xFF];
  return ~crc;
}

uint32_t Crc32c(const void* data, size_t size, uint32_t crc) {
#if defined(__x86_64__)
  if (kHasSse42) return Crc32cSse42(static_cast<const uint8_t*>(data), size, crc);
#endif
  return Crc32cPortable(data, size, crc);
}

bool Crc32cInHardware() {
#if defined(__x86_64__)
  return kHasSse42;
#else
  return false;
#endif
}

}  // namespace dltrace::formats
