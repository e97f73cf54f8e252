// What a backend does besides compute (DESIGN.md section 2b): copies between host and
// device, zero fills, waiting, CUDA-graph capture, device step timers and the backend's
// own reduction scratch. The compute ops (kernels/ops.h) and this stream run on one queue:
// on CUDA the one cudaStream_t both enqueue on, in call order, so a fill_zero issued
// between two ops runs between them and is captured with them.
//
// Nothing here runs inside a step except fill_zero; the copies and synchronize() wait
// for the host, which a captured graph cannot record.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/common/error.h"

namespace noeira {

// A captured training step, replayed once per batch.
class StepGraph {
 public:
  virtual ~StepGraph() = default;
  virtual void replay() = 0;
};

enum class DeviceTimerKind : uint8_t { kCupti, kEvent };

// Times each training step's device work. begin_step/end_step bracket the ops (or the
// graph replay) of one step without synchronising; collect() synchronises once and
// returns per-step milliseconds for the steps bracketed since the last collect().
class DeviceStepTimer {
 public:
  virtual ~DeviceStepTimer() = default;
  virtual void begin_step() = 0;
  virtual void end_step() = 0;
  struct Samples {
    std::vector<double> sum_ms;   // CUPTI: sum of kernel/memcpy/memset durations; events: elapsed
    std::vector<double> busy_ms;  // CUPTI: union of those intervals; events: empty
  };
  virtual Result<Samples> collect() = 0;
};

class Stream {
 public:
  virtual ~Stream() = default;
  // Whether the pointers this backend takes are host memory (the CPU backend).
  virtual bool host_memory() const = 0;

  // ---- Memory. Zero bytes are a no-op whatever the pointers (an empty arena has a null
  // ---- base).
  virtual void fill_zero(void* p, size_t bytes) = 0;
  // Host copies wait for the transfer, so neither may be issued while a graph is being
  // captured: the CUDA backend refuses them (and synchronize), and end_capture returns
  // the error naming the call.
  virtual void copy_to_device(void* dst, const void* host_src, size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* src, size_t bytes) = 0;
  // Waits for queued work (epoch boundaries and timers only, never inside a step).
  virtual void synchronize() = 0;

  // ---- Graph capture: ops issued between begin_capture and end_capture are recorded
  // ---- into a graph instead of running; replay() runs them all again. Where the
  // ---- backend has no graphs, begin_capture is an Error saying what to do instead.
  virtual bool supports_graphs() const = 0;
  virtual Status begin_capture() = 0;
  virtual Result<std::unique_ptr<StepGraph>> end_capture() = 0;

  // Step timers beyond the host clock (CUPTI activity, CUDA events), null where the
  // backend has none; `why` receives the reason.
  virtual std::unique_ptr<DeviceStepTimer> make_device_timer(DeviceTimerKind kind,
                                                             std::string* why) = 0;

  // Scratch for the backend's own multi-pass reductions (CUDA: bias_grad's per-chunk
  // partial sums; 0 bytes on the CPU), planned like every buffer: the caller reserves
  // reduction_workspace_bytes() in the workspace arena and binds it once, before any
  // capture; it must outlive every op and graph that uses it. Ops run one after another
  // on one stream, so one buffer serves them all. Unbound, results stay deterministic
  // but CUDA's bias_grad runs as a single chunk (slower for many rows, other rounding).
  // Null unbinds. An Error for a buffer that is too small or a capture in progress.
  virtual size_t reduction_workspace_bytes() const = 0;
  virtual Status bind_reduction_workspace(void* workspace, size_t bytes) = 0;
};

}  // namespace noeira
