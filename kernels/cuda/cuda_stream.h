// The CUDA backend's stream (kernels/stream.h): copies, fills, waiting, graph capture
// (graph.cpp), device timers and the reduction workspace, on the one cudaStream_t the
// compute ops (CudaOps) enqueue on too; both hold the same StreamState.
#pragma once
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "kernels/cuda/stream_state.h"
#include "kernels/stream.h"

namespace noeira {

class CudaStream final : public Stream {
 public:
  explicit CudaStream(std::shared_ptr<cuda::StreamState> state) : state_(std::move(state)) {}

  // The queue itself, for engines that order their own work against it (NCCL).
  cudaStream_t handle() const { return state_->stream(); }

  bool host_memory() const override { return false; }
  void fill_zero(void* p, size_t bytes) override;
  void copy_to_device(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void synchronize() override;

  // graph.cpp
  bool supports_graphs() const override { return true; }
  Status begin_capture() override;
  Result<std::unique_ptr<StepGraph>> end_capture() override;

  // A timer must not outlive this stream's backend (device_timers.h).
  std::unique_ptr<DeviceStepTimer> make_device_timer(DeviceTimerKind kind,
                                                     std::string* why) override;

  // bias_grad's per-chunk partials (kernels/common/column_sum.h), from the caller's plan.
  size_t reduction_workspace_bytes() const override;
  Status bind_reduction_workspace(void* workspace, size_t bytes) override;
  // The bound buffer (null: unbound, bias_grad runs as one chunk); lets tests check that
  // a caller such as the DatasetTrainer really planned and bound it.
  const void* bound_reduction_workspace() const { return state_->reduction_workspace(); }

 private:
  std::shared_ptr<cuda::StreamState> state_;
};

}  // namespace noeira
