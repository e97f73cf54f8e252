// CpuOps::linear_backward_params (kernels/op_list.inc): from 2048 rows, the rows in
// 512-row chunks in chunk order, db with bias_grad's bits; below that, past 4096 columns, or
// for fp32 x rows wider than 128, one product over every row. fp32 dz wider than x (N > K
// >= 128) takes each product transposed, x^T dz, summed over the chunks in the workspace,
// then added to dW transposed; otherwise each product joins dW itself. fp32 and bf16,
// against gemm and bias_grad called as the contract says, against double, and 1 against 2
// threads; the workspace's old contents are never read.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <type_traits>
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
// else one product over every row; transposed (fp32, N > K >= 128): t(K,N) = the sum of
// the products x_rows^T dz_rows, then dW[n][k] += t[k][n].
template <class V>
Grads contract_order(CpuOps& ops, const V& dz, const V& x, const Grads& start, int64_t M,
                     int64_t N, int64_t K, bool chunked) {
  const bool transposed = std::is_same_v<V, Vec> && N > K && K >= 128;
  Grads g = start;
  Vec t(transposed ? static_cast<size_t>(K * N) : 0);
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

// The op's workspace, its bytes all ones (a NaN in every float): never read before written.
std::vector<std::byte> workspace(const CpuOps& ops, int64_t N, int64_t K, DType dt) {
  return std::vector<std::byte>(ops.linear_params_workspace_bytes(N, K, dt), std::byte{0xff});
}

template <class V>
Grads run_op(int threads, const V& dz, const V& x, const Grads& start, int64_t M, int64_t N,
             int64_t K, bool bias = true, bool overwrite_dw = false) {
  CpuOps ops(threads);
  Grads g = start;
  std::vector<std::byte> ws = workspace(ops, N, K, cview(dz).dtype);
  ops.linear_backward_params(cview(dz), cview(x), g.dW.data(), bias ? g.db.data() : nullptr, M,
                             N, K, ws.data(), overwrite_dw);
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

TEST_CASE("linear_backward_params over 2048 rows or more: 512-row chunks in order, db "
          "with bias_grad's bits, the same bits on 1 and 2 threads", "[cpu-linear]") {
  // 4 chunks of 512 and one of 52 rows; fp32 chunks up to K = 128, bf16 at any K; N = 200
  // at K = 128: fp32 products transposed (two 64-row slabs of dW^T, 200 = 12 x 16 + 8).
  using Shape2 = std::array<int64_t, 2>;  // N, K
  const auto [N, K] = GENERATE(Shape2{40, 24}, Shape2{40, 128}, Shape2{40, 136}, Shape2{200, 128});
  const int64_t M = 2100;
  CAPTURE(N, K);
  const Vec dz = random_vec(M * N, 301), x = random_vec(M * K, 302);
  const Grads start{random_vec(N * K, 303), random_vec(N, 304)};

  SECTION("fp32") { check_op(dz, x, dz, x, start, M, N, K, K <= 128); }
  SECTION("bf16 dz and x: the fp32 sums of the rounded values") {
    check_op(to_bf16(dz), to_bf16(x), rounded(dz), rounded(x), start, M, N, K, true);
  }
  SECTION("without a bias, dW alone") {
    const Grads got = run_op(2, dz, x, start, M, N, K, false);
    CpuOps ops(1);
    const Grads want = contract_order(ops, dz, x, start, M, N, K, K <= 128);
    CHECK(same_bits(got.dW, want.dW));
    CHECK(same_bits(got.db, start.db));
  }
}

TEST_CASE("linear_backward_params below 2048 rows or past 4096 columns (fp32 and bf16): one "
          "product (fp32 N > K >= 128: transposed) + bias_grad's bits", "[cpu-linear]") {
  using Shape3 = std::array<int64_t, 3>;  // M, N, K
  for (const auto& [M, N, K] : {Shape3{2047, 16, 8}, Shape3{2048, 4097, 2}, Shape3{300, 20, 12},
                                Shape3{300, 12, 20}, Shape3{768, 40, 40}, Shape3{300, 390, 130},
                                Shape3{200, 160, 48}}) {
    CAPTURE(M, N, K);
    const Vec dz = random_vec(M * N, 311), x = random_vec(M * K, 312);
    const Grads start{random_vec(N * K, 313), random_vec(N, 314)};
    const Grads ref = reference(dz, x, start, M, N, K);
    for (const int threads : {1, 2}) {
      CpuOps ops(threads);
      const Grads got = run_op(threads, dz, x, start, M, N, K);
      const Grads want = contract_order(ops, dz, x, start, M, N, K, false);
      CHECK(same_bits(got.dW, want.dW));
      CHECK(same_bits(got.db, want.db));
      CHECK(rel_error(got.dW, ref.dW) < 1e-5);
      const Grads no_bias = run_op(threads, dz, x, start, M, N, K, false);
      CHECK(same_bits(no_bias.dW, want.dW));
      CHECK(same_bits(no_bias.db, start.db));
      const Bf dzb = to_bf16(dz), xb = to_bf16(x);
      const Grads got_b = run_op(threads, dzb, xb, start, M, N, K);
      const Grads want_b = contract_order(ops, dzb, xb, start, M, N, K, false);
      CHECK(same_bits(got_b.dW, want_b.dW));
      CHECK(same_bits(got_b.db, want_b.db));
    }
  }
}

TEST_CASE("linear_backward_params: the workspace holds N x K floats for fp32 N > K >= 128, "
          "none otherwise; one workspace serves shapes in any order; no rows add nothing",
          "[cpu-linear]") {
  CpuOps ops(2);
  CHECK(ops.linear_params_workspace_bytes(384, 128, DType::kF32) == 384 * 128 * sizeof(float));
  CHECK(ops.linear_params_workspace_bytes(128, 128, DType::kF32) == 0);  // N = K
  CHECK(ops.linear_params_workspace_bytes(128, 48, DType::kF32) == 0);   // K < 128
  CHECK(ops.linear_params_workspace_bytes(384, 128, DType::kBF16) == 0);

  // The larger shape's workspace, used by a smaller shape first, then by the larger.
  std::vector<std::byte> ws = workspace(ops, 400, 160, DType::kF32);
  using Shape3 = std::array<int64_t, 3>;  // M, N, K
  for (const auto& [M, N, K] : {Shape3{96, 200, 130}, Shape3{96, 400, 160}}) {
    CAPTURE(N, K);
    const Vec dz = random_vec(M * N, 321), x = random_vec(M * K, 322);
    const Grads start{random_vec(N * K, 323), random_vec(N, 324)};
    Grads got = start;
    ops.linear_backward_params(cview(dz), cview(x), got.dW.data(), got.db.data(), M, N, K,
                               ws.data(), false);
    CHECK(same_bits(got.dW, run_op(1, dz, x, start, M, N, K).dW));
  }
  const Grads start{random_vec(200 * 130, 331), random_vec(200, 332)};
  Grads none = start;
  ops.linear_backward_params(ConstView{}, ConstView{}, none.dW.data(), none.db.data(), 0, 200,
                             130, ws.data(), false);
  CHECK(same_bits(none.dW, start.dW));
  CHECK(same_bits(none.db, start.db));
}

TEST_CASE("linear_backward_params with overwrite_dw: dW is the product whatever it held, with "
          "the bits of adding it to zeros; db still accumulates", "[cpu-linear]") {
  using Shape3 = std::array<int64_t, 3>;  // M, N, K
  // fp32: one product (N <= K), chunked rows, transposed (N > K >= 128: the third, and the
  // fourth over 2600 rows); bf16: one product (the first and third), chunked rows (the others).
  for (const auto& [M, N, K] : {Shape3{96, 130, 200}, Shape3{2600, 64, 96}, Shape3{96, 400, 160},
                                Shape3{2600, 200, 130}}) {
    CAPTURE(M, N, K);
    const Vec dz = random_vec(M * N, 341), x = random_vec(M * K, 342);
    const Grads start{random_vec(N * K, 343), random_vec(N, 344)};
    const Grads zeros{Vec(static_cast<size_t>(N * K), 0.0f), start.db};
    const Bf dz16 = to_bf16(dz), x16 = to_bf16(x);
    for (int threads : {1, 2}) {
      const Grads over = run_op(threads, dz, x, start, M, N, K, true, true);
      const Grads added = run_op(threads, dz, x, zeros, M, N, K, true, false);
      CHECK(same_bits(over.dW, added.dW));
      CHECK(same_bits(over.db, added.db));  // start.db + sums, both ways
      const Grads over16 = run_op(threads, dz16, x16, start, M, N, K, true, true);
      const Grads added16 = run_op(threads, dz16, x16, zeros, M, N, K, true, false);
      CHECK(same_bits(over16.dW, added16.dW));
      CHECK(same_bits(over16.db, added16.db));
    }
  }
  // No rows: dW becomes zeros, db keeps what it held.
  CpuOps ops(1);
  std::vector<std::byte> ws = workspace(ops, 200, 130, DType::kF32);
  Grads none{random_vec(200 * 130, 351), random_vec(200, 352)};
  const Vec db0 = none.db;
  ops.linear_backward_params(ConstView{}, ConstView{}, none.dW.data(), none.db.data(), 0, 200,
                             130, ws.data(), true);
  CHECK(same_bits(none.dW, Vec(200 * 130, 0.0f)));
  CHECK(same_bits(none.db, db0));
}
