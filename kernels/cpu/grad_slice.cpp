// CpuOps' data-parallel slice ops (contracts: kernels/op_list.inc, after clip_grad_norm). The
// order of every sum is fixed and independent of the thread count: a segment's squares in
// double in 8 lanes from the slice's first element of it (kernels/cpu/lane_sums.h; one
// thread per segment), the ranks' values in rank order, the segment norms in segment order
// (kernels/common/clip.h).
#include <algorithm>

#include "kernels/common/clip.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/lane_sums.h"

namespace noeira {

void CpuOps::slice_mean_sumsq(float* g, int64_t lo, int64_t n, float ranks,
                              const int64_t* segments, int64_t n_segments, double* sumsq) {
#pragma omp parallel for simd num_threads(threads_) schedule(static)
  for (int64_t i = 0; i < n; ++i) g[i] /= ranks;
  if (!segments) return;
  const int64_t hi = lo + n;
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1)
  for (int64_t p = 0; p < n_segments; ++p) {
    const int64_t a = std::max(lo, segments[p]), b = std::min(hi, segments[p + 1]);
    sumsq[p] = b > a ? lane_sum_squares(g + (a - lo), b - a) : 0.0;
  }
}

void CpuOps::clip_slice(float* g, int64_t n, const double* sumsq, int64_t ranks,
                        int64_t n_segments, float max_norm, float* coef) {
  double total_sq = 0.0;
  for (int64_t p = 0; p < n_segments; ++p) {
    double sq = sumsq[p];
    for (int64_t r = 1; r < ranks; ++r) sq += sumsq[r * n_segments + p];
    total_sq += clip_norm_square(clip_segment_norm(sq));
  }
  const float c = clip_coefficient(clip_total_norm(total_sq), max_norm);
  *coef = c;
#pragma omp parallel for simd num_threads(threads_) schedule(static)
  for (int64_t i = 0; i < n; ++i) g[i] *= c;
}

}  // namespace noeira
