// The CUDA element loops' two index paths (kernels/cuda/index.cuh: 32-bit indices with
// FastDivmod below 2^31 elements, 64-bit `/` from there) at their boundary, through
// bias_act with M = 1 and N = n, so output i reads bias[i] (i % N = i): n = 2^31 - 1, the
// largest 32-bit loop, and n = 2^31 + 8, the smallest 64-bit one. Every output is checked:
// the bias holds small integers (exact in bf16), so y must equal it bit for bit. About
// 20 GiB of device memory per case (acc fp32, bias fp32, y bf16); SKIPs with less.
#include <catch2/catch.hpp>

#include "tests/support/gpu_guard.h"

#if defined(NOEIRA_WITH_CUDA)
#include <cuda_runtime.h>

#include "tests/gpu/gpu_rig.h"
#endif

using namespace noeira;
using namespace noeira::test;

TEST_CASE("cuda: bias_act at the 32/64-bit index boundary writes every element", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  for (const int64_t n : {int64_t{INT32_MAX}, (int64_t{1} << 31) + 8}) {
    INFO("n = " << n);
    const size_t need = static_cast<size_t>(n) * (4 + 4 + 2) + (size_t{1} << 30);
    size_t free_bytes = 0, total = 0;
    REQUIRE(cudaMemGetInfo(&free_bytes, &total) == cudaSuccess);
    if (free_bytes < need) {
      std::printf("SKIP [gpu] %s: n = %lld needs %zu GiB of device memory, %zu free\n",
                  current_test_name().c_str(), static_cast<long long>(n), need >> 30,
                  free_bytes >> 30);
      continue;
    }
    std::vector<float> bias0(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      bias0[static_cast<size_t>(i)] = static_cast<float>(i % 251 - 125);
    DeviceArray<float> acc(gpu, static_cast<size_t>(n));  // zero-filled
    DeviceArray<float> bias(gpu, bias0);
    DeviceArray<bf16_t> y(gpu, static_cast<size_t>(n));
    gpu.ops->bias_act(acc.get(), bias.get(), y.view(), View{}, 1, n, Act::kNone);
    const std::vector<bf16_t> got = y.download();
    int64_t wrong = 0, first = -1;
    for (int64_t i = 0; i < n; ++i)
      if (got[static_cast<size_t>(i)] != f32_to_bf16(bias0[static_cast<size_t>(i)])) {
        if (first < 0) first = i;
        ++wrong;
      }
    INFO("first wrong element " << first);
    CHECK(wrong == 0);
  }
#endif
}
