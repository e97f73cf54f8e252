// A Linear layer's GELU saves its derivative in the forward (bias_act's and linear_forward's
// dact, fp32), and its backward only multiplies (act_backward_saved, or linear_backward_data
// with the dact of the layer before: a chained Linear). Spec: the same bits as keeping the
// pre-activation in y's dtype and calling act_backward, fp32 and bf16, GELU and ReLU, 1 and
// 2 threads, and every GEMM slab of a chained layer's dx multiplied once.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <array>
#include <iterator>
#include <limits>
#include <vector>

#include "kernels/common/math.h"
#include "kernels/composed_ops.h"
#include "kernels/cpu/cpu_ops.h"
#include "tests/support/image_reference.h"

using namespace noeira;
using namespace noeira::test::image_ref;

namespace {

uint32_t bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// Pre-activations over GELU's whole range: its clamp (|2u| > 80 from |x| ~ 8.6), the
// cancellation side (x < 0), tiny, huge and zero values, plus uniform draws.
Vec pre_activations(int64_t n, uint32_t seed) {
  Vec v = random_vec(n, seed, -12.0f, 12.0f);
  const float edges[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-3f, -1e-3f, 8.6f, -8.6f, 9.0f,
                         -9.0f, 40.0f, -40.0f, 1e30f, -1e30f, 3.0e38f, -3.0e38f};
  for (size_t i = 0; i < std::size(edges) && i < v.size(); ++i) v[i * 7 % v.size()] = edges[i];
  return v;
}

template <class T>
std::vector<T> stored(const Vec& v) {
  if constexpr (std::is_same_v<T, float>) return v;
  else return to_bf16(v);
}

}  // namespace

TEST_CASE("act_forward_with_grad: act_forward's bits, and act_grad's at the stored "
          "pre-activation",
          "[math]") {
  const Vec z = pre_activations(20000, 3);
  for (Act act : {Act::kNone, Act::kReLU, Act::kGELU}) {
    size_t wrong_y = 0, wrong_f32 = 0, wrong_bf16 = 0;
    for (float v : z) {
      float g = 0.0f;
      wrong_y += bits(act_forward_with_grad<float>(act, v, &g)) != bits(act_forward(act, v));
      const float post = act_forward(act, v);
      wrong_f32 += bits(g) != bits(act_grad(act, v, post));
      float gb = 0.0f;
      act_forward_with_grad<bf16_t>(act, v, &gb);
      const float pre_b = stored_as<bf16_t>(v);  // the bf16 pre-activation act_backward reads
      wrong_bf16 += bits(gb) != bits(act_grad(act, pre_b, stored_as<bf16_t>(post)));
    }
    INFO("act " << int(act));
    CHECK(wrong_y == 0);
    CHECK(wrong_f32 == 0);
    CHECK(wrong_bf16 == 0);
  }
}

TEMPLATE_TEST_CASE("bias_act's dact, then act_backward_saved: act_backward's bits from the "
                   "kept pre-activation, 1 and 2 threads",
                   "[cpu][bf16]", float, bf16_t) {
  using T = TestType;
  const int64_t M = 37, N = 300, n = M * N;  // 300: a column count not a multiple of 16
  const Vec acc = pre_activations(n, 5), bias = random_vec(N, 6);
  const std::vector<T> dy = stored<T>(random_vec(n, 7));
  for (Act act : {Act::kReLU, Act::kGELU}) {
    // The old path: y by bias_act, the pre-activation as y's dtype stores it, act_backward.
    CpuOps one(1);
    std::vector<T> y_ref(n), pre(n), dx_ref(n);
    one.bias_act(acc.data(), bias.data(), view(y_ref), View{}, M, N, act);
    for (int64_t i = 0; i < n; ++i) store_f32(pre[i], acc[i] + bias[i % N]);
    one.act_backward(cview(dy), cview(pre), cview(y_ref), view(dx_ref), act);
    for (int threads : {1, 2}) {
      INFO("act " << int(act) << ", threads " << threads);
      CpuOps ops(threads);
      std::vector<T> y(n), dx(n);
      Vec dact(n, -1.0f);
      ops.bias_act(acc.data(), bias.data(), view(y), view(dact), M, N, act);
      CHECK(same_bits(y, y_ref));
      ops.act_backward_saved(cview(dy), cview(dact), view(dx));
      CHECK(same_bits(dx, dx_ref));
    }
  }
}

TEMPLATE_TEST_CASE("linear_forward with dact: y and dact with bias_act's bits after the "
                   "product",
                   "[cpu][bf16]", float, bf16_t) {
  using T = TestType;
  using Dims = std::array<int64_t, 3>;
  for (const auto [M, N, K] : {Dims{768, 512, 128}, Dims{300, 96, 40}, Dims{5, 33, 7}}) {
    const std::vector<T> x = stored<T>(random_vec(M * K, 11));
    const std::vector<T> W = stored<T>(random_vec(N * K, 12));
    const Vec b = random_vec(N, 13);
    for (int threads : {1, 2}) {
      INFO("M " << M << " N " << N << " K " << K << ", threads " << threads);
      CpuOps ops(threads);
      Vec acc(M * N);
      std::vector<T> y(M * N), y_ref(M * N);
      Vec dact(M * N), dact_ref(M * N);
      ops.linear_forward(cview(x), cview(W), b.data(), view(y), view(dact), acc.data(), M, N, K,
                         Act::kGELU);
      composed_linear_forward(ops, cview(x), cview(W), b.data(), view(y_ref), view(dact_ref),
                              acc.data(), M, N, K, Act::kGELU);
      CHECK(same_bits(y, y_ref));
      CHECK(same_bits(dact, dact_ref));
    }
  }
}

TEMPLATE_TEST_CASE("linear_backward_data with dact: linear_backward_data then "
                   "act_backward_saved's bits, 1 and 2 threads",
                   "[cpu][bf16]", float, bf16_t) {
  using T = TestType;
  // gpt-tiny's c_proj (row slabs of 192), a row count off the slabs, and fewer rows than a
  // slab (fp32: oneDNN's column slabs, then the multiply over row slabs).
  using Dims = std::array<int64_t, 3>;
  for (const auto [M, N, K] : {Dims{768, 128, 512}, Dims{300, 48, 200}, Dims{96, 64, 160}}) {
    const std::vector<T> dz = stored<T>(random_vec(M * N, 21));
    const std::vector<T> W = stored<T>(random_vec(N * K, 22));
    const Vec dact = random_vec(M * K, 23, -0.2f, 1.2f);  // GELU's derivative's range
    CpuOps one(1);
    Vec acc(M * K);
    std::vector<T> plain(M * K), dx_ref(M * K);
    one.linear_backward_data(cview(dz), cview(W), view(plain), acc.data(), M, N, K, ConstView{});
    one.act_backward_saved(cview(plain), cview(dact), view(dx_ref));
    for (int threads : {1, 2}) {
      INFO("M " << M << " N " << N << " K " << K << ", threads " << threads);
      CpuOps ops(threads);
      std::vector<T> dx(M * K);
      ops.linear_backward_data(cview(dz), cview(W), view(dx), acc.data(), M, N, K, cview(dact));
      CHECK(same_bits(dx, dx_ref));
    }
  }
}
