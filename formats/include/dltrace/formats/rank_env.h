// SPDX-License-Identifier: GPL-2.0-only
// The environment variables launchers (torchrun, mpirun, srun, PMI) set for a
// process's rank, in the order dltrace reads them: one list for the recorder,
// which keeps their raw values in the trace header, and the replayer.
#pragma once

#include <array>

namespace dltrace::formats {

inline constexpr std::array<const char*, 6> kRankVariables = {
    "DLTRACE_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
inline constexpr std::array<const char*, 5> kLocalRankVariables = {
    "DLTRACE_LOCAL_RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
    "SLURM_LOCALID"};
inline constexpr std::array<const char*, 5> kWorldSizeVariables = {
    "DLTRACE_WORLD_SIZE", "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"};
inline constexpr std::array<const char*, 4> kJobIdVariables = {
    "DLTRACE_JOB_ID", "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", "PMIX_NAMESPACE"};

}  // namespace dltrace::formats
