// Global-norm gradient clipping's scalar math (torch.nn.utils.clip_grad_norm_ with
// max_norm, norm_type 2), written once for the CPU loop and the CUDA kernels.
//
// Order and precision (both backends):
//   per parameter p (a segment of the gradient arena): sq_p = sum of double(g)^2 (CPU: in
//     8 lanes, element i of the segment into lane i % 8, the lanes added in lane order;
//     CUDA: a fixed tree), norm_p = float(sqrt(sq_p)) -- torch's fp32
//     per-parameter norm;
//   total = float(sqrt(sum over p, in segment order, of double(norm_p)^2)) -- the norm of
//     the stacked fp32 norms, its squares summed in double;
//   coef = clip_coefficient(total, max_norm) = min(1, max_norm / (total + 1e-6)) in fp32;
//   every g element *= coef (also when coef is 1, so the pass is the same every step).
#pragma once
#include <cmath>

#include "kernels/common/hd.h"

namespace noeira {

// A segment's fp32 norm from its double sum of squares.
NOEIRA_HD float clip_segment_norm(double sumsq) { return static_cast<float>(sqrt(sumsq)); }

// One segment norm's contribution to the total's sum of squares.
NOEIRA_HD double clip_norm_square(float norm) {
  return static_cast<double>(norm) * static_cast<double>(norm);
}

NOEIRA_HD float clip_total_norm(double sum_norm_squares) {
  return static_cast<float>(sqrt(sum_norm_squares));
}

// torch: clip_coef = max_norm / (total_norm + 1e-6); clamped to 1.0 (fp32 tensors).
NOEIRA_HD float clip_coefficient(float total, float max_norm) {
  const float coef = max_norm / (total + 1e-6f);
  return coef < 1.0f ? coef : 1.0f;
}

}  // namespace noeira
