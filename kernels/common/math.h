// Scalar math shared by the CPU loops and the CUDA kernels (DESIGN.md rule 5).
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/common/bf16.h"
#include "kernels/common/exp_approx.h"
#include "kernels/common/hd.h"
#include "kernels/common/schedule.h"

namespace noeira {

enum class Act : uint8_t { kNone, kReLU, kGELU };

// GELU, tanh approximation (as torch's approximate="tanh"): 0.5 x (1 + tanh(u)) with
// u = sqrt(2/pi) (x + 0.044715 x^3), written as x * logistic(2u) (0.5 (1 + tanh u) is
// logistic(2u)) so that it needs one exp_approx and no libm call, and keeps its relative
// accuracy for negative x, where 1 + tanh(u) cancels. 2u is clamped to [-80, 80], where
// logistic is 1 to fp32 precision or below 2e-35: the clamp changes results by less than
// 1e-33 and keeps exp(2u) finite for the gradient.
namespace gelu_detail {
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;
constexpr float kClamp = 80.0f;

NOEIRA_HD float two_u(float x) {
  const float z = 2.0f * kSqrt2OverPi * (x + kCubic * x * x * x);
  const float lo = z < -kClamp ? -kClamp : z;
  return lo > kClamp ? kClamp : lo;
}
// gelu and gelu_grad call exp_approx_in_domain on -2u, which this clamp keeps in its domain.
static_assert(kClamp <= -exp_detail::kUnderflow && kClamp <= exp_detail::kOverflow);

// d/dx x s(2u) = s + 2 x u' s (1 - s), with 1 - s = e s for e = exp(-2u): no cancellation.
// Given e = exp_approx_in_domain(-2u) and s = 1 / (1 + e) at x.
NOEIRA_HD float grad_from(float x, float e, float s) {
  const float du = kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
  return s + 2.0f * x * du * (e * s) * s;
}
}  // namespace gelu_detail

// two_u's clamp keeps -2u inside exp_approx's domain, where its own clamps and select
// change nothing: the _in_domain forms give the same bits with fewer operations.
NOEIRA_HD float gelu(float x) { return x * logistic_in_domain(gelu_detail::two_u(x)); }

NOEIRA_HD float gelu_grad(float x) {
  using namespace gelu_detail;
  const float e = exp_approx_in_domain(-two_u(x));  // in its domain, as in gelu
  return grad_from(x, e, 1.0f / (1.0f + e));
}

NOEIRA_HD float act_forward(Act a, float x) {
  switch (a) {
    case Act::kReLU: return x > 0.0f ? x : 0.0f;
    case Act::kGELU: return gelu(x);
    default: return x;
  }
}

// d act / d pre, given the pre-activation `pre` (GELU) or the output `post` (ReLU:
// post > 0 exactly when pre > 0, so ReLU needs no extra buffer).
NOEIRA_HD float act_grad(Act a, float pre, float post) {
  switch (a) {
    case Act::kReLU: return post > 0.0f ? 1.0f : 0.0f;
    case Act::kGELU: return gelu_grad(pre);
    default: return 1.0f;
  }
}

// d act / d pre at the pre-activation z alone: act_grad's value (ReLU's 1 exactly where
// relu(z) > 0, as act_grad reads it from post). What bias_act saves for a backward that
// only multiplies (its dact; act_backward_saved).
NOEIRA_HD float act_grad_at(Act a, float z) {
  switch (a) {
    case Act::kReLU: return z > 0.0f ? 1.0f : 0.0f;
    case Act::kGELU: return gelu_grad(z);
    default: return 1.0f;
  }
}

// act(z), and in *dact act_grad_at(a, z as T stores it): the value act_backward computes from
// a pre-activation kept in T, so a backward from dact has act_backward's bits. In fp32 the
// GELU's two share their exp_approx and division (gelu's and gelu_grad's operations).
template <class T>
NOEIRA_HD float act_forward_with_grad(Act a, float z, float* dact) {
  if constexpr (std::is_same_v<T, float>) {
    if (a == Act::kGELU) {
      using namespace gelu_detail;
      const float e = exp_approx_in_domain(-two_u(z));
      const float s = 1.0f / (1.0f + e);
      *dact = grad_from(z, e, s);
      return z * s;
    }
  }
  *dact = act_grad_at(a, stored_as<T>(z));
  return act_forward(a, z);
}

// add_relu_backward's element in storage type T: the sum as add stores it, then ReLU's
// gradient from its output post as act_backward takes it (the product is exact: a factor of
// 0 or 1), so the fused op has the two ops' bits.
template <class T>
NOEIRA_HD float add_relu_grad(float a, float b, float post) {
  return stored_as<T>(a + b) * act_grad(Act::kReLU, 0.0f, post);
}

// Softmax cross-entropy with label smoothing eps over K classes (torch's
// label_smoothing): the target is (1 - eps) onehot(y) + eps / K. Class j's target weight,
// which the gradient (softmax_j - target_j) / B subtracts; eps = 0 gives the one-hot 1 / 0.
NOEIRA_HD float smoothed_target(int64_t j, int64_t y, float eps, int64_t K) {
  return (j == y ? 1.0f - eps : 0.0f) + eps / static_cast<float>(K);
}

// One row's loss from its log-sum-exp pieces: nll = log(sum) + zmax - z_y, and with eps > 0
// also the uniform part log(sum) + zmax - zsum / K (zsum = the row's logits summed), mixed
// in double as torch's (1 - eps) nll + eps smooth. eps = 0 returns nll exactly.
NOEIRA_HD double xent_row_loss(float log_sum, float zmax, float z_y, float zsum, float eps,
                               int64_t K) {
  const double nll = static_cast<double>(log_sum + zmax - z_y);
  if (eps == 0.0f) return nll;
  const double smooth = static_cast<double>(log_sum + zmax - zsum / static_cast<float>(K));
  return (1.0 - static_cast<double>(eps)) * nll + static_cast<double>(eps) * smooth;
}

// ---- Optimizers. Hyper-parameters are the recipe's decimal values (double); every
// ---- derived constant (1 - beta, bias corrections, step size) is computed in double and
// ---- rounded to fp32 once, as torch.optim does with its Python-float scalars, and the
// ---- update is written in torch's order of operations, so the twin's parity check
// ---- compares like with like; except Adam's denominator, which multiplies by the bias
// ---- correction's reciprocal where torch divides (one division fewer per element:
// ---- docs/parity.md).
struct AdamHyper {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
  bool decoupled = false;  // AdamW
  LrSchedule schedule;     // the rate of each step (kernels/common/schedule.h)
  // Per element 0 or 1 (device memory, n floats), multiplying weight_decay: parameter
  // groups (AdamW decays matrices only). Null: every element decays.
  const float* decay_mask = nullptr;
};

struct AdamStepScalars {
  float beta1, one_minus_beta1, beta2, one_minus_beta2, eps, weight_decay;
  float step_size;        // lr / (1 - beta1^t)
  float inv_bias_corr2_sqrt;  // 1 / sqrt(1 - beta2^t)
  float decay_factor;     // AdamW: 1 - lr * wd
  bool decoupled;
};

// t is the 1-based step number.
NOEIRA_HD AdamStepScalars adam_step_scalars(const AdamHyper& h, int64_t t) {
  const double bc1 = 1.0 - pow(h.beta1, static_cast<double>(t));
  const double bc2 = 1.0 - pow(h.beta2, static_cast<double>(t));
  AdamStepScalars s;
  s.beta1 = static_cast<float>(h.beta1);
  s.one_minus_beta1 = static_cast<float>(1.0 - h.beta1);
  s.beta2 = static_cast<float>(h.beta2);
  s.one_minus_beta2 = static_cast<float>(1.0 - h.beta2);
  s.eps = static_cast<float>(h.eps);
  s.weight_decay = static_cast<float>(h.weight_decay);
  const double lr = scheduled_lr(h.lr, h.schedule, t);
  s.step_size = static_cast<float>(lr / bc1);
  s.inv_bias_corr2_sqrt = static_cast<float>(1.0 / sqrt(bc2));
  s.decay_factor = static_cast<float>(1.0 - lr * h.weight_decay);
  s.decoupled = h.decoupled;
  return s;
}

// sqrt(v) / sqrt(1 - beta2^t) + eps as a product by the reciprocal, rounded before eps is
// added: on the GPU __fmul_rn, which nvcc does not contract into a fused multiply-add (our
// x86-64 CPU builds use -ffp-contract=off), so the denominator rounds alike on both. (The
// moments' updates above may be contracted on the GPU, as they were before.)
NOEIRA_HD float adam_denominator(float v, const AdamStepScalars& s) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(sqrtf(v), s.inv_bias_corr2_sqrt) + s.eps;
#else
  return sqrtf(v) * s.inv_bias_corr2_sqrt + s.eps;
#endif
}

// One Adam update with the weight-decay mode fixed at compile time, so a loop over
// parameters is branch-free and vectorises.
template <bool kDecoupled, bool kL2>
NOEIRA_HD void adam_update_mode(float& p, float g, float& m, float& v, const AdamStepScalars& s) {
  if constexpr (kDecoupled) p *= s.decay_factor;
  if constexpr (kL2) g += s.weight_decay * p;
  m = m * s.beta1 + s.one_minus_beta1 * g;
  v = v * s.beta2 + (s.one_minus_beta2 * g) * g;
  const float denom = adam_denominator(v, s);
  p += (-s.step_size * m) / denom;
}

// The same with a per-element weight-decay mask (AdamHyper::decay_mask, 0 or 1): an element
// whose mask is 0 takes no decay at all (torch's parameter group with weight_decay 0), one
// whose mask is nonzero exactly adam_update_mode's decay.
template <bool kDecoupled, bool kL2>
NOEIRA_HD void adam_update_masked(float& p, float g, float& m, float& v, float mask,
                                  const AdamStepScalars& s) {
  if constexpr (kDecoupled) p *= mask != 0.0f ? s.decay_factor : 1.0f;
  if constexpr (kL2) g = mask != 0.0f ? g + s.weight_decay * p : g;
  m = m * s.beta1 + s.one_minus_beta1 * g;
  v = v * s.beta2 + (s.one_minus_beta2 * g) * g;
  const float denom = adam_denominator(v, s);
  p += (-s.step_size * m) / denom;
}

// `h` is kept in the signature for callers; every constant comes from `s`.
NOEIRA_HD void adam_update(float& p, float g, float& m, float& v, const AdamHyper& /*h*/,
                           const AdamStepScalars& s) {
  if (s.decoupled)
    adam_update_mode<true, false>(p, g, m, v, s);
  else if (s.weight_decay != 0.0f)
    adam_update_mode<false, true>(p, g, m, v, s);
  else
    adam_update_mode<false, false>(p, g, m, v, s);
}

struct SgdHyper {
  double lr = 0.01, momentum = 0.9, weight_decay = 0.0;
  bool nesterov = false;
  LrSchedule schedule;
};

struct SgdStepScalars {
  float lr, momentum, weight_decay;
  bool nesterov;
};

// t is the 1-based step number.
NOEIRA_HD SgdStepScalars sgd_step_scalars(const SgdHyper& h, int64_t t) {
  return SgdStepScalars{static_cast<float>(scheduled_lr(h.lr, h.schedule, t)),
                        static_cast<float>(h.momentum), static_cast<float>(h.weight_decay),
                        h.nesterov};
}

// torch.optim.SGD with momentum (dampening 0): g += wd * p; buf = mu * buf + g;
// g = g + mu * buf (Nesterov) or buf; p += -lr * g. The first step sets buf = g; buf
// starts at zero, so mu * 0 + g gives the same bits.
NOEIRA_HD void sgd_update(float& p, float g, float& buf, const SgdStepScalars& s) {
  if (s.weight_decay != 0.0f) g += s.weight_decay * p;
  buf = s.momentum * buf + g;
  const float d = s.nesterov ? g + s.momentum * buf : buf;
  p += -s.lr * d;
}

}  // namespace noeira
