// CpuOps' global-norm gradient clipping (contract: kernels/op_list.inc), with
// kernels/common/clip.h's math: each segment's squares in double in 8 lanes
// (kernels/cpu/lane_sums.h; one thread per segment), the segment norms combined in segment
// order.
#include "kernels/common/clip.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/lane_sums.h"

namespace noeira {

size_t CpuOps::clip_workspace_bytes(int64_t n_segments) const {
  return static_cast<size_t>(n_segments) * sizeof(float);
}

void CpuOps::clip_grad_norm(float* g, const int64_t* segments, int64_t n_segments,
                            float max_norm, float* norm, void* workspace) {
  float* seg_norm = static_cast<float*>(workspace);
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1)
  for (int64_t p = 0; p < n_segments; ++p)
    seg_norm[p] =
        clip_segment_norm(lane_sum_squares(g + segments[p], segments[p + 1] - segments[p]));
  double total_sq = 0.0;
  for (int64_t p = 0; p < n_segments; ++p) total_sq += clip_norm_square(seg_norm[p]);
  const float total = clip_total_norm(total_sq);
  *norm = total;
  const float coef = clip_coefficient(total, max_norm);
  const int64_t n = n_segments > 0 ? segments[n_segments] - segments[0] : 0;
  float* g0 = g + (n_segments > 0 ? segments[0] : 0);
#pragma omp parallel for simd num_threads(threads_) schedule(static)
  for (int64_t i = 0; i < n; ++i) g0[i] *= coef;
}

}  // namespace noeira
