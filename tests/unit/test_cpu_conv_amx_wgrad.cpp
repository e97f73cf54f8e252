// The bf16 3x3 stride-1 weight gradient on AMX tiles (kernels/cpu/bf16_conv3x3_wgrad_amx.h):
// the sums of the exact bf16 products against naive double loops, the same bits for 1 and
// 2 threads, and nothing read from its area that it did not write. On a CPU without AMX
// (or a build without x86-64 Linux) the cases say SKIP.
#include <cstring>
#include <vector>

#include "kernels/cpu/bf16_conv3x3_wgrad.h"
#include "kernels/cpu/bf16_conv3x3_wgrad_amx.h"
#include "tests/support/image_reference.h"
#include "tests/support/scoped_env.h"

using namespace noeira;
using namespace noeira::test::image_ref;

namespace {

// Shapes that walk every path of the kernel's copies and loops.
std::vector<ConvShape> amx_shapes() {
  return {conv_shape(9, 16, 8, 8, 16, 3, 1, 1, false),     // ResNet-20's 8x8 rows; slabs 8 + 1
          conv_shape(3, 16, 15, 20, 32, 3, 1, 1, false),   // H odd, two output blocks
          conv_shape(5, 32, 16, 16, 16, 3, 1, 1, false),   // two input blocks
          conv_shape(9, 16, 32, 32, 16, 3, 1, 1, false),   // chunks of 7 + 1 images in a slab
          conv_shape(4, 48, 2, 2, 16, 3, 1, 1, false),     // 2x2 images: most values padding
          conv_shape(2, 16, 5, 40, 16, 3, 1, 1, false),    // rows of more than 32 values
          conv_shape(3, 16, 6, 6, 32, 3, 1, 1, false)};    // 18 pairs per image: a tail of 2
}

bool skip_without_amx() {
  if (amx_wgrad_available()) return false;
  WARN("SKIP: no AMX-TILE/AMX-BF16 here (or no x86-64 Linux build); the AMX weight-gradient "
       "kernel did not run");
  return true;
}

}  // namespace

TEST_CASE("bf16 weight gradient on AMX tiles: exact products summed in fp32, the same bits "
          "for 1 and 2 threads", "[image-ops]") {
  if (skip_without_amx()) return;
  const test::ScopedEnv unset("NOEIRA_BF16_WGRAD", nullptr);  // the default scope
  uint32_t seed = 700;
  CpuOps one(1), two(2);
  for (const ConvShape& s : amx_shapes()) {
    CONV_INFO(s);
    REQUIRE(amx_wgrad_takes(s));
    // Only where oneDNN runs AMX does conv2d take the kernel; elsewhere the CpuOps checks
    // below ran the AVX512-BF16 kernel or oneDNN's, and the direct check still runs.
    const ConvCase c(s, seed += 10);
    const ConvCase::Out a = c.run<bf16_t>(one), b = c.run<bf16_t>(two);
    CHECK(same_bits(a.dw, b.dw));
    const ConvRef ref = c.reference(rounded(c.x), rounded(c.w), rounded(c.dy));
    CHECK(rel_error(b.dw, ref.dw) < 1e-5);
  }
}

TEST_CASE("bf16 weight gradient on AMX tiles: the slab kernel overwrites dw with the sums, "
          "whatever its area held", "[image-ops]") {
  if (skip_without_amx()) return;
  uint32_t seed = 800;
  for (const ConvShape& s : amx_shapes()) {
    CONV_INFO(s);
    const ConvCase c(s, seed += 10);
    const Bf x = to_bf16(c.x), dy = to_bf16(c.dy);
    const size_t bytes = amx_wgrad_area_bytes(s, s.batch);
    // 64-byte aligned areas: one of zeros, one of 0xff bytes (bf16 NaNs).
    std::vector<std::byte> zeros(bytes + 64, std::byte{0}), nans(bytes + 64, std::byte{0xff});
    const auto aligned = [](std::vector<std::byte>& v) {
      const auto p = reinterpret_cast<uintptr_t>(v.data());
      return v.data() + ((64 - p % 64) % 64);
    };
    Vec dw_a(c.dw0.size(), 7.0f), dw_b(c.dw0.size(), -3.0f);
    amx_wgrad_slab(s, s.batch, x.data(), dy.data(), dw_a.data(), aligned(zeros));
    amx_wgrad_slab(s, s.batch, x.data(), dy.data(), dw_b.data(), aligned(nans));
    CHECK(same_bits(dw_a, dw_b));
    // dw = the reference's sums without its starting dw0.
    const ConvRef ref = c.reference(rounded(c.x), rounded(c.w), rounded(c.dy));
    std::vector<double> sums(ref.dw.size());
    for (size_t i = 0; i < sums.size(); ++i) sums[i] = ref.dw[i] - c.dw0[i];
    CHECK(rel_error(dw_a, sums) < 1e-5);
  }
}

TEST_CASE("bf16 weight gradient: a planned shape keeps its kernel and area when "
          "NOEIRA_BF16_WGRAD changes before it runs", "[image-ops]") {
  if (skip_without_amx()) return;
  const ConvShape s = conv_shape(9, 16, 32, 32, 16, 3, 1, 1, false);
  const ConvCase c(s, 900);
  const Bf x = to_bf16(c.x), dy = to_bf16(c.dy);
  // Planned for the AVX512-BF16 kernel (the smaller area), run with the AMX default in the
  // environment: the plan's kernel runs, with the bits of a run planned and run under "1".
  const auto run = [&](const char* at_plan, const char* at_run) {
    CpuOps ops(1);
    std::vector<std::byte> ws;
    {
      const test::ScopedEnv e("NOEIRA_BF16_WGRAD", at_plan);
      auto bytes = ops.conv2d_plan(s, DType::kBF16);
      REQUIRE(bytes.ok());
      ws.resize(*bytes);
    }
    const test::ScopedEnv e("NOEIRA_BF16_WGRAD", at_run);
    Vec dw = c.dw0;
    ops.conv2d_backward_weights(s, cview(x), cview(dy), dw.data(), nullptr, ws.data(), ws.size());
    return dw;
  };
  CHECK(same_bits(run("1", nullptr), run("1", "1")));
  CHECK(same_bits(run(nullptr, "1"), run(nullptr, nullptr)));
}
