// CudaOps::sum_over_ranks (contract: kernels/op_list.inc): one thread per element, grid
// stride, each adding its ranks in rank order (kernels/common/rank_sum.h).
#include <string>

#include "kernels/common/rank_sum.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"

namespace noeira {

namespace cuda {

namespace {

__global__ void sum_over_ranks_kernel(const double* all, int64_t ranks, int64_t n, double* out) {
  for (int64_t i = global_thread(); i < n; i += grid_stride())
    out[i] = rank_major_sum(all, ranks, n, i);
}

cudaError_t launch_sum_over_ranks(cudaStream_t stream, const double* all, int64_t ranks,
                                  int64_t n, double* out) {
  if (n > 0) sum_over_ranks_kernel<<<grid_for(n), kBlock, 0, stream>>>(all, ranks, n, out);
  return cudaGetLastError();
}

}  // namespace

}  // namespace cuda

void CudaOps::sum_over_ranks(const double* all, int64_t ranks, int64_t n, double* out) {
  OpScope scope(*state_, "sum_over_ranks");
  if (ranks < 1 || n < 0)
    return fail("invalid sum over " + std::to_string(ranks) + " ranks of " + std::to_string(n) +
                " values");
  check(cuda::launch_sum_over_ranks(stream_, all, ranks, n, out), "sum_over_ranks_kernel");
}

}  // namespace noeira
