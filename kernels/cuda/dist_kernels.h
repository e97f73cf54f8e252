// Data-parallel kernels (kernels/ops.h: slice_mean_sumsq, clip_slice; the NCCL
// communicator's rank-ordered sum). Orders:
//   slice_mean_sumsq: g[i] /= ranks (grid stride); then one block per segment p: thread t
//     of 256 sums double(g)^2 over the slice's part of p at t, t + 256, ... in order; the
//     thread sums folded pairwise (sums[t] += sums[t + h] for t < h; h = 128, ..., 1)
//     into sumsq[p] (0 where the slice misses p).
//   clip_slice: one thread adds each segment's ranks in rank order and the segment norms
//     in segment order (kernels/common/clip.h) into *coef; then g *= *coef (grid stride).
//   rank_ordered_sum: out[i] = kernels/common/rank_sum.h over own[i] and the received
//     rounds; out may be own (in place).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace noeira::cuda {

cudaError_t launch_slice_mean_sumsq(cudaStream_t stream, float* g, int64_t lo, int64_t n,
                                    float ranks, const int64_t* segments, int64_t n_segments,
                                    double* sumsq);
cudaError_t launch_clip_slice(cudaStream_t stream, float* g, int64_t n, const double* sumsq,
                              int64_t ranks, int64_t n_segments, float max_norm, float* coef);
cudaError_t launch_rank_ordered_sum(cudaStream_t stream, float* out, const float* own,
                                    const float* rest, int64_t n, int n_rest);

}  // namespace noeira::cuda
