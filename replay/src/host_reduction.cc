// SPDX-License-Identifier: GPL-2.0-only
// The reduction arithmetic of socket replay: element-wise sums of received
// payloads into a local accumulator, in the op's datatype.
#include "dltrace/replay/host_reduction.h"

#include <algorithm>
#include <cstring>

namespace dltrace::replay {

using formats::DataType;

ReduceType ReduceTypeOf(DataType type) {
  using D = DataType;
  switch (type) {
    case D::Float64: case D::Complex128: return ReduceType::kFloat64;
    case D::Byte: case D::Char: case D::Int8: case D::Uint8: return ReduceType::kInt8;
    case D::Int16: case D::Uint16: return ReduceType::kInt16;
    case D::Int32: case D::Uint32: return ReduceType::kInt32;
    case D::Int64: case D::Uint64: return ReduceType::kInt64;
    default: return ReduceType::kFloat32;
  }
}

size_t ElementBytes(ReduceType type) {
  switch (type) {
    case ReduceType::kNone: return 0;
    case ReduceType::kFloat32: return 4;
    case ReduceType::kFloat64: return 8;
    case ReduceType::kInt8: return 1;
    case ReduceType::kInt16: return 2;
    case ReduceType::kInt32: return 4;
    case ReduceType::kInt64: return 8;
  }
  return 0;
}

const char* ReduceTypeName(ReduceType type) {
  switch (type) {
    case ReduceType::kNone: return "none";
    case ReduceType::kFloat32: return "float32";
    case ReduceType::kFloat64: return "float64";
    case ReduceType::kInt8: return "int8";
    case ReduceType::kInt16: return "int16";
    case ReduceType::kInt32: return "int32";
    case ReduceType::kInt64: return "int64";
  }
  return "?";
}

namespace {

// ACC[i] += IN[i] for N elements of T; memcpy loads and stores, so IN may
// sit anywhere in a staging buffer (the compiler turns them into plain,
// vectorised moves). Integers wrap (unsigned T), as MPI_SUM's overflow is undefined anyway.
template <typename T>
void Sum(uint8_t* acc, const uint8_t* in, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    T a, b;
    std::memcpy(&a, acc + i * sizeof(T), sizeof(T));
    std::memcpy(&b, in + i * sizeof(T), sizeof(T));
    a = T(a + b);
    std::memcpy(acc + i * sizeof(T), &a, sizeof(T));
  }
}

}  // namespace

HostReduction::HostReduction(const models::Schedule& schedule, int32_t self) {
  uint64_t largest = 0;
  for (const models::Step& s : schedule.ranks.at(size_t(self)).steps) {
    if (s.type != models::StepType::kRecv || !s.reduce || s.local) continue;
    const formats::DataType type = s.op() < schedule.ops.size() ? schedule.ops[s.op()].datatype : DataType::Unknown;
    types_[s.tag] = ReduceTypeOf(type);
    largest = std::max(largest, s.bytes);
  }
  accumulator_.assign(size_t((largest + 7) / 8), 0);
}

ReduceType HostReduction::TypeOf(uint64_t tag) const {
  auto it = types_.find(tag);
  return it == types_.end() ? ReduceType::kNone : it->second;
}

void HostReduction::Add(ReduceType type, uint64_t offset, const uint8_t* data, size_t bytes) {
  bytes_reduced_ += bytes;
  const size_t element = ElementBytes(type);
  const size_t capacity = accumulator_bytes();
  if (element == 0 || capacity < element) return;
  uint8_t* acc = reinterpret_cast<uint8_t*>(accumulator_.data());
  // A message never exceeds the largest receive; wrap all the same rather than overrun.
  size_t at = size_t(offset % capacity);
  at -= at % element;
  size_t n = bytes / element;
  while (n > 0) {
    const size_t here = std::min(n, (capacity - at) / element);
    if (here == 0) {
      at = 0;
      continue;
    }
    switch (type) {
      case ReduceType::kFloat32: Sum<float>(acc + at, data, here); break;
      case ReduceType::kFloat64: Sum<double>(acc + at, data, here); break;
      case ReduceType::kInt8: Sum<uint8_t>(acc + at, data, here); break;
      case ReduceType::kInt16: Sum<uint16_t>(acc + at, data, here); break;
      case ReduceType::kInt32: Sum<uint32_t>(acc + at, data, here); break;
      case ReduceType::kInt64: Sum<uint64_t>(acc + at, data, here); break;
      case ReduceType::kNone: return;
    }
    data += here * element;
    n -= here;
    at = 0;
  }
}

}  // namespace dltrace::replay
