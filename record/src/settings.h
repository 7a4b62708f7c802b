// SPDX-License-Identifier: GPL-2.0-only
// Every DLTRACE_* setting in one table with its default, read once from the
// environment. `dltrace record --help` and the settings file list them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dltrace::record {

struct SettingInfo {
  const char* name;
  const char* default_value;
  const char* description;
};

// The table itself (also used by `dltrace record` to print the defaults).
const std::vector<SettingInfo>& AllSettings();

struct Settings {
  std::string output;        // DLTRACE_OUTPUT: directory or file template (%r %h %p %j %s)
  int64_t flush_ms = 200;    // DLTRACE_FLUSH_MS
  bool flush_ms_set = false;  // DLTRACE_FLUSH_MS was given: a raw file keeps the flush timer
  int64_t sample_ms = 100;   // DLTRACE_SAMPLE_MS (0 = no resource samples)
  int64_t buffer_events = 1 << 20;  // DLTRACE_BUFFER_EVENTS per thread before dropping
  bool enabled = true;       // DLTRACE_ENABLE
  bool quiet = false;        // DLTRACE_QUIET
  bool gpu_timing = true;    // DLTRACE_GPU_TIMING (NCCL)
  std::string clock = "auto";  // DLTRACE_CLOCK: auto, tsc or monotonic
  std::string raw = "1";     // DLTRACE_RAW: the raw file's directory ("1": /dev/shm); empty = none
  std::string defer = "auto";  // DLTRACE_DEFER: auto, 1 or 0
  int64_t defer_events = 1 << 18;  // DLTRACE_DEFER_EVENTS per thread

  static Settings FromEnvironment();
  // "NAME=value" lines of the effective settings.
  std::string Describe() const;
};

}  // namespace dltrace::record
