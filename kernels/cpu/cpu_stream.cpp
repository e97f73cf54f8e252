#include "kernels/cpu/cpu_stream.h"

#include <cstring>

namespace noeira {

// Zero bytes are a no-op whatever the pointers, as on the GPU: an empty arena (a model
// without parameters) has a null base, and memset/memcpy must not be given null.
void CpuStream::fill_zero(void* p, size_t bytes) {
  if (bytes > 0) std::memset(p, 0, bytes);
}

void CpuStream::copy_to_device(void* dst, const void* host_src, size_t bytes) {
  if (bytes > 0) std::memcpy(dst, host_src, bytes);
}

void CpuStream::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  if (bytes > 0) std::memcpy(host_dst, src, bytes);
}

Status CpuStream::begin_capture() {
  return make_error("CUDA-graph capture needs the gpu target; drop --graph or use --target gpu");
}

Result<std::unique_ptr<StepGraph>> CpuStream::end_capture() {
  return make_error("no capture in progress");
}

std::unique_ptr<DeviceStepTimer> CpuStream::make_device_timer(DeviceTimerKind, std::string* why) {
  if (why) *why = "not a CUDA target";
  return nullptr;
}

// Nothing to bind: the CPU's reductions need no scratch of the caller's.
Status CpuStream::bind_reduction_workspace(void*, size_t) { return {}; }

}  // namespace noeira
