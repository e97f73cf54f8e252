// bf16: rounding written once (round-to-nearest-even), and every CPU bf16 op against
// its fp32 counterpart: relative error between 1e-3 and 1e-2 (bf16 keeps 8 bits of
// mantissa), never NaN.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/common/bf16.h"
#include "kernels/cpu/cpu_ops.h"

using namespace noeira;

namespace {

std::vector<float> random_vec(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(g);
  return v;
}

std::vector<bf16_t> to_bf16(const std::vector<float>& v) {
  std::vector<bf16_t> b(v.size());
  for (size_t i = 0; i < v.size(); ++i) b[i] = f32_to_bf16(v[i]);
  return b;
}

template <class T>
std::vector<float> to_f32(const std::vector<T>& v) {
  std::vector<float> f(v.size());
  for (size_t i = 0; i < v.size(); ++i) f[i] = load_f32(v[i]);
  return f;
}

// ||a - ref|| / ||ref||, with a NaN anywhere giving NaN.
double rel_error(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (static_cast<double>(a[i]) - ref[i]) * (static_cast<double>(a[i]) - ref[i]);
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
}

void check_bf16_error(const std::vector<float>& got, const std::vector<float>& ref, const char* what) {
  const double e = rel_error(got, ref);
  INFO(what << ": relative error " << e);
  CHECK_FALSE(std::isnan(e));
  CHECK(e >= 1e-3);
  CHECK(e <= 1e-2);
}

}  // namespace

TEST_CASE("fp32 to bf16 rounds to nearest, ties to even", "[bf16]") {
  CHECK(f32_to_bf16(1.0f) == 0x3f80);
  CHECK(f32_to_bf16(f32_from_bits(0x3f808000u)) == 0x3f80);  // tie, even stays
  CHECK(f32_to_bf16(f32_from_bits(0x3f818000u)) == 0x3f82);  // tie, odd rounds up
  CHECK(f32_to_bf16(f32_from_bits(0x3f808001u)) == 0x3f81);  // above the tie
  CHECK(f32_to_bf16(-2.5f) == 0xc020);
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
  CHECK(std::isinf(bf16_to_f32(f32_to_bf16(INFINITY))));
  CHECK(f32_to_bf16(f32_from_bits(0x7f7fffffu)) == 0x7f80);  // FLT_MAX rounds to inf
  CHECK(bf16_to_f32(0x3f80) == 1.0f);
  CHECK(round_to_bf16(3.14159265f) == 3.140625f);
}

TEST_CASE("bf16 GEMM against the fp32 GEMM, every transpose, beta 0 and 1", "[bf16]") {
  CpuOps ops(2);
  const int64_t M = 70, N = 33, K = 129;  // odd sizes, more than one 64-row slab
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (float beta : {0.0f, 1.0f}) {
        const auto a = random_vec(M * K, 1), b = random_vec(K * N, 2), c0 = random_vec(M * N, 3);
        const int64_t lda = ta ? M : K, ldb = tb ? K : N;
        std::vector<float> ref = c0, got = c0;
        const float alpha = beta == 0.0f ? 1.0f : 0.5f;
        ops.gemm(ta, tb, M, N, K, alpha, a.data(), lda, b.data(), ldb, beta, ref.data(), N);
        const auto ab = to_bf16(a), bb = to_bf16(b);
        ops.gemm_bf16(ta, tb, M, N, K, alpha, ab.data(), lda, bb.data(), ldb, beta, got.data(), N);
        INFO("trans_a " << ta << " trans_b " << tb << " beta " << beta);
        check_bf16_error(got, ref, "gemm_bf16");
        // Exactly an fp32 GEMM of the bf16-rounded inputs, up to summation order.
        std::vector<float> exact = c0;
        const auto ar = to_f32(ab), br = to_f32(bb);
        ops.gemm(ta, tb, M, N, K, alpha, ar.data(), lda, br.data(), ldb, beta, exact.data(), N);
        CHECK(rel_error(got, exact) < 1e-5);
      }
}

TEST_CASE("bf16 GEMM gives the same bits with 1 and 2 threads", "[bf16][determinism]") {
  CpuOps one(1), two(2);
  const int64_t M = 256, N = 512, K = 784;
  const auto a = to_bf16(random_vec(M * K, 4)), b = to_bf16(random_vec(K * N, 5));
  std::vector<float> c1(M * N), c2(M * N);
  one.gemm_bf16(false, true, M, N, K, 1.0f, a.data(), K, b.data(), K, 0.0f, c1.data(), N);
  two.gemm_bf16(false, true, M, N, K, 1.0f, a.data(), K, b.data(), K, 0.0f, c2.data(), N);
  CHECK(c1 == c2);
}

TEST_CASE("bf16 element-wise ops and losses against fp32", "[bf16]") {
  CpuOps ops(1);
  const int64_t M = 32, N = 48, n = M * N;
  const auto acc = random_vec(n, 6, 3.0f), bias = random_vec(N, 7);
  for (Act act : {Act::kReLU, Act::kGELU}) {
    std::vector<float> y(acc), pre(n);
    ops.bias_act(y.data(), pre.data(), bias.data(), M, N, act);
    std::vector<bf16_t> yb(n), preb(n);
    ops.bias_act_bf16(acc.data(), bias.data(), yb.data(), preb.data(), M, N, act);
    check_bf16_error(to_f32(yb), y, "bias_act_bf16");

    const auto dy = random_vec(n, 8);
    std::vector<float> dx(n);
    ops.act_backward(dy.data(), pre.data(), y.data(), dx.data(), n, act);
    std::vector<bf16_t> dxb(n);
    const auto dyb = to_bf16(dy);
    ops.act_backward_bf16(dyb.data(), preb.data(), yb.data(), dxb.data(), n, act);
    check_bf16_error(to_f32(dxb), dx, "act_backward_bf16");
  }
  const auto dy = random_vec(n, 9);
  std::vector<float> db(N, 0.0f), dbb(N, 0.0f);
  ops.bias_grad(dy.data(), db.data(), M, N);
  const auto dyb = to_bf16(dy);
  ops.bias_grad_bf16(dyb.data(), dbb.data(), M, N);
  check_bf16_error(dbb, db, "bias_grad_bf16");

  const int64_t B = 64, C = 10;
  const auto logits = random_vec(B * C, 10, 4.0f);
  std::vector<int32_t> labels(B);
  for (int64_t i = 0; i < B; ++i) labels[i] = static_cast<int32_t>((i * 7) % C);
  StepCounters counters{};
  LossStats s32{}, s16{};
  std::vector<float> d32(B * C);
  std::vector<bf16_t> d16(B * C);
  ops.softmax_xent(logits.data(), labels.data(), B, C, d32.data(), &s32, nullptr, &counters);
  const auto lb = to_bf16(logits);
  ops.softmax_xent_bf16(lb.data(), labels.data(), B, C, d16.data(), &s16, nullptr, &counters);
  check_bf16_error(to_f32(d16), d32, "softmax_xent_bf16 gradient");
  CHECK(std::abs(s16.loss_sum - s32.loss_sum) / s32.loss_sum < 1e-2);
  CHECK(std::isfinite(s16.loss_sum));
}
