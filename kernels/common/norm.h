// BatchNorm's per-element and per-channel math (PyTorch semantics), written once for the
// CPU loops and the CUDA kernels. The backends only differ in how they sum a channel's
// values (their order is stated in kernels/op_list.inc); every sum is in double.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/common/bf16.h"
#include "kernels/common/hd.h"
#include "kernels/common/math.h"

namespace noeira {

struct BatchNormHyper {
  float eps = 1e-5f;
  float momentum = 0.1f;  // running = (1 - momentum) * running + momentum * batch statistic
};

// From a channel's sum and sum of squares over n values: the mean and 1 / sqrt(biased
// variance + eps) used to normalise, and the running statistics' update, which takes the
// unbiased variance (n / (n - 1) times the biased one; the biased one when n == 1).
struct ChannelStats {
  float mean, invstd;
};

NOEIRA_HD ChannelStats channel_stats(double sum, double sumsq, int64_t n, float eps) {
  const double mean = sum / static_cast<double>(n);
  double var = sumsq / static_cast<double>(n) - mean * mean;
  if (var < 0.0) var = 0.0;
  return ChannelStats{static_cast<float>(mean),
                      static_cast<float>(1.0 / sqrt(var + static_cast<double>(eps)))};
}

NOEIRA_HD void update_running(float& running_mean, float& running_var, double sum, double sumsq,
                              int64_t n, const BatchNormHyper& h) {
  const double mean = sum / static_cast<double>(n);
  double var = sumsq / static_cast<double>(n) - mean * mean;
  if (var < 0.0) var = 0.0;
  const double unbiased = n > 1 ? var * static_cast<double>(n) / static_cast<double>(n - 1) : var;
  running_mean = static_cast<float>((1.0 - h.momentum) * running_mean + h.momentum * mean);
  running_var = static_cast<float>((1.0 - h.momentum) * running_var + h.momentum * unbiased);
}

// A channel's two sums in double: (sum x, sum x^2) forward, (sum dy, sum dy * xhat)
// backward. Synchronised BatchNorm adds them over the ranks before using them; the ops
// pass them as (C, 2) doubles, (a, b) per channel.
struct ChannelSums {
  double a, b;
};

// y = (x - mean) * invstd * gamma + beta.
NOEIRA_HD float batchnorm_apply(float x, float mean, float invstd, float gamma, float beta) {
  return (x - mean) * invstd * gamma + beta;
}

// A fused BatchNorm's epilogue for one element (kernels/ops.h BatchNormEpilogue): y is the
// normalised value (batchnorm_apply or batchnorm_eval), r the residual's element when
// has_residual. The separate ops' steps with their roundings to the storage type T: the
// BatchNorm's output stored, add's sum stored, then the activation (the caller stores its
// result), so the fused pass gives their bits. ReLU skips the rounding before it: rounding
// keeps a value's sign (or makes it a zero) and ReLU passes a stored value on exactly, so
// storing relu(y) rounds to the same bits as storing relu(stored_as<T>(y)), with one
// rounding fewer (bf16's rounding was most of the fused pass's arithmetic).
template <class T>
NOEIRA_HD float batchnorm_epilogue(float y, bool has_residual, float r, Act act) {
  if (has_residual) y = stored_as<T>(y) + r;
  if (act == Act::kReLU) return act_forward(act, y);
  if (act != Act::kNone) y = act_forward(act, stored_as<T>(y));
  return y;
}

// ReLU's gradient factor (act_grad(kReLU, -, y)) at the stored output y of a training
// forward with the epilogue {no residual, ReLU}, from that forward's input and statistics:
// y is round_T(relu(v)) for v = batchnorm_apply(...), positive exactly when round_T(v) is
// (rounding keeps a sign or makes a zero; a NaN v gives relu 0 and no positive rounding).
// The same expression as the forward's, so the same v where contraction is off (the host).
template <class T>
NOEIRA_HD float batchnorm_relu_grad(float x, float mean, float invstd, float gamma, float beta) {
  return stores_positive<T>(batchnorm_apply(x, mean, invstd, gamma, beta)) ? 1.0f : 0.0f;
}

// Eval: the running statistics normalise.
NOEIRA_HD float batchnorm_eval(float x, float running_mean, float running_var, float eps,
                               float gamma, float beta) {
  return (x - running_mean) / sqrtf(running_var + eps) * gamma + beta;
}

// The normalised input, in fp32 (what backward's sums and dx use).
NOEIRA_HD float batchnorm_xhat(float x, float mean, float invstd) { return (x - mean) * invstd; }

// The means backward needs from a channel's gradient sums over n values, rounded to fp32.
struct GradMeans {
  float dy, dy_xhat;
};
NOEIRA_HD GradMeans grad_means(double sum_dy, double sum_dy_xhat, int64_t n) {
  const double dn = static_cast<double>(n);
  return GradMeans{static_cast<float>(sum_dy / dn), static_cast<float>(sum_dy_xhat / dn)};
}

// Backward of training-mode BatchNorm for one element, given the channel's sums over its n
// values: sum_dy = sum(dy), sum_dy_xhat = sum(dy * xhat), xhat = (x - mean) * invstd:
//   dx = gamma * invstd * (dy - sum_dy / n - xhat * sum_dy_xhat / n).
// dgamma += sum_dy_xhat and dbeta += sum_dy are the channel's parameter gradients.
NOEIRA_HD float batchnorm_dx(float dy, float x, float mean, float invstd, float gamma,
                             float mean_dy, float mean_dy_xhat) {
  const float xhat = batchnorm_xhat(x, mean, invstd);
  return gamma * invstd * (dy - mean_dy - xhat * mean_dy_xhat);
}

}  // namespace noeira
