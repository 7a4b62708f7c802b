// SPDX-License-Identifier: GPL-2.0-only
// GPU-side timing of NCCL operations: a CUDA event on the operation's stream
// before and after it, read later by the recorder's background thread and
// put on the trace's host clock. The driver is loaded at run time.
#pragma once

#include <cstddef>
#include <string>

#include "dltrace/formats/trace.h"

struct CUstream_st;

namespace dltrace::record::gpu {

// A pair of pooled CUDA events around work on one stream.
struct Timing;

// Loads libcuda.so.1 (once) and hands the pending queue to the recorder's
// flusher. False, with one notice, when DLTRACE_GPU_TIMING=0 or the driver
// cannot be used; then ops go straight to the recorder without GPU times.
bool Enable();
bool enabled();

// The CUDA device current on the calling thread, -1 when unknown, and a
// device's PCI bus id ("0000:3B:00.0"), empty when unknown.
int CurrentDevice();
std::string BusId(int device);

// Before work is enqueued on STREAM: records the start event. Null when not
// timed: the stream is being captured into a CUDA graph (*captured = true;
// an event there would become part of the graph), or no context, or too many
// operations of this thread still in flight.
Timing* Begin(CUstream_st* stream, bool* captured);
// After the work was enqueued: records the end event.
void End(Timing* timing);
// The work was never enqueued (an error, or a nonblocking communicator's
// ncclInProgress): the events go back to the pool.
void Abandon(Timing* timing);

// Queues N ops for the trace in this thread's issue order; op i gets the GPU
// times of timings[i] (null: none) once its events completed. One timing may
// serve several ops (a group's operations on one stream).
void Publish(formats::OpEvent* ops, Timing* const* timings, size_t n);

}  // namespace dltrace::record::gpu
