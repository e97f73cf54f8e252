// Whether this build has device code for the current GPU: StreamState::create asks before
// anything else runs, so a missing architecture is one clear error rather than a failure
// in the first op.
#include <cuda_runtime.h>

namespace noeira::cuda {

namespace {

__global__ void probe_kernel() {}

}  // namespace

// cudaErrorNoKernelImageForDevice (or cudaErrorInvalidDeviceFunction) without it.
cudaError_t check_kernel_image() {
  cudaFuncAttributes attr{};
  return cudaFuncGetAttributes(&attr, probe_kernel);
}

}  // namespace noeira::cuda
