// Device arenas (planned by nn/memory_plan.h): one cudaMalloc per arena, zero-filled on the
// backend's stream before it is handed out.
#pragma once
#include <cuda_runtime.h>

#include "kernels/allocator.h"

namespace noeira {

class CudaAllocator final : public Allocator {
 public:
  explicit CudaAllocator(cudaStream_t stream) : stream_(stream) {}
  Device device() const override { return Device::kGpu; }
  Result<void*> allocate(size_t bytes, const char* what) override;
  void release(void* p) override;
  std::optional<size_t> available_bytes(std::string* where) const override;  // cudaMemGetInfo

 private:
  cudaStream_t stream_;  // the ops' stream: the zero fill is ordered before every op
};

}  // namespace noeira
