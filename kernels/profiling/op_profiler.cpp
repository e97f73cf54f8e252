#include "kernels/profiling/op_profiler.h"

#include <utility>

#include "kernels/stream.h"

#if defined(NOEIRA_WITH_CUDA)
#include <nvtx3/nvToolsExt.h>
#define NOEIRA_NVTX_PUSH(name) nvtxRangePushA(name)
#define NOEIRA_NVTX_POP() nvtxRangePop()
#else
#define NOEIRA_NVTX_PUSH(name) ((void)(name))
#define NOEIRA_NVTX_POP() ((void)0)
#endif

namespace noeira {

OpProfiler::OpProfiler() : origin_(std::chrono::steady_clock::now()) {}
OpProfiler::~OpProfiler() = default;

double OpProfiler::now_us() const {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin_)
      .count();
}

Status OpProfiler::attach(Stream& stream) {
  stream_ = &stream;
  if (stream.host_memory()) return {};
  std::string why;
  timer_ = stream.make_device_timer(DeviceTimerKind::kCupti, &why);
  if (timer_) {
    clock_ = "device";
  } else {
    sync_each_ = true;
    clock_ = "host, synchronised per op (no CUPTI: " + why + ")";
  }
  return {};
}

void OpProfiler::begin_step() {
  in_step_ = true;
  call_ = 0;
  steps_.push_back(StepSpan{now_us(), 0});
  NOEIRA_NVTX_PUSH("step");
}

void OpProfiler::end_step() {
  if (!in_step_) return;
  NOEIRA_NVTX_POP();
  in_step_ = false;
  steps_.back().dur_us = now_us() - steps_.back().start_us;
}

double OpProfiler::begin_op(const char* op) {
  if (!in_step_) return 0;
  NOEIRA_NVTX_PUSH(op);
  if (timer_) timer_->begin_step();
  return now_us();
}

void OpProfiler::end_op(const char* op, double start_us, const OpCost& cost, std::string shape) {
  if (!in_step_) return;
  if (timer_) timer_->end_step();
  if (sync_each_ && stream_) stream_->synchronize();
  const double end = now_us();
  NOEIRA_NVTX_POP();
  OpEvent e;
  e.op = op;
  e.category = op_category_of(op);
  e.step = static_cast<int64_t>(steps_.size()) - 1;
  e.call = call_++;
  e.start_us = start_us;
  e.dur_us = end - start_us;
  e.cost = cost;
  events_.push_back(e);
  if (e.step == 0) shapes_.push_back(std::move(shape));
}

Status OpProfiler::collect_device_times() {
  if (!timer_) return {};
  Result<DeviceStepTimer::Samples> s = timer_->collect();
  if (!s) return s.error();
  if (s->sum_ms.size() != events_.size())
    return make_error("profile: CUPTI returned " + std::to_string(s->sum_ms.size()) +
                      " op intervals for " + std::to_string(events_.size()) + " op calls");
  for (size_t i = 0; i < events_.size(); ++i) events_[i].dur_us = s->sum_ms[i] * 1e3;
  return {};
}

}  // namespace noeira
