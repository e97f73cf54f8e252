// BatchNorm's bf16 loops in AVX-512 registers (kernels/cpu/batchnorm_bf16.h) give the bits
// of the generic loops they replace: the sums as batchnorm_sums.h's chunk_sums adds them
// (span lanes, double lanes, lane order), and each element through norm.h's expressions and
// f32_to_bf16, on runs of every block pattern and on inputs and outputs that hit every
// special value (NaN, infinities, signed zeros, subnormals before and after rounding). On a
// CPU without AVX512-BF16 (or a build without AVX-512) the cases say SKIP.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "kernels/common/bf16.h"
#include "kernels/common/norm.h"
#include "kernels/cpu/batchnorm_bf16.h"
#include "kernels/cpu/batchnorm_sums.h"

using namespace noeira;
using namespace noeira::cpu_batchnorm;

namespace {

bool skip_without_loops() {
  if (bf16_loops_available()) return false;
  WARN("SKIP: no AVX512-BF16 on this CPU (or no AVX-512 in this build): BatchNorm's bf16 "
       "passes run their generic loops");
  return true;
}

// Run lengths: one step, one block and a part, two blocks (side by side), two and a part,
// ResNet-20's 64, 256 and 1024.
const int64_t kRuns[] = {32, 64, 96, 256, 288, 512, 544, 800, 1024, 1056};

bf16_t bits_of(uint16_t u) { return static_cast<bf16_t>(u); }

// n bf16 values: mostly N(0, scale), with every special pattern sprinkled in (NaNs quiet
// and signalling, infinities, signed zeros, subnormals, the largest finite values).
std::vector<bf16_t> values(int64_t n, uint32_t seed, float scale) {
  std::mt19937 g(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<bf16_t> v(static_cast<size_t>(n));
  const uint16_t specials[] = {0x7fc0, 0x7f81, 0xffc1, 0x7f80, 0xff80, 0x0000, 0x8000,
                               0x0001, 0x8001, 0x007f, 0x0080, 0x7f7f, 0xff7f, 0x3f80};
  for (bf16_t& e : v) {
    const uint32_t r = g();
    e = r % 53 == 0 ? bits_of(specials[(r >> 8) % 14]) : f32_to_bf16(normal(g));
  }
  return v;
}

// The channel coefficients each case runs with: ordinary ones; a gamma that puts outputs in
// fp32's subnormal range (rounded there by the integer steps); a huge one that overflows.
std::vector<Bf16Norm> coefficient_sets() {
  return {{0.25f, 1.7f, 0.9f, 0.1f},
          {-0.5f, 0.8f, -1.3f, -0.2f},
          {0.0f, 1.0f, 3e-39f, 1e-39f},
          {0.1f, 2.0f, 1e38f, 0.0f},
          {std::numeric_limits<float>::quiet_NaN(), 1.0f, 1.0f, 0.0f}};
}

// The same bits, except where `ambiguous` marks an element whose value came from two NaN
// operands meeting in one operation: which payload comes out depends on the operand order
// the compiler picked for the scalar form (x86 returns the first operand's), so there any
// NaN matches. Everywhere else a NaN must carry the same (quieted) bits.
bool same_bits(const std::vector<bf16_t>& got, const std::vector<bf16_t>& want,
               const std::vector<bool>& ambiguous) {
  if (got.size() != want.size()) return false;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool both_nan = std::isnan(bf16_to_f32(got[i])) && std::isnan(bf16_to_f32(want[i]));
    if (got[i] != want[i] && !(ambiguous[i] && both_nan)) return false;
  }
  return true;
}
bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// The generic loops' sums over `runs` runs of S values of one channel (batch of `runs`).
template <class Term>
ChannelSums generic_sums(int64_t runs, int64_t S, const Term& term) {
  const NormShape s{runs, 1, S};
  ChannelSums out[1];
  chunk_sums(s, Chunk{0, 1}, term, out);
  return out[0];
}

}  // namespace

TEST_CASE("batchnorm bf16 loops: the sums of x and x*x have the generic span sums' bits",
          "[image-ops]") {
  if (skip_without_loops()) return;
  for (int64_t S : kRuns) {
    INFO("S = " << S);
    const int64_t runs = 3;
    const std::vector<bf16_t> x = values(runs * S, 40 + static_cast<uint32_t>(S), 2.0f);
    // Finite values only for one pass, so the sums are numbers and their bits compare.
    std::vector<bf16_t> finite = x;
    for (bf16_t& v : finite)
      if (!std::isfinite(bf16_to_f32(v))) v = f32_to_bf16(1.5f);
    for (const std::vector<bf16_t>* in : {&std::as_const(finite), &x}) {
      Bf16Lanes lanes;
      for (int64_t r = 0; r < runs; ++r) bf16_run_sums(in->data() + r * S, S, lanes);
      const ChannelSums got = lanes.total();
      const ChannelSums want = generic_sums(runs, S, [in](int64_t, int64_t at) {
        const float v = bf16_to_f32((*in)[static_cast<size_t>(at)]);
        return FloatSums{v, v * v};
      });
      if (in == &finite) {
        CHECK(same_bits(got.a, want.a));
        CHECK(same_bits(got.b, want.b));
      } else {  // with NaNs and infinities: both NaN, or the same bits
        CHECK(std::isnan(got.a) == std::isnan(want.a));
        if (!std::isnan(want.a)) CHECK(same_bits(got.a, want.a));
        CHECK(std::isnan(got.b) == std::isnan(want.b));
        if (!std::isnan(want.b)) CHECK(same_bits(got.b, want.b));
      }
    }
  }
}

TEST_CASE("batchnorm bf16 loops: the forward has batchnorm_apply's and the epilogue's bits",
          "[image-ops]") {
  if (skip_without_loops()) return;
  for (int64_t S : kRuns) {
    const std::vector<bf16_t> x = values(S, 70 + static_cast<uint32_t>(S), 3.0f);
    const std::vector<bf16_t> res = values(S, 90 + static_cast<uint32_t>(S), 1.0f);
    for (const Bf16Norm& n : coefficient_sets())
      for (bool residual : {false, true})
        for (bool relu : {false, true}) {
          INFO("S = " << S << ", gamma " << n.gamma << ", residual " << residual << ", relu "
                      << relu);
          std::vector<bf16_t> got(static_cast<size_t>(S)), want(static_cast<size_t>(S));
          std::vector<bool> ambiguous(static_cast<size_t>(S));
          bf16_run_forward(x.data(), residual ? res.data() : nullptr, relu, S, n, got.data());
          for (int64_t i = 0; i < S; ++i) {
            const size_t k = static_cast<size_t>(i);
            const float v = batchnorm_apply(bf16_to_f32(x[k]), n.mean, n.invstd, n.gamma, n.beta);
            const float r = bf16_to_f32(res[k]);
            store_f32(want[k], batchnorm_epilogue<bf16_t>(v, residual, r,
                                                          relu ? Act::kReLU : Act::kNone));
            ambiguous[k] = residual && std::isnan(v) && std::isnan(r);  // NaN + NaN
          }
          CHECK(same_bits(got, want, ambiguous));
        }
  }
}

TEST_CASE("batchnorm bf16 loops: the backward's gradient sums and dx have the generic bits, "
          "with and without the ReLU mask", "[image-ops]") {
  if (skip_without_loops()) return;
  for (int64_t S : kRuns) {
    const int64_t runs = 2;
    const std::vector<bf16_t> x = values(runs * S, 110 + static_cast<uint32_t>(S), 3.0f);
    const std::vector<bf16_t> dy = values(runs * S, 130 + static_cast<uint32_t>(S), 0.5f);
    for (const Bf16Norm& n : coefficient_sets())
      for (bool relu : {false, true}) {
        INFO("S = " << S << ", gamma " << n.gamma << ", relu " << relu);
        const auto g_at = [&](size_t k) {
          const float d = bf16_to_f32(dy[k]), xv = bf16_to_f32(x[k]);
          return relu ? d * batchnorm_relu_grad<bf16_t>(xv, n.mean, n.invstd, n.gamma, n.beta)
                      : d;
        };
        Bf16Lanes lanes;
        for (int64_t r = 0; r < runs; ++r)
          bf16_run_grad_sums(dy.data() + r * S, x.data() + r * S, relu, S, n, lanes);
        const ChannelSums got = lanes.total();
        const ChannelSums want = generic_sums(runs, S, [&](int64_t, int64_t at) {
          const size_t k = static_cast<size_t>(at);
          const float g = g_at(k);
          return FloatSums{g, g * batchnorm_xhat(bf16_to_f32(x[k]), n.mean, n.invstd)};
        });
        // Both NaN where a special value got in; else the same bits.
        CHECK(std::isnan(got.a) == std::isnan(want.a));
        if (!std::isnan(want.a)) CHECK(same_bits(got.a, want.a));
        CHECK(std::isnan(got.b) == std::isnan(want.b));
        if (!std::isnan(want.b)) CHECK(same_bits(got.b, want.b));

        const GradMeans m{0.03f, -0.2f};
        std::vector<bf16_t> dx(static_cast<size_t>(S)), want_dx(static_cast<size_t>(S));
        std::vector<bool> ambiguous(static_cast<size_t>(S));
        bf16_run_dx(dy.data(), x.data(), relu, S, n, n.gamma * n.invstd, m, dx.data());
        for (int64_t i = 0; i < S; ++i) {
          const size_t k = static_cast<size_t>(i);
          const float g = g_at(k), xv = bf16_to_f32(x[k]);
          store_f32(want_dx[k], batchnorm_dx(g, xv, n.mean, n.invstd, n.gamma, m.dy, m.dy_xhat));
          // (g - mean_dy) - xhat * mean_dy_xhat: NaN - NaN
          ambiguous[k] = std::isnan(g) && std::isnan(batchnorm_xhat(xv, n.mean, n.invstd));
        }
        CHECK(same_bits(dx, want_dx, ambiguous));
      }
  }
}

TEST_CASE("batchnorm bf16 loops: a NaN-free backward's sums have the generic bits too",
          "[image-ops]") {
  if (skip_without_loops()) return;
  // The case above compares NaN-ness where specials got in; here every value is finite so
  // every sum's bits compare, with the ReLU mask cutting about half the terms.
  for (int64_t S : kRuns) {
    const int64_t runs = 3;
    std::vector<bf16_t> x = values(runs * S, 150 + static_cast<uint32_t>(S), 2.0f);
    std::vector<bf16_t> dy = values(runs * S, 170 + static_cast<uint32_t>(S), 0.5f);
    for (auto* v : {&x, &dy})
      for (bf16_t& e : *v)
        if (!std::isfinite(bf16_to_f32(e))) e = f32_to_bf16(-0.75f);
    const Bf16Norm n{0.1f, 1.3f, 0.8f, -0.05f};
    for (bool relu : {false, true}) {
      INFO("S = " << S << ", relu " << relu);
      Bf16Lanes lanes;
      for (int64_t r = 0; r < runs; ++r)
        bf16_run_grad_sums(dy.data() + r * S, x.data() + r * S, relu, S, n, lanes);
      const ChannelSums got = lanes.total();
      const ChannelSums want = generic_sums(runs, S, [&](int64_t, int64_t at) {
        const size_t k = static_cast<size_t>(at);
        const float xv = bf16_to_f32(x[k]);
        const float d = bf16_to_f32(dy[k]);
        const float g =
            relu ? d * batchnorm_relu_grad<bf16_t>(xv, n.mean, n.invstd, n.gamma, n.beta) : d;
        return FloatSums{g, g * batchnorm_xhat(xv, n.mean, n.invstd)};
      });
      CHECK(same_bits(got.a, want.a));
      CHECK(same_bits(got.b, want.b));
    }
  }
}
