// SPDX-License-Identifier: GPL-2.0-only
// GPU timing: pooled event pairs per calling thread, a per-thread queue that
// keeps issue order, and the flusher's side that polls the events without
// blocking the program and maps GPU times onto CLOCK_MONOTONIC.
//
// Clock mapping: per CUDA context the flusher records a reference event on a
// stream of its own (idle, so the GPU timestamps it within microseconds of
// submission) and polls it; its host time is taken as the midpoint between
// the record call and the first poll that saw it complete, so the error is
// at most half that window (a few microseconds; below 20 us or the
// calibration is retried). An op's times are ref + cuEventElapsedTime(ref,
// start) and start + cuEventElapsedTime(start, end) (0.5 us resolution).
// The reference is renewed every second, which bounds both GPU/host clock
// drift and the float's rounding (about 60 ns at 1000 ms).
#include "gpu_timing.h"

#include <dlfcn.h>
#include <time.h>

#include <cmath>
#include <cstdio>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "recorder.h"

namespace dltrace::record::gpu {
namespace {
#include "cuda_abi.h"
}  // namespace

namespace {

using formats::OpEvent;

struct Driver {
#define DLTRACE_DRIVER_MEMBER(member, symbol, ret, params) ret(*member) params = nullptr;
  DLTRACE_CUDA_FUNCTIONS(DLTRACE_DRIVER_MEMBER)
#undef DLTRACE_DRIVER_MEMBER
};
Driver cu;

constexpr size_t kMaxTimingsPerThread = 4096;  // event pairs in flight per thread
constexpr int64_t kRecalibrateNs = 1'000'000'000;
constexpr int64_t kGoodCalibrationNs = 20'000;
constexpr int64_t kFinalWaitNs = 1'000'000'000;  // at exit, for work still on the GPU

enum class State { kUnknown, kOn, kOff };
std::atomic<State> g_state{State::kUnknown};
std::mutex g_enable_mu;

}  // namespace

struct Timing {
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  CUevent start = nullptr, end = nullptr;
  int refs = 0;  // ops still to read it (set before publishing, then flusher only)
  enum { kWaiting, kDone, kFailed } state = kWaiting;
  int64_t start_ns = 0, end_ns = 0;
};

namespace {

struct Pending {
  OpEvent op;
  Timing* timing;
};

struct ThreadQueue {
  std::mutex mu;                  // the owning thread and the flusher
  std::vector<Pending> incoming;  // published, not yet seen by the flusher
  std::vector<Timing*> free;      // reusable event pairs
  // Owning thread only.
  size_t allocated = 0;
  CUstream last_stream = nullptr;
  CUcontext last_ctx = nullptr;
  // Flusher only.
  std::deque<Pending> inflight;
  std::vector<Timing*> released;
};

std::mutex g_queues_mu;
std::vector<ThreadQueue*> g_queues;

ThreadQueue* Queue() {
  thread_local ThreadQueue* q = nullptr;
  if (!q) {
    q = new ThreadQueue();  // kept after the thread ends: the flusher may still drain it
    std::lock_guard<std::mutex> lock(g_queues_mu);
    g_queues.push_back(q);
  }
  return q;
}

// Makes CTX current for the scope when it is not already.
class ContextScope {
 public:
  explicit ContextScope(CUcontext ctx) {
    CUcontext cur = nullptr;
    if (cu.CtxGetCurrent(&cur) != DLTRACE_CUDA_SUCCESS || cur != ctx)
      pushed_ = cu.CtxPushCurrent(ctx) == DLTRACE_CUDA_SUCCESS;
  }
  ~ContextScope() {
    CUcontext ignored;
    if (pushed_) cu.CtxPopCurrent(&ignored);
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  bool pushed_ = false;
};

CUcontext ContextOf(ThreadQueue* q, CUstream s) {
  // 0, 1 and 2 are the legacy and per-thread default streams: their context
  // is the current one, which may change between calls.
  const bool named = reinterpret_cast<uintptr_t>(s) > 2;
  if (named && s == q->last_stream) return q->last_ctx;
  CUcontext ctx = nullptr;
  if (cu.StreamGetCtx(s, &ctx) != DLTRACE_CUDA_SUCCESS) return nullptr;
  if (named) {
    q->last_stream = s;
    q->last_ctx = ctx;
  }
  return ctx;
}

Timing* MakeTiming(CUcontext ctx) {
  ContextScope scope(ctx);
  auto* t = new Timing();
  t->ctx = ctx;
  if (cu.EventCreate(&t->start, DLTRACE_CU_EVENT_DEFAULT) != DLTRACE_CUDA_SUCCESS) {
    delete t;
    return nullptr;
  }
  if (cu.EventCreate(&t->end, DLTRACE_CU_EVENT_DEFAULT) != DLTRACE_CUDA_SUCCESS) {
    cu.EventDestroy(t->start);
    delete t;
    return nullptr;
  }
  return t;
}

void Recycle(ThreadQueue* q, Timing* t) {
  std::lock_guard<std::mutex> lock(q->mu);
  q->free.push_back(t);
}

// ---- the flusher's side ---------------------------------------------------

struct Clock {
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  CUevent ref = nullptr;
  int64_t ref_ns = 0;  // host time of the reference event
  int64_t at_ns = 0;   // when it was taken; 0 = never
};
std::vector<Clock> g_clocks;  // flusher (or the final drain) only

Clock* ClockFor(CUcontext ctx) {
  Clock* c = nullptr;
  for (Clock& k : g_clocks)
    if (k.ctx == ctx) c = &k;
  if (!c) {
    Clock fresh;
    fresh.ctx = ctx;
    if (cu.StreamCreate(&fresh.stream, DLTRACE_CU_STREAM_NON_BLOCKING) != DLTRACE_CUDA_SUCCESS ||
        cu.EventCreate(&fresh.ref, DLTRACE_CU_EVENT_DEFAULT) != DLTRACE_CUDA_SUCCESS)
      return nullptr;
    g_clocks.push_back(fresh);
    c = &g_clocks.back();
  }
  if (c->at_ns != 0 && NowNs() - c->at_ns < kRecalibrateNs) return c;
  for (int attempt = 0; attempt < 3; ++attempt) {
    int64_t t0 = NowNs();
    if (cu.EventRecord(c->ref, c->stream) != DLTRACE_CUDA_SUCCESS) return nullptr;
    CUresult r;
    while ((r = cu.EventQuery(c->ref)) == DLTRACE_CUDA_ERROR_NOT_READY) {
      if (NowNs() - t0 > 10'000'000) return nullptr;
    }
    int64_t t1 = NowNs();
    if (r != DLTRACE_CUDA_SUCCESS) return nullptr;
    c->ref_ns = t0 + (t1 - t0) / 2;
    c->at_ns = t1;
    if (t1 - t0 <= kGoodCalibrationNs) break;
  }
  return c;
}

// Fills in T's times once its end event completed; leaves it waiting otherwise.
void Resolve(Timing* t) {
  ContextScope scope(t->ctx);
  CUresult r = cu.EventQuery(t->end);
  if (r == DLTRACE_CUDA_ERROR_NOT_READY) return;
  Clock* c = r == DLTRACE_CUDA_SUCCESS ? ClockFor(t->ctx) : nullptr;
  float from_ref = 0, length = 0;
  if (!c || cu.EventElapsedTime(&from_ref, c->ref, t->start) != DLTRACE_CUDA_SUCCESS ||
      cu.EventElapsedTime(&length, t->start, t->end) != DLTRACE_CUDA_SUCCESS) {
    t->state = Timing::kFailed;
    return;
  }
  t->start_ns = c->ref_ns + std::llround(double(from_ref) * 1e6);
  t->end_ns = t->start_ns + std::llround(double(length) * 1e6);
  t->state = Timing::kDone;
}

class PendingQueues final : public DeferredOps {
 public:
  void TakeReady(bool final, std::vector<OpEvent>* out) override {
    std::vector<ThreadQueue*> queues;
    {
      std::lock_guard<std::mutex> lock(g_queues_mu);
      queues = g_queues;
    }
    // The flusher must be allowed to query while the program captures a
    // graph in the default (global) mode on another thread.
    CUstreamCaptureMode mode = DLTRACE_CU_STREAM_CAPTURE_MODE_RELAXED;
    bool exchanged = cu.ThreadExchangeStreamCaptureMode(&mode) == DLTRACE_CUDA_SUCCESS;
    const int64_t give_up = NowNs() + kFinalWaitNs;
    for (ThreadQueue* q : queues) {
      {
        std::lock_guard<std::mutex> lock(q->mu);
        for (Pending& p : q->incoming) q->inflight.push_back(std::move(p));
        q->incoming.clear();
      }
      while (!q->inflight.empty()) {
        Pending& p = q->inflight.front();
        if (Timing* t = p.timing) {
          if (t->state == Timing::kWaiting) Resolve(t);
          if (t->state == Timing::kWaiting) {
            if (!final) break;  // keep issue order: later ops wait behind it
            if (NowNs() < give_up) {
              std::this_thread::sleep_for(std::chrono::microseconds(200));
              continue;
            }
            t->state = Timing::kFailed;
          }
          if (t->state == Timing::kDone) {
            p.op.gpu_start_ns = t->start_ns;
            p.op.gpu_end_ns = t->end_ns;
          }
          if (--t->refs == 0) q->released.push_back(t);
        }
        out->push_back(std::move(p.op));
        q->inflight.pop_front();
      }
      if (!q->released.empty()) {
        std::lock_guard<std::mutex> lock(q->mu);
        for (Timing* t : q->released) {
          t->state = Timing::kWaiting;
          q->free.push_back(t);
        }
        q->released.clear();
      }
    }
    if (exchanged) cu.ThreadExchangeStreamCaptureMode(&mode);
  }
};
PendingQueues g_pending;

bool LoadDriverOnce(std::string* why) {
  void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!lib) {
    *why = std::string("cannot load libcuda.so.1: ") + dlerror();
    return false;
  }
  auto find = [&](const char* symbol, const char* fallback) -> void* {
    void* p = dlsym(lib, symbol);
    return p ? p : (fallback ? dlsym(lib, fallback) : nullptr);
  };
  void* p;
#define DLTRACE_LOAD(member, symbol, ret, params)                                             \
  p = find(#symbol,                                                                           \
           std::string(#symbol) == "cuEventElapsedTime_v2" ? "cuEventElapsedTime" : nullptr); \
  if (!p) {                                                                                   \
    *why = "libcuda.so.1 has no " #symbol;                                                    \
    return false;                                                                             \
  }                                                                                           \
  cu.member = reinterpret_cast<decltype(cu.member)>(p);
  DLTRACE_CUDA_FUNCTIONS(DLTRACE_LOAD)
#undef DLTRACE_LOAD
  return true;
}

// Loads the driver functions at most once; later calls repeat the answer.
bool LoadDriver(std::string* why) {
  static std::string error;
  static const bool loaded = LoadDriverOnce(&error);
  *why = error;
  return loaded;
}

}  // namespace

int CurrentDevice() {
  std::string why;
  CUdevice device = -1;
  if (!LoadDriver(&why) || cu.CtxGetDevice(&device) != DLTRACE_CUDA_SUCCESS) return -1;
  return device;
}

std::string BusId(int ordinal) {
  std::string why;
  CUdevice device = -1;
  char id[64] = {};
  if (ordinal < 0 || !LoadDriver(&why) || cu.DeviceGet(&device, ordinal) != DLTRACE_CUDA_SUCCESS ||
      cu.DeviceGetPCIBusId(id, int(sizeof(id)) - 1, device) != DLTRACE_CUDA_SUCCESS)
    return "";
  return id;
}

bool enabled() { return g_state.load(std::memory_order_relaxed) == State::kOn; }

bool Enable() {
  if (g_state.load() != State::kUnknown) return enabled();
  std::lock_guard<std::mutex> lock(g_enable_mu);
  if (g_state.load() != State::kUnknown) return enabled();
  Recorder& r = Recorder::Get();
  if (!r.settings().gpu_timing) {
    g_state = State::kOff;
    return false;
  }
  std::string why;
  if (!LoadDriver(&why)) {
    if (!r.settings().quiet)
      std::fprintf(stderr, "dltrace: NCCL operations get host times only: %s\n", why.c_str());
    g_state = State::kOff;
    return false;
  }
  r.SetDeferredOps(&g_pending);
  g_state = State::kOn;
  return true;
}

Timing* Begin(CUstream_st* stream, bool* captured) {
  ThreadQueue* q = Queue();
  CUstream s = stream;
  CUstreamCaptureStatus status = DLTRACE_CU_STREAM_CAPTURE_STATUS_NONE;
  if (cu.StreamIsCapturing(s, &status) != DLTRACE_CUDA_SUCCESS) return nullptr;
  if (status != DLTRACE_CU_STREAM_CAPTURE_STATUS_NONE) {
    *captured = true;
    return nullptr;
  }
  CUcontext ctx = ContextOf(q, s);
  if (!ctx) return nullptr;
  Timing* t = nullptr;
  {
    std::lock_guard<std::mutex> lock(q->mu);
    for (size_t i = q->free.size(); i-- > 0;) {
      if (q->free[i]->ctx == ctx) {
        t = q->free[i];
        q->free[i] = q->free.back();
        q->free.pop_back();
        break;
      }
    }
  }
  if (!t) {
    if (q->allocated >= kMaxTimingsPerThread) return nullptr;
    t = MakeTiming(ctx);
    if (!t) return nullptr;
    ++q->allocated;
  }
  t->stream = s;
  t->refs = 0;
  t->state = Timing::kWaiting;
  if (cu.EventRecord(t->start, s) != DLTRACE_CUDA_SUCCESS) {
    q->last_stream = nullptr;  // a reused stream handle of another context, say
    Recycle(q, t);
    return nullptr;
  }
  return t;
}

void End(Timing* t) {
  if (t && cu.EventRecord(t->end, t->stream) != DLTRACE_CUDA_SUCCESS) t->state = Timing::kFailed;
}

void Abandon(Timing* t) {
  if (t) Recycle(Queue(), t);
}

void Publish(OpEvent* ops, Timing* const* timings, size_t n) {
  if (!enabled()) {
    for (size_t i = 0; i < n; ++i) Recorder::Get().Append(std::move(ops[i]));
    return;
  }
  for (size_t i = 0; i < n; ++i)
    if (timings[i]) ++timings[i]->refs;
  ThreadQueue* q = Queue();
  std::lock_guard<std::mutex> lock(q->mu);
  for (size_t i = 0; i < n; ++i) q->incoming.push_back({std::move(ops[i]), timings[i]});
}

}  // namespace dltrace::record::gpu
