// Data-parallel kernels; orders in dist_kernels.h, math in kernels/common/clip.h and
// rank_sum.h.
#include "kernels/common/clip.h"
#include "kernels/common/rank_sum.h"
#include "kernels/cuda/dist_kernels.h"
#include "kernels/cuda/launch.cuh"

namespace noeira::cuda {

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

__global__ void rank_ordered_sum_kernel(float* out, const float* own, const float* rest,
                                        int64_t n, int n_rest) {
  for (int64_t i = global_thread(); i < n; i += grid_stride())
    out[i] = rank_ordered_sum(own[i], rest, n, n_rest, i);
}

}  // namespace

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

cudaError_t launch_rank_ordered_sum(cudaStream_t stream, float* out, const float* own,
                                    const float* rest, int64_t n, int n_rest) {
  if (n < 0 || n_rest < 0) return cudaErrorInvalidValue;
  if (n > 0) rank_ordered_sum_kernel<<<grid_for(n), kBlock, 0, stream>>>(out, own, rest, n, n_rest);
  return cudaGetLastError();
}

}  // namespace noeira::cuda
