// exp and the logistic function in plain fp32 arithmetic, without a libm call, so the CPU
// loops over them vectorise (scalar libm expf/tanhf were half of a GPT step on the CPU)
// and both backends compute the same function (DESIGN.md rule 5).
//
// exp_approx: Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2, then exp(r) by its Taylor
// series to r^7 (truncation < 5.4e-9 relative) and 2^n put into the exponent field.
// Measured over every float in [-87.3, 88.3] (tests/unit/test_exp_approx.cpp samples it):
// at most 0.94 ulp from exp in double (1.22 with the multiply-adds unfused). Below
// -87.33 (where exp leaves the normal range) it returns 0; from about 88.376 (where n
// reaches 128) it returns +inf, though exp stays finite up to 88.72; NaN stays NaN.
// Softmax (arguments <= 0, -inf masked) and the logistic below use it within that domain.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/common/bf16.h"
#include "kernels/common/hd.h"

namespace noeira {

namespace exp_detail {
constexpr float kLog2e = 1.44269504088896341f;
// ln 2 in two parts: kLn2Hi has 9 significant bits, so n * kLn2Hi is exact for |n| <= 128.
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kRoundToInt = 12582912.0f;  // 1.5 * 2^23: (y + it) - it rounds y to an integer
constexpr float kUnderflow = -87.33654f;    // log(FLT_MIN): exp below it is subnormal -> 0
constexpr float kOverflow = 88.72284f;      // log(FLT_MAX)
}  // namespace exp_detail

// exp_approx for x already in [kUnderflow, kOverflow] (or NaN): no clamps, no select.
// Callers whose arguments are clamped inside that range (the GELU's) call it directly: the
// vectorised compare-and-select of the clamps they would repeat cost a third of the GELU.
NOEIRA_HD float exp_approx_in_domain(float xc) {
  using namespace exp_detail;
  // Every a * b + c is a fused multiply-add, written out: the CPU build keeps a * b + c
  // two roundings (-ffp-contract=off) while nvcc fuses it, so spelt out, both backends
  // round alike; and each saves an operation (the GELU's loops are bound by them).
  // t = 1.5 * 2^23 + n for the integer n nearest xc / ln 2, exactly: floats in [2^23, 2^24)
  // are the integers, so t's bit pattern minus the constant's is n (mod 2^32).
  const float t = fmaf(xc, kLog2e, kRoundToInt);
  const float n = t - kRoundToInt;
  const float r = fmaf(-n, kLn2Lo, fmaf(-n, kLn2Hi, xc));
  // exp(r) = 1 + r + r^2/2! + ... + r^7/7!, by Horner.
  float p = 1.0f / 5040.0f;
  p = fmaf(p, r, 1.0f / 720.0f);
  p = fmaf(p, r, 1.0f / 120.0f);
  p = fmaf(p, r, 1.0f / 24.0f);
  p = fmaf(p, r, 1.0f / 6.0f);
  p = fmaf(p, r, 0.5f);
  p = fmaf(p, r, 1.0f);
  p = fmaf(p, r, 1.0f);
  // 2^n: n in [-126, 128], read from t's bits (an integer subtraction, where a float -> int
  // conversion cost a NaN guard and a select per element); 128 gives the +inf bit pattern
  // (xc within 0.35 of overflow). For a NaN xc the bits are arbitrary and p is NaN.
  const uint32_t n_bits = f32_bits(t) - f32_bits(kRoundToInt);
  return p * f32_from_bits((n_bits + 127u) << 23);
}

NOEIRA_HD float exp_approx(float x) {
  using namespace exp_detail;
  // Selects, not branches: the loops calling this vectorise. A NaN fails every comparison,
  // so it passes both clamps and flows through the arithmetic.
  float xc = x < kUnderflow ? kUnderflow : x;
  xc = xc > kOverflow ? kOverflow : xc;
  return x < kUnderflow ? 0.0f : exp_approx_in_domain(xc);
}

// 1 / (1 + exp(-z)): 0 below z = -88.7, 1 above z = 87.3; relative error a few ulp.
NOEIRA_HD float logistic(float z) { return 1.0f / (1.0f + exp_approx(-z)); }

// logistic for -z already in exp_approx's domain (the GELU's clamped 2u): the same bits.
NOEIRA_HD float logistic_in_domain(float z) {
  return 1.0f / (1.0f + exp_approx_in_domain(-z));
}

}  // namespace noeira
