// The event timer: a fixed pool of CUDA events, created with the timer, so timing a step
// never allocates. begin_step/end_step record a pair on the stream; collect() waits for
// the last one and reads cudaEventElapsedTime for each pair, then the pool starts over.
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_timers.h"

namespace noeira::cuda {

namespace {

class EventTimer final : public DeviceStepTimer {
 public:
  // Steps that can be bracketed between two collect() calls.
  static constexpr size_t kCapacity = 8192;

  explicit EventTimer(cudaStream_t stream) : stream_(stream) {}

  ~EventTimer() override {
    for (cudaEvent_t e : begin_) cudaEventDestroy(e);
    for (cudaEvent_t e : end_) cudaEventDestroy(e);
  }

  Status create_events() {
    begin_.reserve(kCapacity);
    end_.reserve(kCapacity);
    for (size_t i = 0; i < kCapacity; ++i) {
      cudaEvent_t b = nullptr, e = nullptr;
      NOEIRA_CUDA_TRY(cudaEventCreate(&b), "the CUDA device is not usable; check nvidia-smi");
      begin_.push_back(b);
      NOEIRA_CUDA_TRY(cudaEventCreate(&e), "the CUDA device is not usable; check nvidia-smi");
      end_.push_back(e);
    }
    return {};
  }

  void begin_step() override {
    if (open_ || count_ >= kCapacity) {  // reported by collect(); the step goes untimed
      misuse_ = open_ ? "begin_step called twice without end_step"
                      : "more than " + std::to_string(kCapacity) +
                            " steps bracketed between collect() calls; collect more often";
      return;
    }
    record(begin_[count_], "begin_step");
    open_ = true;
  }

  void end_step() override {
    if (!open_) {
      if (misuse_.empty()) misuse_ = "end_step called without begin_step";
      return;
    }
    record(end_[count_], "end_step");
    open_ = false;
    ++count_;
  }

  Result<Samples> collect() override {
    const size_t count = count_;
    const std::string misuse = misuse_;
    count_ = 0;
    open_ = false;
    misuse_.clear();
    NOEIRA_CUDA_TRY(cudaStreamSynchronize(stream_),
                    "a step failed on the device; rerun with CUDA_LAUNCH_BLOCKING=1");
    if (!misuse.empty()) return make_error("event timer: " + misuse);
    Samples s;
    s.sum_ms.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      float ms = 0.0f;
      NOEIRA_CUDA_TRY(cudaEventElapsedTime(&ms, begin_[i], end_[i]),
                      "the step's events were not recorded on this device");
      s.sum_ms.push_back(static_cast<double>(ms));
    }
    return s;
  }

 private:
  void record(cudaEvent_t e, const char* where) {
    const cudaError_t err = cudaEventRecord(e, stream_);
    if (err != cudaSuccess)
      fatal(std::string("event timer ") + where + ": cudaEventRecord failed (" + error_text(err) +
            "); rerun with CUDA_LAUNCH_BLOCKING=1 to find the failing step");
  }

  cudaStream_t stream_;
  std::vector<cudaEvent_t> begin_, end_;  // (kCapacity) each
  size_t count_ = 0;                      // completed pairs since the last collect()
  bool open_ = false;
  std::string misuse_;
};

}  // namespace

std::unique_ptr<DeviceStepTimer> make_event_timer(cudaStream_t stream, std::string* why) {
  auto timer = std::make_unique<EventTimer>(stream);
  if (Status s = timer->create_events(); !s) {
    (void)cudaGetLastError();
    if (why) *why = "event timer: " + s.error().message;
    return nullptr;
  }
  return timer;
}

}  // namespace noeira::cuda
