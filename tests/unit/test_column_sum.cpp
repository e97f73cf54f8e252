// The GPU's bias_grad order (kernels/common/column_sum.h), checked on the host: the chunk
// plan covers every row once with no empty chunk, and the order's sums equal the CPU's
// row-order sums exactly where no rounding happens and closely elsewhere.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/common/column_sum.h"
#include "kernels/cpu/cpu_ops.h"

using namespace noeira;

TEST_CASE("The column-sum chunk plan covers each row once, with no empty chunk",
          "[column_sum]") {
  for (int64_t max_chunks : {int64_t{1}, int64_t{7}, kColumnSumMaxChunks}) {
    for (int64_t M : {int64_t{0}, int64_t{1}, int64_t{127}, int64_t{128}, int64_t{129},
                      int64_t{1000}, int64_t{8191}, int64_t{65536}, int64_t{100003}}) {
      INFO("M " << M << " max_chunks " << max_chunks);
      const ColumnSumPlan p = column_sum_plan(M, max_chunks);
      CHECK(p.chunks >= 1);
      CHECK(p.chunks <= max_chunks);
      if (M == 0) {
        CHECK(p.chunks == 1);
        CHECK(p.end(0, M) == 0);
        continue;
      }
      CHECK(p.begin(0) == 0);
      for (int64_t c = 0; c < p.chunks; ++c) {
        CHECK(p.end(c, M) > p.begin(c));  // not empty
        if (c + 1 < p.chunks) CHECK(p.end(c, M) == p.begin(c + 1));
      }
      CHECK(p.end(p.chunks - 1, M) == M);
      // Enough rows per chunk to be worth it, unless capped by max_chunks.
      if (p.chunks > 1) CHECK(p.rows_per_chunk >= kColumnSumMinChunkRows);
    }
  }
  // Large M uses every chunk; small M one.
  CHECK(column_sum_plan(65536, kColumnSumMaxChunks).chunks == kColumnSumMaxChunks);
  CHECK(column_sum_plan(256, kColumnSumMaxChunks).chunks == 2);
  CHECK(column_sum_plan(255, kColumnSumMaxChunks).chunks == 1);
  CHECK(column_sum_plan(65536, 1).chunks == 1);
  // The regimes tests/gpu/test_cuda_bias_grad.cpp relies on (its shapes only run on a
  // device, so a shape that stopped meaning what its comment says would go unnoticed).
  for (int64_t M : {int64_t{4097}, int64_t{20000}}) {
    INFO("M " << M);
    const ColumnSumPlan p = column_sum_plan(M, kColumnSumMaxChunks);
    CHECK(p.chunks > 1);
    CHECK(p.end(p.chunks - 1, M) - p.begin(p.chunks - 1) < p.rows_per_chunk);  // ragged
  }
  CHECK(column_sum_plan(20000, kColumnSumMaxChunks).chunks == kColumnSumMaxChunks);
  CHECK(column_sum_plan(1100, kColumnSumMaxChunks).chunks == 8);
  CHECK(column_sum_plan(300, kColumnSumMaxChunks).chunks == 2);
  CHECK(column_sum_plan(1024, kColumnSumMaxChunks).chunks == 8);  // the trainer's batch
  // When it cuts rows at all, every chunk fills all kColumnSumLanes lanes: rows_per_chunk
  // >= 128 and chunks <= 64 leave the last chunk at least 128 - 63 rows.
  for (int64_t M = 2 * kColumnSumMinChunkRows; M < 20000; M += 37) {
    const ColumnSumPlan p = column_sum_plan(M, kColumnSumMaxChunks);
    if (p.end(p.chunks - 1, M) - p.begin(p.chunks - 1) < kColumnSumLanes) FAIL("M " << M);
  }
  CHECK(kColumnSumWorkspaceBytes ==
        static_cast<size_t>(kColumnSumMaxChunks * kColumnSumPassCols) * sizeof(float));
}

TEST_CASE("The GPU's column-sum order equals the CPU's sums where no rounding happens",
          "[column_sum]") {
  // Small integers: every partial sum is exact in fp32, so any order gives the same bits.
  const int64_t M = 5000, N = 37;
  std::mt19937 g(3);
  std::uniform_int_distribution<int> u(-8, 8);
  std::vector<float> dy(static_cast<size_t>(M * N));
  for (float& x : dy) x = static_cast<float>(u(g));
  std::vector<float> db_cpu(N, 1.0f), db_gpu_order(N, 1.0f), db_one_chunk(N, 1.0f);
  CpuOps(1).bias_grad(ConstView{dy.data(), M * N}, db_cpu.data(), M, N);
  column_sums_in_gpu_order(dy.data(), db_gpu_order.data(), M, N,
                           column_sum_plan(M, kColumnSumMaxChunks));
  column_sums_in_gpu_order(dy.data(), db_one_chunk.data(), M, N, column_sum_plan(M, 1));
  CHECK(db_gpu_order == db_cpu);
  CHECK(db_one_chunk == db_cpu);
}

TEST_CASE("The GPU's column-sum order is within rounding of the CPU's, fp32 and bf16",
          "[column_sum]") {
  const int64_t M = 9000, N = 19;
  std::mt19937 g(4);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> dy(static_cast<size_t>(M * N));
  for (float& x : dy) x = u(g);
  std::vector<bf16_t> dyb(dy.size());
  for (size_t i = 0; i < dy.size(); ++i) dyb[i] = f32_to_bf16(dy[i]);
  CpuOps cpu(1);
  const ColumnSumPlan plan = column_sum_plan(M, kColumnSumMaxChunks);
  REQUIRE(plan.chunks > 1);
  std::vector<float> want(N, 0.0f), got(N, 0.0f), want_b(N, 0.0f), got_b(N, 0.0f);
  cpu.bias_grad(ConstView{dy.data(), M * N}, want.data(), M, N);
  column_sums_in_gpu_order(dy.data(), got.data(), M, N, plan);
  cpu.bias_grad(ConstView{dyb.data(), M * N}, want_b.data(), M, N);
  column_sums_in_gpu_order(dyb.data(), got_b.data(), M, N, plan);
  for (int64_t j = 0; j < N; ++j) {
    INFO("column " << j);
    // |error| of a sum of M terms of size <= 1 in fp32: well under M * 2^-24 * M.
    CHECK(std::abs(got[j] - want[j]) < 1e-3);
    CHECK(std::abs(got_b[j] - want_b[j]) < 1e-3);
  }
}

TEST_CASE("The CPU's bias_grad sums each column's rows in order, at any width and thread count",
          "[column_sum][determinism]") {
  // The contract's order: db[j] += (((dy[0][j] + dy[1][j]) + dy[2][j]) + ...) in fp32. The
  // loop walks rows over blocks of columns; the bits must be those of a column-at-a-time loop.
  std::mt19937 g(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (const int64_t N : {1, 7, 19, 256, 300, 600}) {
    const int64_t M = 513;
    std::vector<float> dy(static_cast<size_t>(M * N));
    for (float& x : dy) x = u(g);
    std::vector<bf16_t> dyb(dy.size());
    for (size_t i = 0; i < dy.size(); ++i) dyb[i] = f32_to_bf16(dy[i]);
    std::vector<float> want(N, 0.5f), want_b(N, 0.5f);
    for (int64_t j = 0; j < N; ++j) {
      float s = 0.0f, sb = 0.0f;
      for (int64_t i = 0; i < M; ++i) {
        s += dy[static_cast<size_t>(i * N + j)];
        sb += bf16_to_f32(dyb[static_cast<size_t>(i * N + j)]);
      }
      want[j] += s;
      want_b[j] += sb;
    }
    for (const int threads : {1, 2, 3}) {
      INFO("N " << N << ", " << threads << " threads");
      CpuOps cpu(threads);
      std::vector<float> got(N, 0.5f), got_b(N, 0.5f);
      cpu.bias_grad(ConstView{dy.data(), M * N}, got.data(), M, N);
      cpu.bias_grad(ConstView{dyb.data(), M * N}, got_b.data(), M, N);
      CHECK(got == want);
      CHECK(got_b == want_b);
    }
  }
}
