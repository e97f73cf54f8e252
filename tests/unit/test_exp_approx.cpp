// kernels/common/exp_approx.h and the GELU built on it (kernels/common/math.h): the stated
// error bounds against double precision on a dense sample of each domain (the bound itself
// was measured over every float in [-87.3, 88.3]: 0.94 ulp; 1.22 with its multiply-adds
// unfused, as before they were written as fmaf),
// the edges (underflow to 0, overflow to +inf, NaN), and the GELU and its gradient against
// torch's tanh formula in double.
#include <cmath>
#include <cstdint>
#include <limits>

#include <catch2/catch.hpp>

#include "kernels/common/exp_approx.h"
#include "kernels/common/math.h"

using namespace noeira;

namespace {

// |got - want| in units of the float spacing at want.
double ulps(float got, double want) {
  const float w = static_cast<float>(want);
  const double spacing = std::nextafter(std::fabs(w), std::numeric_limits<float>::infinity()) -
                         static_cast<double>(std::fabs(w));
  return std::fabs(static_cast<double>(got) - want) / spacing;
}

double gelu_ref(double x) {
  const double u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1.0 + std::tanh(u));
}

double gelu_grad_ref(double x) {
  const double u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
  const double t = std::tanh(u);
  const double du = 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * x * x);
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du;
}

// exp_approx as first written: 2^n through a float -> int conversion, n forced to 0 for a
// NaN. The current one reads n from the rounding constant's bits instead (faster
// vectorised); the two must give the same bits for every non-NaN float.
float exp_by_conversion(float x) {
  using namespace exp_detail;
  float xc = x < kUnderflow ? kUnderflow : x;
  xc = xc > kOverflow ? kOverflow : xc;
  float n = std::fma(xc, kLog2e, kRoundToInt) - kRoundToInt;
  n = n == n ? n : 0.0f;
  const float r = std::fma(-n, kLn2Lo, std::fma(-n, kLn2Hi, xc));
  float p = 1.0f / 5040.0f;
  for (const float c : {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f})
    p = std::fma(p, r, c);
  const float scale = f32_from_bits(static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23);
  return x < kUnderflow ? 0.0f : p * scale;
}

// f(x) for every 251st bit pattern (all exponents, signs and many mantissas) and every
// multiple of 2^-10 in [-limit, limit].
template <class F>
void for_sampled_floats(int64_t limit, const F& f) {
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 251)
    f(f32_from_bits(static_cast<uint32_t>(u)));
  for (int64_t i = -limit * 1024; i <= limit * 1024; ++i) f(static_cast<float>(i) / 1024.0f);
}

}  // namespace

TEST_CASE("exp_approx: the bits of its first formulation for every non-NaN float sampled",
          "[math]") {
  // The sampled floats over [-90, 90], and the domain's edges.
  int64_t differ = 0, nan_lost = 0;
  const auto check = [&](float x) {
    const float got = exp_approx(x);
    if (x != x) {
      nan_lost += got == got;
    } else {
      differ += f32_bits(got) != f32_bits(exp_by_conversion(x));
    }
  };
  for_sampled_floats(90, check);
  check(exp_detail::kUnderflow);
  check(exp_detail::kOverflow);
  CHECK(differ == 0);
  CHECK(nan_lost == 0);
}

TEST_CASE("gelu and gelu_grad: the bits of their exp_approx formulation", "[math]") {
  // They call exp_approx_in_domain, without exp_approx's clamps: the same bits wherever
  // two_u's clamp keeps -2u in the domain, i.e. everywhere (NaN stays NaN).
  const auto grad_by_exp = [](float x) {
    using namespace gelu_detail;
    const float e = exp_approx(-two_u(x));
    const float s = 1.0f / (1.0f + e);
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
    return s + 2.0f * x * du * (e * s) * s;
  };
  int64_t differ = 0, nan_lost = 0;
  const auto check = [&](float x) {
    const float y = gelu(x), g = gelu_grad(x);
    if (x != x) {
      nan_lost += (y == y) + (g == g);
      return;
    }
    differ += f32_bits(y) != f32_bits(x * logistic(gelu_detail::two_u(x)));
    differ += f32_bits(g) != f32_bits(grad_by_exp(x));
  };
  for_sampled_floats(20, check);
  CHECK(differ == 0);
  CHECK(nan_lost == 0);
}

TEST_CASE("exp_approx: within 1 ulp of exp over its domain, and its edges", "[math]") {
  double worst = 0.0;
  for (int64_t i = 0; i <= 2000000; ++i) {
    const float x = static_cast<float>(-87.3 + (88.3 + 87.3) * static_cast<double>(i) / 2000000.0);
    worst = std::max(worst, ulps(exp_approx(x), std::exp(static_cast<double>(x))));
  }
  CHECK(worst <= 1.0);
  CHECK(exp_approx(0.0f) == 1.0f);
  CHECK(exp_approx(-std::numeric_limits<float>::infinity()) == 0.0f);  // a masked score
  CHECK(exp_approx(-100.0f) == 0.0f);
  CHECK(exp_approx(89.0f) == std::numeric_limits<float>::infinity());
  CHECK(std::isnan(exp_approx(std::numeric_limits<float>::quiet_NaN())));
  CHECK(exp_approx(-87.3f) > 0.0f);  // still normal just above the underflow edge
  CHECK(std::isnormal(exp_approx(-87.3f)));
}

TEST_CASE("logistic: saturates to exactly 0 and 1 without NaN", "[math]") {
  CHECK(logistic(0.0f) == 0.5f);
  CHECK(logistic(100.0f) == 1.0f);
  CHECK(logistic(-100.0f) == 0.0f);
  CHECK(logistic(std::numeric_limits<float>::infinity()) == 1.0f);
  CHECK(logistic(-std::numeric_limits<float>::infinity()) == 0.0f);
}

TEST_CASE("gelu and gelu_grad: torch's tanh formula within a few fp32 ulp", "[math]") {
  // Absolute error against the double formula, scaled by max(1, |x|): the formula's own
  // fp32 evaluation with libm tanhf carries about as much (1.25e-7 and 1.38e-7 over this
  // range; ours measured 1.41e-7 and 1.92e-7).
  double worst_y = 0.0, worst_g = 0.0;
  for (int64_t i = 0; i <= 400000; ++i) {
    const double x = -20.0 + 40.0 * static_cast<double>(i) / 400000.0;
    const float xf = static_cast<float>(x);
    const double scale = std::max(1.0, std::fabs(static_cast<double>(xf)));
    worst_y = std::max(worst_y, std::fabs(gelu(xf) - gelu_ref(xf)) / scale);
    worst_g = std::max(worst_g, std::fabs(gelu_grad(xf) - gelu_grad_ref(xf)) / scale);
  }
  CHECK(worst_y < 3e-7);
  CHECK(worst_g < 4e-7);
  CHECK(gelu(0.0f) == 0.0f);
  CHECK(gelu(30.0f) == 30.0f);
  CHECK(gelu(-30.0f) > -1e-30f);
  CHECK(gelu_grad(30.0f) == 1.0f);
  CHECK(std::fabs(gelu_grad(-30.0f)) < 1e-30f);
}
