#include "kernels/cuda/cuda_allocator.h"

#include <string>

#include "kernels/cuda/cuda_check.h"

namespace noeira {

namespace {

std::string mib(size_t bytes) {
  return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB";
}

}  // namespace

std::optional<size_t> CudaAllocator::available_bytes(std::string* where) const {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::nullopt;
  }
  if (where) *where = "cudaMemGetInfo, of " + mib(total_bytes);
  return free_bytes;
}

Result<void*> CudaAllocator::allocate(size_t bytes, const char* what) {
  const size_t rounded = (bytes + 255) / 256 * 256;
  void* p = nullptr;
  if (const cudaError_t e = cudaMalloc(&p, rounded); e != cudaSuccess) {
    (void)cudaGetLastError();  // out of memory is not sticky; clear it for later checks
    size_t free_bytes = 0, total_bytes = 0;
    const bool known = cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess;
    (void)cudaGetLastError();
    return make_error("out of device memory allocating " + std::to_string(bytes) + " bytes (" +
                      mib(bytes) + ") for " + what + " (cudaMalloc: " + cuda::error_text(e) +
                      (known ? "; " + mib(free_bytes) + " free of " + mib(total_bytes) : "") +
                      "); reduce the batch size or the data set, or free the GPU (nvidia-smi)");
  }
  // Ordered on the ops' stream (which does not wait for the legacy default stream), and
  // waited for here so a failure is reported as an Error, not in the first op.
  cudaError_t e = cudaMemsetAsync(p, 0, rounded, stream_);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream_);
  if (e != cudaSuccess) {
    cudaFree(p);
    (void)cudaGetLastError();
    return cuda::call_error("cudaMemsetAsync", e,
                            std::string("zero-filling ") + mib(bytes) + " for " + what +
                                " failed; check nvidia-smi for a device in an error state");
  }
  return p;
}

void CudaAllocator::release(void* p) {
  if (p) cudaFree(p);
}

}  // namespace noeira
