// CpuOps::linear_backward_params (kernels/op_list.inc): from 2048 rows, dW accumulates the
// products of 512-row chunks in chunk order and db keeps bias_grad's bits; below that,
// past 4096 columns, or for fp32 x rows wider than 128, one product over every row. fp32
// dz wider than x (N > K) takes each product transposed, x^T dz, summed over the chunks
// and then added to dW transposed. fp32 and bf16, against gemm and bias_grad called as the
// contract says, against double, and 1 against 2 threads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <type_traits>
#include <cstddef>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "tests/support/image_reference.h"

using namespace noeira;
using namespace noeira::test::image_ref;

namespace {

struct Grads {
  Vec dW, db;
};

// Rows [r0, r0 + rows) of a (., cols) matrix stored in v.
template <class V>
ConstView rows_of(const V& v, int64_t r0, int64_t rows, int64_t cols) {
  return ConstView(v.data() + r0 * cols, rows * cols);
}

// The contract's order spelt out with gemm and bias_grad: chunk by chunk when chunked,
// else one product over every row; transposed (fp32, N > K): t(K,N) = the sum of the
// products x_rows^T dz_rows, then dW[n][k] += t[k][n].
template <class V>
Grads contract_order(CpuOps& ops, const V& dz, const V& x, const Grads& start, int64_t M,
                     int64_t N, int64_t K, bool chunked) {
  const bool transposed = std::is_same_v<V, Vec> && N > K;
  Grads g = start;
  Vec t(static_cast<size_t>(K * N));
  const int64_t chunk = chunked ? 512 : M;
  for (int64_t r0 = 0; r0 < M; r0 += chunk) {
    const int64_t rows = std::min(chunk, M - r0);
    const ConstView dz_rows = rows_of(dz, r0, rows, N), x_rows = rows_of(x, r0, rows, K);
    if (transposed)
      ops.gemm(true, false, K, N, rows, 1.0f, x_rows, K, dz_rows, N, r0 == 0 ? 0.0f : 1.0f,
               t.data(), N);
    else
      ops.gemm(true, false, N, K, rows, 1.0f, dz_rows, N, x_rows, K, 1.0f, g.dW.data(), K);
  }
  if (transposed)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k)
        g.dW[static_cast<size_t>(n * K + k)] += t[static_cast<size_t>(k * N + n)];
  ops.bias_grad(cview(dz), g.db.data(), M, N);
  return g;
}

template <class V>
Grads run_op(int threads, const V& dz, const V& x, const Grads& start, int64_t M, int64_t N,
             int64_t K) {
  CpuOps ops(threads);
  Grads g = start;
  ops.linear_backward_params(cview(dz), cview(x), g.dW.data(), g.db.data(), M, N, K);
  return g;
}

// dW0 + dz^T x and db0 + column sums of dz, in double.
Grads reference(const Vec& dz, const Vec& x, const Grads& start, int64_t M, int64_t N,
                int64_t K) {
  std::vector<double> dW(start.dW.begin(), start.dW.end()), db(start.db.begin(), start.db.end());
  for (int64_t i = 0; i < M; ++i)
    for (int64_t n = 0; n < N; ++n) {
      const double d = dz[static_cast<size_t>(i * N + n)];
      db[static_cast<size_t>(n)] += d;
      for (int64_t k = 0; k < K; ++k)
        dW[static_cast<size_t>(n * K + k)] += d * x[static_cast<size_t>(i * K + k)];
    }
  return {Vec(dW.begin(), dW.end()), Vec(db.begin(), db.end())};
}

// The op on 1 thread against the contract's order (bits) and double (dz_f32, x_f32: the
// values dz and x hold), and 2 threads against 1 (bits).
template <class V>
void check_op(const V& dz, const V& x, const Vec& dz_f32, const Vec& x_f32, const Grads& start,
              int64_t M, int64_t N, int64_t K, bool chunked) {
  const Grads one = run_op(1, dz, x, start, M, N, K);
  CpuOps ops(1);
  const Grads want = contract_order(ops, dz, x, start, M, N, K, chunked);
  CHECK(same_bits(one.dW, want.dW));
  CHECK(same_bits(one.db, want.db));
  const Grads ref = reference(dz_f32, x_f32, start, M, N, K);
  CHECK(rel_error(one.dW, ref.dW) < 1e-5);
  CHECK(rel_error(one.db, ref.db) < 1e-5);
  const Grads two = run_op(2, dz, x, start, M, N, K);
  CHECK(same_bits(two.dW, one.dW));
  CHECK(same_bits(two.db, one.db));
}

}  // namespace

TEST_CASE("linear_backward_params over 2048 rows or more: dW by 512-row chunks in order, db "
          "with bias_grad's bits, the same bits on 1 and 2 threads", "[cpu-linear]") {
  // 4 chunks of 512 and one of 52 rows; fp32 chunks up to K = 128 (transposed products
  // at K = 24 < N), bf16 at any K.
  const int64_t M = 2100, N = 40;
  const int64_t K = GENERATE(as<int64_t>{}, 24, 128, 136);
  CAPTURE(K);
  const Vec dz = random_vec(M * N, 301), x = random_vec(M * K, 302);
  const Grads start{random_vec(N * K, 303), random_vec(N, 304)};

  SECTION("fp32") { check_op(dz, x, dz, x, start, M, N, K, K <= 128); }
  SECTION("bf16 dz and x: the fp32 sums of the rounded values") {
    check_op(to_bf16(dz), to_bf16(x), rounded(dz), rounded(x), start, M, N, K, true);
  }
  SECTION("without a bias, dW alone") {
    CpuOps ops(2);
    Vec dW = start.dW;
    ops.linear_backward_params(cview(dz), cview(x), dW.data(), nullptr, M, N, K);
    const Grads want = contract_order(ops, dz, x, start, M, N, K, K <= 128);
    CHECK(same_bits(dW, want.dW));
  }
}

TEST_CASE("linear_backward_params below 2048 rows or past 4096 columns (fp32 and bf16): one "
          "product (fp32 N > K: transposed) + bias_grad's bits", "[cpu-linear]") {
  using Shape3 = std::array<int64_t, 3>;  // M, N, K
  for (const auto& [M, N, K] : {Shape3{2047, 16, 8}, Shape3{2048, 4097, 2}, Shape3{300, 20, 12},
                                Shape3{300, 12, 20}, Shape3{768, 40, 40}}) {
    CAPTURE(M, N, K);
    const Vec dz = random_vec(M * N, 311), x = random_vec(M * K, 312);
    const Grads start{random_vec(N * K, 313), random_vec(N, 314)};
    for (const int threads : {1, 2}) {
      CpuOps ops(threads);
      const Grads got = run_op(threads, dz, x, start, M, N, K);
      const Grads want = contract_order(ops, dz, x, start, M, N, K, false);
      CHECK(same_bits(got.dW, want.dW));
      CHECK(same_bits(got.db, want.db));
      const Bf dzb = to_bf16(dz), xb = to_bf16(x);
      const Grads got_b = run_op(threads, dzb, xb, start, M, N, K);
      const Grads want_b = contract_order(ops, dzb, xb, start, M, N, K, false);
      CHECK(same_bits(got_b.dW, want_b.dW));
      CHECK(same_bits(got_b.db, want_b.db));
    }
  }
}
