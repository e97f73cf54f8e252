// The rank-ordered sum of rank_ordered_sum.h.
#include "kernels/cuda/rank_ordered_sum.h"

#include "kernels/common/rank_sum.h"
#include "kernels/cuda/launch.cuh"

namespace noeira::cuda {

namespace {

__global__ void rank_ordered_sum_kernel(float* out, const float* own, const float* rest,
                                        int64_t n, int n_rest) {
  for (int64_t i = global_thread(); i < n; i += grid_stride())
    out[i] = rank_ordered_sum(own[i], rest, n, n_rest, i);
}

}  // namespace

cudaError_t launch_rank_ordered_sum(cudaStream_t stream, float* out, const float* own,
                                    const float* rest, int64_t n, int n_rest) {
  if (n < 0 || n_rest < 0) return cudaErrorInvalidValue;
  if (n > 0) rank_ordered_sum_kernel<<<grid_for(n), kBlock, 0, stream>>>(out, own, rest, n, n_rest);
  return cudaGetLastError();
}

}  // namespace noeira::cuda
