// The CPU backend's stream: host memory, so copies are memcpy and nothing is queued (every
// op has finished when it returns). No graphs, no device timers, no reduction workspace.
#pragma once
#include "kernels/stream.h"

namespace noeira {

class CpuStream final : public Stream {
 public:
  // threads: how many OpenMP threads share a large fill_zero (a step's gradients).
  explicit CpuStream(int threads = 1) : threads_(threads < 1 ? 1 : threads) {}
  bool host_memory() const override { return true; }
  void fill_zero(void* p, size_t bytes) override;
  void copy_to_device(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void synchronize() override {}

  bool supports_graphs() const override { return false; }
  Status begin_capture() override;
  Result<std::unique_ptr<StepGraph>> end_capture() override;
  std::unique_ptr<DeviceStepTimer> make_device_timer(DeviceTimerKind kind,
                                                     std::string* why) override;

  size_t reduction_workspace_bytes() const override { return 0; }
  Status bind_reduction_workspace(void* workspace, size_t bytes) override;

 private:
  int threads_;
};

}  // namespace noeira
