// bf16: rounding written once (round-to-nearest-even), and every CPU bf16 op against
// its fp32 counterpart: relative error between 1e-3 and 1e-2 (bf16 keeps 8 bits of
// mantissa), never NaN.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/common/bf16.h"
#include "kernels/common/math.h"
#include "kernels/cpu/cpu_ops.h"
#include "tests/support/views.h"

using namespace noeira;
using noeira::test::view_of;

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

TEST_CASE("stores_positive is stored_as(v) > 0, for fp32 and bf16 (BatchNorm's ReLU mask)",
          "[bf16]") {
  // Every pattern near the bf16 rounding's zero boundary (bits 0x8000) of either sign, and
  // every 251st of the rest (NaNs, infinities, subnormals, normals).
  const auto agree = [](uint32_t bits) {
    const float v = f32_from_bits(bits);
    return stores_positive<bf16_t>(v) == (stored_as<bf16_t>(v) > 0.0f) &&
           stores_positive<float>(v) == (stored_as<float>(v) > 0.0f);
  };
  uint64_t wrong = 0;
  for (uint32_t b = 0; b < 0x20000u; ++b) wrong += !agree(b) + !agree(b | 0x80000000u);
  for (uint64_t b = 0; b <= 0xffffffffu; b += 251) wrong += !agree(static_cast<uint32_t>(b));
  CHECK(wrong == 0);
  CHECK_FALSE(stores_positive<bf16_t>(0x1p-134f));  // the tie rounds to zero (even)
  CHECK(stores_positive<bf16_t>(std::nextafter(0x1p-134f, 1.0f)));
  CHECK(stores_positive<float>(0x1p-149f));
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
        ops.gemm(ta, tb, M, N, K, alpha, view_of(a), lda, view_of(b), ldb, beta, ref.data(), N);
        const auto ab = to_bf16(a), bb = to_bf16(b);
        ops.gemm(ta, tb, M, N, K, alpha, view_of(ab), lda, view_of(bb), ldb, beta, got.data(), N);
        INFO("trans_a " << ta << " trans_b " << tb << " beta " << beta);
        check_bf16_error(got, ref, "bf16 gemm");
        // Exactly an fp32 GEMM of the bf16-rounded inputs, up to summation order.
        std::vector<float> exact = c0;
        const auto ar = to_f32(ab), br = to_f32(bb);
        ops.gemm(ta, tb, M, N, K, alpha, view_of(ar), lda, view_of(br), ldb, beta, exact.data(), N);
        CHECK(rel_error(got, exact) < 1e-5);
      }
}

TEST_CASE("CPU linear_backward_data is the gemm into dx, or into acc and one rounding",
          "[bf16]") {
  CpuOps ops(2);
  const int64_t M = 70, N = 33, K = 129;  // dx (M, K) = dz (M, N) W (N, K)
  const auto dz = random_vec(M * N, 11), W = random_vec(N * K, 12);
  // fp32: exactly gemm's bits.
  std::vector<float> want(M * K), dx(M * K, 7.0f);
  ops.gemm(false, false, M, K, N, 1.0f, view_of(dz), N, view_of(W), K, 0.0f, want.data(), K);
  ops.linear_backward_data(view_of(dz), view_of(W), view_of(dx), nullptr, M, N, K, {});
  CHECK(dx == want);
  // bf16 inputs into a bf16 dx: the fp32 product rounded once (what cuBLASLt stores on
  // the GPU), through the caller's scratch.
  const auto dzb = to_bf16(dz), Wb = to_bf16(W);
  std::vector<float> product(M * K), acc(M * K);
  ops.gemm(false, false, M, K, N, 1.0f, view_of(dzb), N, view_of(Wb), K, 0.0f, product.data(),
           K);
  std::vector<bf16_t> dxb(M * K, 0);
  ops.linear_backward_data(view_of(dzb), view_of(Wb), view_of(dxb), acc.data(), M, N, K, {});
  CHECK(dxb == to_bf16(product));
  // bf16 inputs into an fp32 dx (an fp32 input cast at the boundary): no rounding.
  std::vector<float> dxf(M * K);
  ops.linear_backward_data(view_of(dzb), view_of(Wb), view_of(dxf), nullptr, M, N, K, {});
  CHECK(dxf == product);
}

TEST_CASE("bf16 GEMM gives the same bits with 1 and 2 threads", "[bf16][determinism]") {
  CpuOps one(1), two(2);
  const int64_t M = 256, N = 512, K = 784;
  const auto a = to_bf16(random_vec(M * K, 4)), b = to_bf16(random_vec(K * N, 5));
  std::vector<float> c1(M * N), c2(M * N);
  one.gemm(false, true, M, N, K, 1.0f, view_of(a), K, view_of(b), K, 0.0f, c1.data(), N);
  two.gemm(false, true, M, N, K, 1.0f, view_of(a), K, view_of(b), K, 0.0f, c2.data(), N);
  CHECK(c1 == c2);
}

TEST_CASE("bf16 ReLU forward and backward give store_f32's bits for every bf16 pattern",
          "[bf16]") {
  // The CPU loops skip the rounding for ReLU (its results are exact); the bits must be
  // those of the generic load -> fp32 math -> store_f32 path, NaNs and signed zeros included.
  CpuOps ops(1);
  std::vector<bf16_t> all(1 << 16);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<bf16_t>(i);
  const auto reference = [](float v) {
    bf16_t r;
    store_f32(r, v);
    return r;
  };
  std::vector<bf16_t> y(all.size());
  ops.act_forward(view_of(all), view_of(y), Act::kReLU);
  size_t forward_wrong = 0;
  for (size_t i = 0; i < all.size(); ++i)
    forward_wrong += y[i] != reference(act_forward(Act::kReLU, bf16_to_f32(all[i])));
  CHECK(forward_wrong == 0);
  // store_exact itself, on every value a bf16 holds (NaNs: signalling ones quieted).
  size_t exact_wrong = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    bf16_t e;
    store_exact(e, bf16_to_f32(all[i]));
    exact_wrong += e != reference(bf16_to_f32(all[i]));
  }
  CHECK(exact_wrong == 0);

  // post only matters through post > 0: zeros, tiny, ordinary, infinite and NaN values.
  for (const bf16_t post_bits : {0x0000, 0x8000, 0x0001, 0x8001, 0x3f80, 0xbf80, 0x7f80, 0xff80,
                                 0x7fc0, 0xffc0, 0x7f81}) {
    INFO("post bits " << post_bits);
    const std::vector<bf16_t> post(all.size(), post_bits);
    std::vector<bf16_t> dx(all.size());
    ops.act_backward(view_of(all), ConstView{}, view_of(post), view_of(dx), Act::kReLU);
    const float g = act_grad(Act::kReLU, 0.0f, bf16_to_f32(post_bits));
    size_t backward_wrong = 0;
    for (size_t i = 0; i < all.size(); ++i)
      backward_wrong += dx[i] != reference(bf16_to_f32(all[i]) * g);
    CHECK(backward_wrong == 0);
  }
}

TEST_CASE("bf16 element-wise ops and losses against fp32", "[bf16]") {
  CpuOps ops(1);
  const int64_t M = 32, N = 48, n = M * N;
  const auto acc = random_vec(n, 6, 3.0f), bias = random_vec(N, 7);
  for (Act act : {Act::kReLU, Act::kGELU}) {
    std::vector<float> y(acc), dact(n);
    ops.bias_act(y.data(), bias.data(), view_of(y), view_of(dact), M, N, act);
    std::vector<bf16_t> yb(n);
    std::vector<float> dactb(n);
    ops.bias_act(acc.data(), bias.data(), view_of(yb), view_of(dactb), M, N, act);
    check_bf16_error(to_f32(yb), y, "bf16 bias_act");

    const auto dy = random_vec(n, 8);
    std::vector<float> dx(n);
    ops.act_backward_saved(view_of(dy), view_of(dact), view_of(dx));
    std::vector<bf16_t> dxb(n);
    const auto dyb = to_bf16(dy);
    ops.act_backward_saved(view_of(dyb), view_of(dactb), view_of(dxb));
    check_bf16_error(to_f32(dxb), dx, "bf16 act_backward_saved");
  }
  const auto dy = random_vec(n, 9);
  std::vector<float> db(N, 0.0f), dbb(N, 0.0f);
  ops.bias_grad(view_of(dy), db.data(), M, N);
  const auto dyb = to_bf16(dy);
  ops.bias_grad(view_of(dyb), dbb.data(), M, N);
  check_bf16_error(dbb, db, "bf16 bias_grad");

  const int64_t B = 64, C = 10;
  const auto logits = random_vec(B * C, 10, 4.0f);
  std::vector<int32_t> labels(B);
  for (int64_t i = 0; i < B; ++i) labels[i] = static_cast<int32_t>((i * 7) % C);
  StepCounters counters{};
  LossStats s32{}, s16{};
  std::vector<float> d32(B * C);
  std::vector<bf16_t> d16(B * C);
  ops.softmax_xent(view_of(logits), labels.data(), B, C, 0.0f, view_of(d32), &s32, nullptr, &counters);
  const auto lb = to_bf16(logits);
  ops.softmax_xent(view_of(lb), labels.data(), B, C, 0.0f, view_of(d16), &s16, nullptr, &counters);
  check_bf16_error(to_f32(d16), d32, "bf16 softmax_xent gradient");
  CHECK(std::abs(s16.loss_sum - s32.loss_sum) / s32.loss_sum < 1e-2);
  CHECK(std::isfinite(s16.loss_sum));
}
