// SPDX-License-Identifier: GPL-2.0-only
// CRC-32C (Castagnoli), the checksum of every frame in a trace file.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dltrace::formats {

// With the CPU's crc32 instruction where it has one (x86-64 SSE4.2).
uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);
// The same function without it (tables), for tests that compare the two.
uint32_t Crc32cPortable(const void* data, size_t size, uint32_t crc = 0);
// Whether Crc32c uses the instruction on this machine.
bool Crc32cInHardware();

}  // namespace dltrace::formats
