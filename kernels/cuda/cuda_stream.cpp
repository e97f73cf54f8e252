// CudaStream's memory, copies, waiting, timers and the reduction workspace binding; the
// capture is graph.cpp's.
#include "kernels/cuda/cuda_stream.h"

#include <string>

#include "kernels/common/column_sum.h"
#include "kernels/cuda/device_timers.h"
#include "kernels/cuda/op_scope.h"

namespace noeira {

using cuda::OpScope;

void CudaStream::fill_zero(void* p, size_t bytes) {
  OpScope scope(*state_, "fill_zero");
  if (bytes == 0) return;
  state_->check(cudaMemsetAsync(p, 0, bytes, state_->stream()), "cudaMemsetAsync");
}

namespace {

// A copy between host and device memory that waits for the transfer. Refused while
// capturing: a graph cannot wait for the host, and would keep the host pointer.
void host_copy(cuda::StreamState& state, const char* op, const std::string& refusal, void* dst,
               const void* src, size_t bytes, cudaMemcpyKind kind, const char* call) {
  OpScope scope(state, op);
  if (state.refuse_while_capturing(refusal + " (" + std::to_string(bytes) + " bytes)")) return;
  if (bytes == 0) return;
  state.check(cudaMemcpyAsync(dst, src, bytes, kind, state.stream()), call);
  state.check(cudaStreamSynchronize(state.stream()), "cudaStreamSynchronize");
}

}  // namespace

// The source is pageable host memory that the caller may free on return, and CUDA only
// promises such a copy "might be synchronous", so we wait for it. Used at set-up and
// epoch boundaries, never inside a step. While capturing, the graph would re-read
// whatever the host pointer points to at every replay.
void CudaStream::copy_to_device(void* dst, const void* host_src, size_t bytes) {
  host_copy(*state_, "copy_to_device", "a copy from pageable host memory", dst, host_src, bytes,
            cudaMemcpyHostToDevice, "cudaMemcpyAsync (host to device)");
}

// Callers read the result immediately, so this waits for the copy.
void CudaStream::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  host_copy(*state_, "copy_to_host", "a copy to host memory that waits for the device",
            host_dst, src, bytes, cudaMemcpyDeviceToHost, "cudaMemcpyAsync (device to host)");
}

void CudaStream::synchronize() {
  OpScope scope(*state_, "synchronize");
  if (state_->refuse_while_capturing("waiting for the device")) return;
  state_->check(cudaStreamSynchronize(state_->stream()), "cudaStreamSynchronize");
}

std::unique_ptr<DeviceStepTimer> CudaStream::make_device_timer(DeviceTimerKind kind,
                                                               std::string* why) {
  switch (kind) {
    case DeviceTimerKind::kCupti: return cuda::make_cupti_timer(state_->stream(), why);
    case DeviceTimerKind::kEvent: return cuda::make_event_timer(state_->stream(), why);
  }
  if (why) *why = "unknown device timer kind";
  return nullptr;
}

size_t CudaStream::reduction_workspace_bytes() const { return kColumnSumWorkspaceBytes; }

// A graph keeps the pointer it was captured with, so the buffer cannot change during a
// capture.
Status CudaStream::bind_reduction_workspace(void* workspace, size_t bytes) {
  if (state_->capturing())
    return make_error("bind_reduction_workspace: a CUDA graph is being captured; bind the "
                      "workspace before begin_capture");
  if (workspace && bytes < kColumnSumWorkspaceBytes)
    return make_error("bind_reduction_workspace: the buffer has " + std::to_string(bytes) +
                      " bytes, the CUDA backend needs " +
                      std::to_string(kColumnSumWorkspaceBytes) +
                      "; reserve reduction_workspace_bytes() in the plan");
  state_->set_reduction_workspace(static_cast<float*>(workspace), bytes);
  return {};
}

}  // namespace noeira
