// The NCCL communicator's rank-ordered sum (parallel/nccl_communicator.cpp): out[i] =
// kernels/common/rank_sum.h over own[i] and the n_rest received rounds (rest, n_rest x n,
// round-major); out may be own (in place). One thread per element, grid stride.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace noeira::cuda {

cudaError_t launch_rank_ordered_sum(cudaStream_t stream, float* out, const float* own,
                                    const float* rest, int64_t n, int n_rest);

}  // namespace noeira::cuda
