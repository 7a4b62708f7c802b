// SPDX-License-Identifier: GPL-2.0-only
// NCCL's datatypes as the recorder records them, in ncclDataType_t's order
// (ncclInt8 = 0 ... ncclFloat8e5m2 = 11): the interposer indexes this table
// by the ncclDataType_t it was passed, the profiler plugin finds the name
// NCCL's profiler events carry.
#pragma once

#include <cstdint>
#include <cstring>

#include "dltrace/formats/trace.h"

namespace dltrace::record {

struct NcclType {
  const char* name;
  formats::DataType type;
  uint64_t size;  // bytes per element
};

inline constexpr NcclType kNcclTypes[] = {
    {"ncclInt8", formats::DataType::Int8, 1},          {"ncclUint8", formats::DataType::Uint8, 1},
    {"ncclInt32", formats::DataType::Int32, 4},        {"ncclUint32", formats::DataType::Uint32, 4},
    {"ncclInt64", formats::DataType::Int64, 8},        {"ncclUint64", formats::DataType::Uint64, 8},
    {"ncclFloat16", formats::DataType::Float16, 2},    {"ncclFloat32", formats::DataType::Float32, 4},
    {"ncclFloat64", formats::DataType::Float64, 8},    {"ncclBfloat16", formats::DataType::BFloat16, 2},
    {"ncclFloat8e4m3", formats::DataType::Float8E4M3, 1}, {"ncclFloat8e5m2", formats::DataType::Float8E5M2, 1},
};
inline constexpr int kNcclTypeCount = int(sizeof(kNcclTypes) / sizeof(kNcclTypes[0]));

// The table entry of ncclDataType_t value T; null for another value.
inline const NcclType* NcclTypeAt(int t) { return t >= 0 && t < kNcclTypeCount ? &kNcclTypes[t] : nullptr; }

// The index of the datatype NAME ("ncclFloat32"); -1 for another name or null.
inline int NcclTypeIndex(const char* name) {
  for (int i = 0; name && i < kNcclTypeCount; ++i)
    if (std::strcmp(name, kNcclTypes[i].name) == 0) return i;
  return -1;
}

}  // namespace dltrace::record
