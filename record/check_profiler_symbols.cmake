# SPDX-License-Identifier: GPL-2.0-only
# Fails the build when the profiler plugin exports anything but NCCL's lookup
# symbols (ncclProfiler_v1..v5) or needs libnccl or CUDA at link time.
include(${CMAKE_CURRENT_LIST_DIR}/exported_symbols.cmake)
dltrace_exported_symbols(${LIB} exported)
set(expected ncclProfiler_v1 ncclProfiler_v2 ncclProfiler_v3 ncclProfiler_v4 ncclProfiler_v5)
if(NOT exported STREQUAL expected)
  message(FATAL_ERROR "libdltrace-nccl-profiler.so must export exactly ${expected}; it exports: ${exported}")
endif()
execute_process(COMMAND nm -D --undefined-only ${LIB} OUTPUT_VARIABLE out)
string(REGEX MATCHALL "[ \t]+[Uw] [^\n]*(nccl|cuda|cu[A-Z]|MPI|ompi)[^\n]*" bad "${out}")
if(bad)
  message(FATAL_ERROR "libdltrace-nccl-profiler.so references NCCL, CUDA or MPI at link time:\n${bad}")
endif()
