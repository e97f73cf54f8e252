// CudaOps' data-parallel slice ops (contracts: kernels/op_list.inc; math:
// kernels/common/clip.h). Orders:
//   slice_mean_sumsq: g[i] /= ranks (grid stride); then one block per segment p: thread t
//     of 256 sums double(g)^2 over the slice's part of p at t, t + 256, ... in order; the
//     thread sums folded pairwise (sums[t] += sums[t + h] for t < h; h = 128, ..., 1)
//     into sumsq[p] (0 where the slice misses p).
//   clip_slice: one thread adds each segment's ranks in rank order and the segment norms
//     in segment order (kernels/common/clip.h) into *coef; then g *= *coef (grid stride).
#include <string>

#include "kernels/common/clip.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"

namespace noeira {

namespace cuda {

namespace {

constexpr int kSumThreads = 256;

__global__ void divide_kernel(float* g, int64_t n, float ranks) {
  for (int64_t i = global_thread(); i < n; i += grid_stride()) g[i] /= ranks;
}

// Block p: segment p's part of the slice [lo, lo + n).
__global__ void segment_sumsq_kernel(const float* g, int64_t lo, int64_t n,
                                     const int64_t* segments, int64_t n_segments, double* sumsq) {
  __shared__ double sums[kSumThreads];
  const int t = threadIdx.x;
  for (int64_t p = blockIdx.x; p < n_segments; p += gridDim.x) {
    const int64_t a = segments[p] > lo ? segments[p] : lo;
    const int64_t e = segments[p + 1] < lo + n ? segments[p + 1] : lo + n;
    double s = 0.0;
    for (int64_t j = a + t; j < e; j += kSumThreads) {
      const double v = g[j - lo];
      s += v * v;
    }
    sums[t] = s;
    __syncthreads();
    for (int h = kSumThreads / 2; h > 0; h /= 2) {
      if (t < h) sums[t] += sums[t + h];
      __syncthreads();
    }
    if (t == 0) sumsq[p] = sums[0];
    __syncthreads();  // the next segment reuses the shared sums
  }
}

__global__ void clip_coefficient_kernel(const double* sumsq, int64_t ranks, int64_t n_segments,
                                        float max_norm, float* coef) {
  double total_sq = 0.0;
  for (int64_t p = 0; p < n_segments; ++p) {
    double sq = sumsq[p];
    for (int64_t r = 1; r < ranks; ++r) sq += sumsq[r * n_segments + p];
    total_sq += clip_norm_square(clip_segment_norm(sq));
  }
  *coef = clip_coefficient(clip_total_norm(total_sq), max_norm);
}

__global__ void scale_kernel(float* g, int64_t n, const float* coef) {
  const float c = *coef;
  for (int64_t i = global_thread(); i < n; i += grid_stride()) g[i] *= c;
}

cudaError_t launch_slice_mean_sumsq(cudaStream_t stream, float* g, int64_t lo, int64_t n,
                                    float ranks, const int64_t* segments, int64_t n_segments,
                                    double* sumsq) {
  if (n < 0 || n_segments < 0) return cudaErrorInvalidValue;
  if (n > 0) divide_kernel<<<grid_for(n), kBlock, 0, stream>>>(g, n, ranks);
  if (segments && n_segments > 0) {
    const unsigned blocks = static_cast<unsigned>(n_segments < 65535 ? n_segments : 65535);
    segment_sumsq_kernel<<<blocks, kSumThreads, 0, stream>>>(g, lo, n, segments, n_segments, sumsq);
  }
  return cudaGetLastError();
}

cudaError_t launch_clip_slice(cudaStream_t stream, float* g, int64_t n, const double* sumsq,
                              int64_t ranks, int64_t n_segments, float max_norm, float* coef) {
  if (n < 0 || n_segments < 0 || ranks < 1) return cudaErrorInvalidValue;
  clip_coefficient_kernel<<<1, 1, 0, stream>>>(sumsq, ranks, n_segments, max_norm, coef);
  if (n > 0) scale_kernel<<<grid_for(n), kBlock, 0, stream>>>(g, n, coef);
  return cudaGetLastError();
}

}  // namespace

}  // namespace cuda

void CudaOps::slice_mean_sumsq(float* g, int64_t lo, int64_t n, float ranks,
                               const int64_t* segments, int64_t n_segments, double* sumsq) {
  OpScope scope(*state_, "slice_mean_sumsq");
  if (n < 0 || lo < 0 || n_segments < 0)
    return fail("negative slice or segment count (lo " + std::to_string(lo) + ", n " +
                std::to_string(n) + ", segments " + std::to_string(n_segments) + ")");
  if (!(ranks >= 1.0f)) return fail("ranks must be at least 1");
  check(cuda::launch_slice_mean_sumsq(stream_, g, lo, n, ranks, segments, n_segments, sumsq),
        "slice_mean_sumsq kernels");
}

void CudaOps::clip_slice(float* g, int64_t n, const double* sumsq, int64_t ranks,
                         int64_t n_segments, float max_norm, float* coef) {
  OpScope scope(*state_, "clip_slice");
  if (n < 0 || n_segments < 0 || ranks < 1)
    return fail("bad slice (" + std::to_string(n) + " floats, " + std::to_string(ranks) +
                " ranks, " + std::to_string(n_segments) + " segments)");
  if (!coef) return fail("no coefficient buffer");
  check(cuda::launch_clip_slice(stream_, g, n, sumsq, ranks, n_segments, max_norm, coef),
        "clip_slice kernels");
}

}  // namespace noeira
