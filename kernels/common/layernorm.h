// LayerNorm's per-row and per-element math (PyTorch semantics), written once for the CPU
// loops and the CUDA kernels. The backends differ only in how they sum (their orders are
// stated in kernels/op_list.inc); every sum is in double, each element's math in fp32.
//
// Forward, one row of C values x:
//   sum = sum(x), sumsq = sum(x * x) in double (the order: kernels/op_list.inc)
//   mean = sum / C, var = max(0, sumsq / C - mean^2) (biased), all in double;
//   mean_f = float(mean), rstd_f = float(1 / sqrt(var + double(eps)))
//   y = ((x - mean_f) * rstd_f) * gamma + beta   (fp32, left to right; beta 0 if null)
// Backward, one row: xhat = (x - mean_f) * rstd_f, g = dy * gamma (fp32),
//   sum_g = sum(double(g)), sum_g_xhat = sum(double(g) * double(xhat)) in double;
//   mean_g = float(sum_g / C), mean_g_xhat = float(sum_g_xhat / C)
//   dx = rstd_f * ((g - mean_g) - xhat * mean_g_xhat)   (fp32); with a residual gradient
//   dres: stored(dx) + dres (layernorm_dx_plus)
// Parameter gradients, per column c over the rows: dgamma[c] += float(sum(double(dy) *
// double(xhat))), dbeta[c] += float(sum(double(dy))), sums in double (CPU: rows in order
// within fixed 32-row chunks, the chunks in order), added to the fp32 accumulator once.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/common/bf16.h"
#include "kernels/common/hd.h"

namespace noeira {

struct LayerNormStats {
  float mean, rstd;
};

NOEIRA_HD LayerNormStats layernorm_stats(double sum, double sumsq, int64_t C, float eps) {
  const double mean = sum / static_cast<double>(C);
  double var = sumsq / static_cast<double>(C) - mean * mean;
  if (var < 0.0) var = 0.0;
  return LayerNormStats{static_cast<float>(mean),
                        static_cast<float>(1.0 / sqrt(var + static_cast<double>(eps)))};
}

NOEIRA_HD float layernorm_xhat(float x, float mean, float rstd) { return (x - mean) * rstd; }

// beta = 0.0f when the op has no beta.
NOEIRA_HD float layernorm_apply(float x, float mean, float rstd, float gamma, float beta) {
  return layernorm_xhat(x, mean, rstd) * gamma + beta;
}

// The row means of the backward from its double sums over C values.
struct LayerNormBackStats {
  float mean_g, mean_g_xhat;
};

NOEIRA_HD LayerNormBackStats layernorm_back_stats(double sum_g, double sum_g_xhat, int64_t C) {
  return LayerNormBackStats{static_cast<float>(sum_g / static_cast<double>(C)),
                            static_cast<float>(sum_g_xhat / static_cast<double>(C))};
}

// g = dy * gamma, xhat = layernorm_xhat(x, mean, rstd).
NOEIRA_HD float layernorm_dx(float g, float xhat, float rstd, const LayerNormBackStats& s) {
  return rstd * ((g - s.mean_g) - xhat * s.mean_g_xhat);
}

// The backward's output element with a residual gradient r added (the pre-LN transformer
// block's x + f(ln(x))): dx rounded to the storage type T as LayerNorm stores it, then the
// sum in fp32 as add(r, dx) computes it, operands in that order (x86 keeps the first
// NaN's sign and payload when both are NaN; the caller stores the sum), so the fused pass
// has the bits of the backward and a separate add. On the GPU the add is __fadd_rn: for
// fp32, nvcc would contract layernorm_dx's product and this add into one FMA, which the
// separate passes round twice.
template <class T>
NOEIRA_HD float layernorm_dx_plus(float dx, float r) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(r, stored_as<T>(dx));
#else
  return r + stored_as<T>(dx);  // the host build does not contract (-ffp-contract=off)
#endif
}

}  // namespace noeira
