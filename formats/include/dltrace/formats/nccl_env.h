// SPDX-License-Identifier: GPL-2.0-only
// The NCCL settings from the environment that the recorder keeps in the
// trace header (Header::nccl_env) and the nccl lowering reads back.
#pragma once

#include <array>

namespace dltrace::formats {

inline constexpr std::array<const char*, 6> kNcclSettingVariables = {
    "NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_NTHREADS",
    "NCCL_BUFFSIZE"};

}  // namespace dltrace::formats
