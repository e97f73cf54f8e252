// The CUDA backend's entry point: one StreamState shared by CudaOps and CudaStream, plus
// the device allocator on the same stream.
#include "kernels/cuda/cuda_backend.h"

#include <string>

#include "kernels/cuda/cuda_allocator.h"
#include "kernels/cuda/cuda_stream.h"

namespace noeira {

Result<Backend> make_cuda_backend(const CudaOptions& options) {
  Result<std::shared_ptr<cuda::StreamState>> state = cuda::StreamState::create();
  if (!state) return state.error();
  Result<std::unique_ptr<CudaOps>> ops = CudaOps::create(*state, options);
  if (!ops) return ops.error();
  const cuda::StreamState& st = **state;
  Backend b;
  b.allocator = std::make_unique<CudaAllocator>(st.stream());
  b.description = "gpu (" + st.device_name() + ", sm_" + std::to_string(st.sm()) +
                  ", cuBLASLt, TF32 " + ((*ops)->tf32() ? "on" : "off") + ")";
  b.stream = std::make_unique<CudaStream>(std::move(state).value());
  b.ops = std::move(ops).value();
  return b;
}

Result<Backend> make_cuda_backend() { return make_cuda_backend(cuda_options_from_env()); }

}  // namespace noeira
