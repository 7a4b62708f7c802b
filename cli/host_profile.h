// SPDX-License-Identifier: GPL-2.0-only
// The host profile: this machine's rates for the host's own work in a
// reduction (adding received float and double arrays into its own, copying
// memory), measured by `dltrace calibrate` and stored by `dltrace record`
// next to the traces (host-profile.json); the lowering turns it into
// compute steps (--host-profile).
#pragma once

#include <string>

#include "dltrace/models/algorithms.h"

namespace dltrace::cli {

constexpr char kHostProfileFormat[] = "dltrace-host-profile";
constexpr int kHostProfileVersion = 1;
constexpr char kHostProfileFile[] = "host-profile.json";

struct HostProfile {
  std::string host;
  double reduce_float_gbps = 0;   // GB/s of received float32 added into a local array
  double reduce_double_gbps = 0;  // the same for float64
  double memcpy_gbps = 0;         // GB/s copied
  double mpi_message_ns = 0;      // MPI's per-message overhead for small messages (0: not measured)
  double measure_s = 0;           // how long the measurement took
};

// Measures this machine's reduction and copy rates (under a second); with
// MPI, also the MPI library's per-message cost: dltrace-mpi-pingpong under
// `mpirun -np 2` over Open MPI's TCP transport (a few seconds). *NOTE says
// why that was not measured, when it was not.
HostProfile MeasureHostProfile(bool mpi = false, std::string* note = nullptr);
std::string HostProfileJson(const HostProfile& p);
bool ReadHostProfile(const std::string& path, HostProfile* p, std::string* error);
// Writes PATH whole or not at all.
bool WriteHostProfile(const HostProfile& p, const std::string& path, std::string* error);
// The lowering's host costs from P (LowerOptions::reduce_gbps, per_message_ns).
void ApplyHostProfile(const HostProfile& p, models::LowerOptions* o);

}  // namespace dltrace::cli
