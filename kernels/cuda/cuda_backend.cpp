// The CUDA backend's entry point: CudaOps on one stream plus the device allocator.
#include "kernels/cuda/cuda_backend.h"

#include <string>

#include "kernels/cuda/cuda_allocator.h"

namespace noeira {

Result<Backend> make_cuda_backend(const CudaOptions& options) {
  Result<std::unique_ptr<CudaOps>> ops = CudaOps::create(options);
  if (!ops) return ops.error();
  Backend b;
  b.allocator = std::make_unique<CudaAllocator>((*ops)->stream());
  b.description = "gpu (" + (*ops)->device_name() + ", sm_" + std::to_string((*ops)->sm()) +
                  ", cuBLASLt, TF32 " + ((*ops)->tf32() ? "on" : "off") + ")";
  b.ops = std::move(ops).value();
  return b;
}

Result<Backend> make_cuda_backend() { return make_cuda_backend(cuda_options_from_env()); }

}  // namespace noeira
