// SPDX-License-Identifier: GPL-2.0-only
// The host's arithmetic in a reduction, done for real on the bytes a socket
// replay receives: each reduce receive's payload (Step::reduce) is added,
// element by element in the op's datatype, into a local buffer before the
// receive counts as done, as an MPI library adds a received block into its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "dltrace/models/schedule.h"

namespace dltrace::replay {

// The element types the arithmetic runs in.
enum class ReduceType : uint8_t { kNone, kFloat32, kFloat64, kInt8, kInt16, kInt32, kInt64 };

// The arithmetic for a recorded datatype: float64 (and complex128) in
// doubles, integers in integers of their width, float32 and everything else
// (16-bit floats, long double, derived, unknown) in float32.
ReduceType ReduceTypeOf(formats::DataType type);
size_t ElementBytes(ReduceType type);  // 0 for kNone
const char* ReduceTypeName(ReduceType type);

class HostReduction {
 public:
  // The network receives of endpoint SELF that reduce, by tag, with an
  // accumulator as large as the largest of them. (A same-host step's bytes
  // never travel, so it has nothing to add.)
  HostReduction(const models::Schedule& schedule, int32_t self);

  // The arithmetic of the receive tagged TAG; kNone when it does not reduce.
  ReduceType TypeOf(uint64_t tag) const;
  // Adds BYTES at DATA (unaligned is fine), bytes OFFSET.. of one message,
  // into the accumulator, element-wise in TYPE. OFFSET is a multiple of the
  // element size; a tail shorter than one element is counted, not added.
  void Add(ReduceType type, uint64_t offset, const uint8_t* data, size_t bytes);

  uint64_t bytes_reduced() const { return bytes_reduced_; }
  // The accumulator (tests look at what was added).
  const uint8_t* accumulator() const { return reinterpret_cast<const uint8_t*>(accumulator_.data()); }
  size_t accumulator_bytes() const { return accumulator_.size() * sizeof(uint64_t); }

 private:
  std::unordered_map<uint64_t, ReduceType> types_;
  std::vector<uint64_t> accumulator_;  // 8-byte aligned
  uint64_t bytes_reduced_ = 0;
};

}  // namespace dltrace::replay
