// The CUDA embedding backward's token sums (kernels/cuda/embedding.cu, order in
// kernels/common/embedding_sum.h) where the chunks matter: one token with thousands of
// rows (many chunks, the last ragged: both passes), runs straddling windows, ids outside
// [0, V) skipped. Bit for bit against the CPU op and the host rendering, fp32 and bf16 dy;
// eager twice and a captured replay give the same bytes. (Small shapes, forward and dwpe:
// tests/gpu/test_cuda_sequence_ops.cpp.)
#include <catch2/catch.hpp>

#include "tests/support/gpu_guard.h"

#if defined(NOEIRA_WITH_CUDA)
#include <algorithm>
#include <random>

#include "kernels/common/embedding_sum.h"
#include "tests/gpu/gpu_rig.h"
#endif

using namespace noeira;
using namespace noeira::test;

TEST_CASE("cuda: embedding backward of a long token and bad ids equals the CPU bit for bit",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(2);
  struct Shape {
    int64_t rows, big, C, V;
  };
  // 5,000 rows of one token (79 chunks); a GPT batch (64 x 256 rows, 65 tokens, the space
  // token's ~2,500 rows); a vocabulary of 1000, one token just over 2K rows; a vocabulary
  // larger than the rows (GPT-2's 50257: 16 sort bits).
  for (const Shape s : {Shape{5003, 5000, 37, 4}, Shape{16384, 2500, 384, 65},
                        Shape{6001, 130, 300, 1000}, Shape{3000, 200, 64, 50257}}) {
    INFO("rows " << s.rows << " big " << s.big << " C " << s.C << " V " << s.V);
    std::vector<int32_t> ids0 = random_labels(s.rows, static_cast<int32_t>(s.V), 30);
    std::fill(ids0.begin(), ids0.begin() + s.big, 1);
    std::shuffle(ids0.begin(), ids0.end(), std::mt19937(31));
    ids0[5] = -1;
    ids0[s.rows / 3] = static_cast<int32_t>(s.V);
    const std::vector<float> dy0 = random_floats(s.rows * s.C, 32);
    const std::vector<bf16_t> dyb0 = to_bf16(dy0);
    const std::vector<float> dwte0 = random_floats(s.V * s.C, 33);
    DeviceArray<int32_t> ids(gpu, ids0);
    DeviceArray<float> dy(gpu, dy0);
    DeviceArray<bf16_t> dyb(gpu, dyb0);
    DeviceWorkspace ws(gpu, gpu.ops->embedding_workspace_bytes(s.rows, s.V, s.C));
    std::vector<double> hws = host_workspace(cpu.embedding_workspace_bytes(s.rows, s.V, s.C));
    for (int bf = 0; bf < 2; ++bf) {
      INFO("bf16 dy " << bf);
      std::vector<float> want = dwte0, rendered = dwte0;
      const ConstView dy_cpu = bf ? ConstView(view_of(dyb0)) : ConstView(view_of(dy0));
      cpu.embedding_backward(ids0.data(), dy_cpu, want.data(), nullptr, s.rows, 1, s.C, s.V,
                             hws.data());
      if (bf)
        embedding_token_sums_in_order(ids0.data(), dyb0.data(), rendered.data(), s.rows, s.C,
                                      s.V);
      else
        embedding_token_sums_in_order(ids0.data(), dy0.data(), rendered.data(), s.rows, s.C,
                                      s.V);
      REQUIRE(same_bytes(want, rendered));
      const ConstView dy_gpu = bf ? ConstView(dyb.view()) : ConstView(dy.view());
      DeviceArray<float> dwte(gpu, dwte0);
      auto run = [&] {
        dwte.upload(dwte0);
        gpu.ops->embedding_backward(ids.get(), dy_gpu, dwte.get(), nullptr, s.rows, 1, s.C,
                                    s.V, ws.get());
        return dwte.download();
      };
      CHECK(same_bytes(run(), want));
      CHECK(same_bytes(run(), want));  // run to run
      REQUIRE(gpu.stream->begin_capture().ok());
      gpu.ops->embedding_backward(ids.get(), dy_gpu, dwte.get(), nullptr, s.rows, 1, s.C, s.V,
                                  ws.get());
      Result<std::unique_ptr<StepGraph>> graph = gpu.stream->end_capture();
      REQUIRE(graph.ok());
      dwte.upload(dwte0);
      (*graph)->replay();
      CHECK(same_bytes(dwte.download(), want));
    }
  }
#endif
}
