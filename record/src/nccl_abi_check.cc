// SPDX-License-Identifier: GPL-2.0-only
// Compile-time proof that the recorder's own NCCL and CUDA driver declarations
// (nccl_abi.h, cuda_abi.h) match nccl.h and cuda.h: built only where those
// headers exist; it emits no code, a mismatch fails the build.
#include <cuda.h>
#include <nccl.h>

#include <cstddef>
#include <type_traits>

namespace abi {
#include "cuda_abi.h"
#include "nccl_abi.h"
}  // namespace abi

namespace {

// Maps a type written with the recorder's declarations to the header's.
template <class T>
struct ToHeader {
  using type = T;
};
template <class T>
using ToHeaderT = typename ToHeader<T>::type;
template <class T>
struct ToHeader<T*> {
  using type = ToHeaderT<T>*;
};
template <class T>
struct ToHeader<const T> {
  using type = const ToHeaderT<T>;
};
template <class R, class... A>
struct ToHeader<R(A...)> {
  using type = ToHeaderT<R>(ToHeaderT<A>...);
};
// (Handle structs declared by the headers first, ncclComm or CUstream_st,
// are the same types in both: only the ones that differ need mapping.)
#define DLTRACE_MAPS_TO(ours, theirs) \
  template <>                         \
  struct ToHeader<ours> {             \
    using type = theirs;              \
  };
DLTRACE_MAPS_TO(abi::ncclConfig, ::ncclConfig_t)
DLTRACE_MAPS_TO(abi::ncclUniqueId, ::ncclUniqueId)
DLTRACE_MAPS_TO(abi::ncclResult_t, ::ncclResult_t)
DLTRACE_MAPS_TO(abi::ncclRedOp_t, ::ncclRedOp_t)
DLTRACE_MAPS_TO(abi::ncclDataType_t, ::ncclDataType_t)
DLTRACE_MAPS_TO(abi::CUresult, ::CUresult)
DLTRACE_MAPS_TO(abi::CUstreamCaptureStatus, ::CUstreamCaptureStatus)
DLTRACE_MAPS_TO(abi::CUstreamCaptureMode, ::CUstreamCaptureMode)

// Our declarations, spelled as the recorder spells them: the type names
// are the abi ones (nccl.h and cuda.h declare the same names globally).
namespace ours {
using abi::ncclComm_t;
using abi::ncclConfig_t;
using abi::ncclDataType_t;
using abi::ncclRedOp_t;
using abi::ncclUniqueId;
using abi::cudaStream_t;
using abi::CUcontext;
using abi::CUdevice;
using abi::CUevent;
using abi::CUstream;
using abi::CUstreamCaptureMode;
using abi::CUstreamCaptureStatus;
}  // namespace ours

// Every intercepted NCCL function: our declaration, mapped, is nccl.h's.
#define DLTRACE_CHECK_NCCL(name, params, args)                                        \
  namespace ours {                                                                    \
  using name##_t = abi::ncclResult_t params;                                          \
  }                                                                                   \
  static_assert(std::is_same_v<ToHeaderT<ours::name##_t>, decltype(::name)>,          \
                #name ": the recorder's signature differs from nccl.h");
#define X DLTRACE_CHECK_NCCL
#include "nccl_functions.inc"  // generated from tables/nccl.py
#undef X
DLTRACE_NCCL_HELPERS(DLTRACE_CHECK_NCCL)

// The CUDA driver functions loaded at run time.
#define DLTRACE_CHECK_CUDA(member, symbol, ret, params)                               \
  namespace ours {                                                                    \
  using member##_t = abi::ret params;                                                 \
  }                                                                                   \
  static_assert(std::is_same_v<ToHeaderT<ours::member##_t>, decltype(::symbol)>,      \
                #symbol ": the recorder's signature differs from cuda.h");
DLTRACE_CUDA_FUNCTIONS(DLTRACE_CHECK_CUDA)

// Layouts and the enumerator values the recorder relies on.
static_assert(sizeof(abi::ncclUniqueId) == sizeof(::ncclUniqueId), "ncclUniqueId size");
static_assert(sizeof(abi::ncclRedOp_t) == sizeof(::ncclRedOp_t), "ncclRedOp_t size");
static_assert(sizeof(abi::ncclDataType_t) == sizeof(::ncclDataType_t), "ncclDataType_t size");
static_assert(sizeof(abi::ncclResult_t) == sizeof(::ncclResult_t), "ncclResult_t size");
static_assert(sizeof(abi::CUresult) == sizeof(::CUresult), "CUresult size");
static_assert(DLTRACE_NCCL_UNIQUE_ID_BYTES == NCCL_UNIQUE_ID_BYTES, "unique id bytes");
static_assert(NCCL_SPLIT_NOCOLOR == -1, "NCCL_SPLIT_NOCOLOR");
#define DLTRACE_SAME_VALUE(ours, theirs) \
  static_assert(int(abi::ours) == int(::theirs), #ours " differs from " #theirs);
DLTRACE_SAME_VALUE(ncclSuccess, ncclSuccess)
DLTRACE_SAME_VALUE(ncclInvalidArgument, ncclInvalidArgument)
DLTRACE_SAME_VALUE(ncclInvalidUsage, ncclInvalidUsage)
DLTRACE_SAME_VALUE(ncclInProgress, ncclInProgress)
DLTRACE_SAME_VALUE(ncclSum, ncclSum)
DLTRACE_SAME_VALUE(ncclProd, ncclProd)
DLTRACE_SAME_VALUE(ncclMax, ncclMax)
DLTRACE_SAME_VALUE(ncclMin, ncclMin)
DLTRACE_SAME_VALUE(ncclAvg, ncclAvg)
DLTRACE_SAME_VALUE(ncclNumOps, ncclNumOps)
DLTRACE_SAME_VALUE(ncclInt8, ncclInt8)
DLTRACE_SAME_VALUE(ncclUint8, ncclUint8)
DLTRACE_SAME_VALUE(ncclInt32, ncclInt32)
DLTRACE_SAME_VALUE(ncclUint32, ncclUint32)
DLTRACE_SAME_VALUE(ncclInt64, ncclInt64)
DLTRACE_SAME_VALUE(ncclUint64, ncclUint64)
DLTRACE_SAME_VALUE(ncclFloat16, ncclFloat16)
DLTRACE_SAME_VALUE(ncclFloat32, ncclFloat32)
DLTRACE_SAME_VALUE(ncclFloat64, ncclFloat64)
DLTRACE_SAME_VALUE(ncclBfloat16, ncclBfloat16)
DLTRACE_SAME_VALUE(ncclFloat8e4m3, ncclFloat8e4m3)
DLTRACE_SAME_VALUE(ncclFloat8e5m2, ncclFloat8e5m2)
DLTRACE_SAME_VALUE(DLTRACE_CUDA_SUCCESS, CUDA_SUCCESS)
DLTRACE_SAME_VALUE(DLTRACE_CUDA_ERROR_NOT_READY, CUDA_ERROR_NOT_READY)
DLTRACE_SAME_VALUE(DLTRACE_CU_STREAM_CAPTURE_STATUS_NONE, CU_STREAM_CAPTURE_STATUS_NONE)
DLTRACE_SAME_VALUE(DLTRACE_CU_STREAM_CAPTURE_STATUS_ACTIVE, CU_STREAM_CAPTURE_STATUS_ACTIVE)
DLTRACE_SAME_VALUE(DLTRACE_CU_STREAM_CAPTURE_MODE_RELAXED, CU_STREAM_CAPTURE_MODE_RELAXED)
static_assert(DLTRACE_CU_STREAM_NON_BLOCKING == CU_STREAM_NON_BLOCKING, "CU_STREAM_NON_BLOCKING");
static_assert(DLTRACE_CU_EVENT_DEFAULT == CU_EVENT_DEFAULT, "CU_EVENT_DEFAULT");

}  // namespace
