// Per-op attribution of a training step (noeira-bench profile, docs/profiling.md). The
// trainer, given an OpProfiler (TrainerConfig::op_profiler), calls its ops through
// ProfilingOps (kernels/profiling/profiling_ops.h), which opens one scope per op call;
// without one the trainer calls the backend directly, so profiling off costs nothing.
//
// The CPU's ops run on the calling thread (OpenMP inside), so an op's host-clock interval
// is its time. A device backend's ops only enqueue: attach() then asks its stream for a
// CUPTI step timer and brackets each op call as one of its "steps" (the timer tags every
// launch between begin and end with one external correlation id, kernels/cuda/
// cupti_timer.cpp), so collect_device_times() gets each call's summed kernel time. Where
// CUPTI is unavailable, each call is followed by a synchronisation and timed on the host
// (launch latency included; the clock says so). In CUDA builds every call and step is also
// an NVTX range, so `nsys profile noeira-bench profile ...` shows them.
#pragma once
#include <chrono>
#include <memory>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/error.h"
#include "kernels/profiling/op_category.h"

namespace noeira {

// An op call's work, from its arguments (kernels/profiling/op_cost.h): floating-point
// operations (0 where counting them makes no sense) and bytes its operands hold.
struct OpCost {
  double flops = 0;
  double bytes = 0;
};

// One recorded op call.
struct OpEvent {
  const char* op = "";  // the op's name (static storage: kernels/op_list.inc)
  OpCategory category = OpCategory::kOther;
  int64_t step = 0;         // index of the profiled step
  int64_t call = 0;         // index of the call within its step
  double start_us = 0;      // since the profiler was made (device: the kernels' first start)
  double dur_us = 0;        // host interval (CPU) or the kernels' summed device time
  OpCost cost;
};

// One profiled step: its own interval (the host clock around the whole step).
struct StepSpan {
  double start_us = 0;
  double dur_us = 0;
};

class Stream;
class DeviceStepTimer;

class OpProfiler {
 public:
  OpProfiler();
  ~OpProfiler();
  OpProfiler(const OpProfiler&) = delete;
  OpProfiler& operator=(const OpProfiler&) = delete;

  // Steps: ops between begin_step and end_step are recorded; others (warm-up, evaluation,
  // set-up) only forwarded.
  void begin_step();
  void end_step();
  bool recording() const { return in_step_; }
  // Whether the current call's shapes are wanted: the first recorded step only (every
  // step makes the same calls in the same order, so call i's shape is step 0's call i;
  // describing once keeps the cost of the scopes out of later steps).
  bool wants_shapes() const { return in_step_ && steps_.size() == 1; }

  // An op call (ProfilingOps). begin_op returns the clock reading end_op needs.
  double begin_op(const char* op);
  void end_op(const char* op, double start_us, const OpCost& cost, std::string shape);

  // The trainer's stream, once its backend exists (TrainerCore::open): device streams get
  // the CUPTI timer (or the synchronising fallback). An Error only for a broken device.
  Status attach(Stream& stream);

  const std::vector<OpEvent>& events() const { return events_; }
  const std::vector<StepSpan>& steps() const { return steps_; }
  // The shape text of step 0's call i ("" if not described).
  const std::vector<std::string>& call_shapes() const { return shapes_; }
  // After the profiled steps: the events' durations become the device's (CUPTI). The
  // host clock's are final: nothing to do.
  Status collect_device_times();
  // "host" (CPU ops), "device" (CUPTI), "host, synchronised per op" (the fallback).
  const std::string& clock() const { return clock_; }

 private:
  double now_us() const;
  std::vector<OpEvent> events_;
  Stream* stream_ = nullptr;
  std::unique_ptr<DeviceStepTimer> timer_;  // CUPTI, one "step" per op call
  bool sync_each_ = false;                  // the fallback
  std::string clock_ = "host";
  std::chrono::steady_clock::time_point origin_;
  std::vector<StepSpan> steps_;
  std::vector<std::string> shapes_;
  bool in_step_ = false;
  int64_t call_ = 0;
};

// One call's scope: records it with `p` (null: nothing) when it closes. For work outside
// the Ops, such as the trainer's gradient fill.
class ProfiledCall {
 public:
  ProfiledCall(OpProfiler* p, const char* op, const OpCost& cost, std::string shape = {})
      : p_(p && p->recording() ? p : nullptr), op_(op), cost_(cost), shape_(std::move(shape)),
        start_(p_ ? p_->begin_op(op) : 0.0) {}
  ~ProfiledCall() {
    if (p_) p_->end_op(op_, start_, cost_, std::move(shape_));
  }
  ProfiledCall(const ProfiledCall&) = delete;
  ProfiledCall& operator=(const ProfiledCall&) = delete;

 private:
  OpProfiler* p_;
  const char* op_;
  OpCost cost_;
  std::string shape_;
  double start_;
};

}  // namespace noeira
