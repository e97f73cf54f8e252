// bias_grad's chunked reduction on the GPU: bit for bit the order of
// kernels/common/column_sum.h (rebuilt on the host), for fp32 and bf16, for shapes that
// use one chunk, many chunks, and several column passes over the partial buffer; the
// same bytes eager and replayed from a graph; and, without a bound workspace, the
// one-chunk order.
#include <catch2/catch.hpp>

#include "tests/support/gpu_guard.h"

#if defined(NOEIRA_WITH_CUDA)
#include "kernels/common/column_sum.h"
#include "tests/gpu/gpu_rig.h"
#endif

using namespace noeira;
using namespace noeira::test;

TEST_CASE("cuda: chunked bias_grad is the documented order, bit for bit, fp32 and bf16",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  BoundReductionWorkspace ws(gpu);
  // One chunk (M < 256), a ragged last chunk, the chunk cap (GPT-like M), N over one pass
  // of kColumnSumPassCols columns with a tail, several chunks over three passes (the
  // partial buffer reused pass after pass), and the empty cases: M = 0 (db += 0) and
  // N = 0 (nothing to do).
  const std::pair<int64_t, int64_t> shapes[] = {
      {255, 33},    {256, 1},     {4097, 7},
      {20000, 768}, {65536, 40},  {300, kColumnSumPassCols + 37},
      {0, 40},      {97, 0},      {1100, 2 * kColumnSumPassCols + 45}};
  uint32_t seed = 5000;
  for (const auto& [M, N] : shapes) {
    INFO("M " << M << " N " << N);
    const ColumnSumPlan plan = column_sum_plan(M, kColumnSumMaxChunks);
    const std::vector<float> dy0 = random_floats(M * N, seed++);
    const std::vector<bf16_t> dyb0 = to_bf16(dy0);
    const std::vector<float> db0 = random_floats(N, seed++);
    std::vector<float> want = db0, want_b = db0;
    column_sums_in_gpu_order(dy0.data(), want.data(), M, N, plan);
    column_sums_in_gpu_order(dyb0.data(), want_b.data(), M, N, plan);
    DeviceArray<float> dy(gpu, dy0), db(gpu, db0), db_b(gpu, db0);
    DeviceArray<bf16_t> dyb(gpu, dyb0);
    gpu.ops->bias_grad(dy.view(), db.get(), M, N);
    gpu.ops->bias_grad(dyb.view(), db_b.get(), M, N);
    CHECK(same_bytes(db.download(), want));
    CHECK(same_bytes(db_b.download(), want_b));
  }
#endif
}

TEST_CASE("cuda: bias_grad replayed from a graph gives the eager bytes", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  BoundReductionWorkspace ws(gpu);
  const int64_t M = 12288, N = 96;  // 64 chunks: the partial buffer is used
  const std::vector<float> dy0 = random_floats(M * N, 6000);
  const std::vector<float> db0 = random_floats(N, 6001);
  DeviceArray<float> dy(gpu, dy0), eager(gpu, db0), captured(gpu, db0);
  for (int i = 0; i < 3; ++i) gpu.ops->bias_grad(dy.view(), eager.get(), M, N);
  REQUIRE(gpu.stream->begin_capture().ok());
  gpu.ops->bias_grad(dy.view(), captured.get(), M, N);
  Result<std::unique_ptr<StepGraph>> graph = gpu.stream->end_capture();
  REQUIRE(graph.ok());
  for (int i = 0; i < 3; ++i) (*graph)->replay();
  CHECK(same_bytes(captured.download(), eager.download()));
#endif
}

TEST_CASE("cuda: without a bound workspace bias_grad runs as one chunk", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  const int64_t M = 3000, N = 45;
  const std::vector<float> dy0 = random_floats(M * N, 7000);
  std::vector<float> want(N, 0.0f);
  column_sums_in_gpu_order(dy0.data(), want.data(), M, N, column_sum_plan(M, 1));
  DeviceArray<float> dy(gpu, dy0), db(gpu, N);
  gpu.ops->bias_grad(dy.view(), db.get(), M, N);  // prints the one-chunk note once
  CHECK(same_bytes(db.download(), want));
  // A workspace too small for the partials is refused rather than overrun, and so is a
  // binding during a capture (the graph would keep the old pointer).
  CHECK(gpu.stream->reduction_workspace_bytes() == kColumnSumWorkspaceBytes);
  DeviceArray<float> small(gpu, 16);
  const Status too_small = gpu.stream->bind_reduction_workspace(small.get(), 16 * sizeof(float));
  REQUIRE_FALSE(too_small.ok());
  CHECK_THAT(too_small.error().message, Catch::Contains("reduction_workspace_bytes()"));
  REQUIRE(gpu.stream->begin_capture().ok());
  const Status during = gpu.stream->bind_reduction_workspace(nullptr, 0);
  gpu.stream->fill_zero(small.get(), sizeof(float));  // something to capture
  REQUIRE(gpu.stream->end_capture().ok());
  REQUIRE_FALSE(during.ok());
  CHECK_THAT(during.error().message, Catch::Contains("before begin_capture"));
  DeviceArray<float> again(gpu, N);  // still unbound: the same one-chunk bytes
  gpu.ops->bias_grad(dy.view(), again.get(), M, N);
  CHECK(same_bytes(again.download(), want));
#endif
}
