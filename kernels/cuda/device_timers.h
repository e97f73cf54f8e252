// Per-step device timers for the CUDA backend (Stream::make_device_timer). Both bracket a
// step with begin_step/end_step on the backend's stream without synchronising, and
// collect() synchronises once. A timer must not outlive the backend that made it.
#pragma once
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "kernels/stream.h"

namespace noeira::cuda {

// CUDA events recorded on the stream around each step; elapsed time per step.
// Null (with `why`) if the events cannot be created.
std::unique_ptr<DeviceStepTimer> make_event_timer(cudaStream_t stream, std::string* why);

// CUPTI activity records (kernels, memcpys, memsets) attributed to steps by external
// correlation id; per step the sum of their durations and the union of their intervals.
// Create it BEFORE capturing any CUDA graph: CUPTI reports the kernels of graphs
// instantiated after activity tracing was enabled. One CUPTI timer per process at a
// time. Null (with `why`) where CUPTI is unavailable, e.g. profiling restricted to
// administrators.
std::unique_ptr<DeviceStepTimer> make_cupti_timer(cudaStream_t stream, std::string* why);

}  // namespace noeira::cuda
