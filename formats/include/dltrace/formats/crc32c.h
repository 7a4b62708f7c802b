// CRC-32C (Castagnoli), the checksum of every frame in a trace file.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dltrace::formats {

uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);

}  // namespace dltrace::formats
