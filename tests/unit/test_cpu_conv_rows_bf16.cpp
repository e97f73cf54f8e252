// bf16 3x3 convolutions on NCHW rows of 32 pixels (kernels/cpu/bf16_conv3x3_rows.h): which
// shapes it takes, its forward and backward-data within one bf16 rounding of naive double
// loops over the bf16 values, its outputs rounded with f32_to_bf16's bits, the dx epilogue
// with add_relu_backward's bits, the same bits for 1 and 2 threads through CpuOps. Where
// the kernel does not run (no AVX-512 build, no AVX512-BF16, oneDNN on AMX, or
// NOEIRA_BF16_CONV_ROWS=0) the kernel cases say SKIP.
#include <vector>

#include "kernels/cpu/bf16_conv3x3_rows.h"
#include "tests/support/image_reference.h"

using namespace noeira;
using namespace noeira::test::image_ref;

namespace {

// Shapes that walk the kernel's paths: tiles of two rows and a last one alone, the zero
// rows above and below, several output blocks; through CpuOps, several slabs and a shorter
// last one (9 and 17 images). Cin 6: the forward alone (backward-data wants Cin 4k).
std::vector<ConvShape> row_shapes() {
  return {conv_shape(3, 16, 32, 32, 16, 3, 1, 1, false),  // ResNet-20's first stage
          conv_shape(9, 4, 5, 32, 8, 3, 1, 1, false),     // H odd; 8 + 1 images
          conv_shape(2, 4, 1, 32, 4, 3, 1, 1, false),     // one row: both neighbours zero
          conv_shape(2, 8, 2, 32, 12, 3, 1, 1, false),    // three output blocks
          conv_shape(2, 6, 3, 32, 8, 3, 1, 1, false),     // Cin 6
          conv_shape(17, 20, 3, 32, 8, 3, 1, 1, false)};  // 17 images: a shorter last slab
}

bool skip_without_kernel() {
  if (bf16_conv_rows_available()) return false;
  WARN("SKIP: the bf16 row kernel does not run here (no AVX-512 build, no AVX512-BF16, oneDNN "
       "on AMX, or NOEIRA_BF16_CONV_ROWS=0); oneDNN ran these passes");
  return true;
}

// The worst |got - want| over (|want| + 1e-3), held to 2^-7: one bf16 rounding is at most
// 2^-8 of |want|, and fp32 sums in another order may round the other way.
double worst_rounding(const Vec& got, const std::vector<double>& want) {
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(got[i] - want[i]) / (std::abs(want[i]) + 1e-3));
  return worst;
}

struct Packed {
  std::vector<uint32_t> words;
  std::vector<std::byte> area;
  explicit Packed(const ConvShape& s)
      : words(static_cast<size_t>(bf16_conv_rows_packed_words(s))),
        area(bf16_conv_rows_area_bytes(s)) {}
};

}  // namespace

TEST_CASE("bf16 conv rows: it takes bf16 3x3 stride-1 'same' convolutions of 32-pixel rows "
          "without bias, channels in pairs and blocks of 4", "[image-ops]") {
  if (skip_without_kernel()) return;
  const ConvShape ok = conv_shape(4, 16, 32, 32, 16, 3, 1, 1, false);
  CHECK(bf16_conv_rows_forward(ok, DType::kBF16));
  CHECK(bf16_conv_rows_backward_data(ok, DType::kBF16));
  CHECK_FALSE(bf16_conv_rows_forward(ok, DType::kF32));
  const ConvShape stem = conv_shape(4, 3, 32, 32, 16, 3, 1, 1, false);
  CHECK_FALSE(bf16_conv_rows_forward(stem, DType::kBF16));        // Cin odd: no pairs
  CHECK_FALSE(bf16_conv_rows_backward_data(stem, DType::kBF16));  // Cin 3: no blocks of 4
  const ConvShape six = conv_shape(4, 6, 32, 32, 8, 3, 1, 1, false);
  CHECK(bf16_conv_rows_forward(six, DType::kBF16));
  CHECK_FALSE(bf16_conv_rows_backward_data(six, DType::kBF16));
  CHECK_FALSE(bf16_conv_rows_forward(conv_shape(4, 16, 32, 32, 6, 3, 1, 1, false), DType::kBF16));
  CHECK_FALSE(bf16_conv_rows_forward(conv_shape(4, 16, 32, 32, 16, 3, 1, 1, true), DType::kBF16));
  CHECK_FALSE(bf16_conv_rows_forward(conv_shape(4, 16, 32, 16, 16, 3, 1, 1, false), DType::kBF16));
  CHECK_FALSE(bf16_conv_rows_forward(conv_shape(4, 16, 32, 32, 16, 3, 2, 1, false), DType::kBF16));
  CHECK_FALSE(bf16_conv_rows_forward(conv_shape(4, 16, 32, 32, 16, 3, 1, 0, false), DType::kBF16));
}

TEST_CASE("bf16 conv rows: forward and backward-data are the convolution's sums of the bf16 "
          "values, rounded once, overwriting their output", "[image-ops]") {
  if (skip_without_kernel()) return;
  uint32_t seed = 1900;
  for (const ConvShape& s : row_shapes()) {
    CONV_INFO(s);
    const ConvCase c(s, seed += 10);
    const Bf x = to_bf16(c.x), w = to_bf16(c.w), dy = to_bf16(c.dy);
    const ConvRef ref = c.reference(to_f32(x), to_f32(w), to_f32(dy));
    Packed p(s);
    Bf y(dy.size(), f32_to_bf16(7.0f)), dx(x.size(), f32_to_bf16(-3.0f));  // overwritten
    bf16_conv_rows_pack_forward(s, w.data(), p.words.data());
    bf16_conv_rows_forward_slab(s, s.batch, x.data(), p.words.data(), y.data(), p.area.data());
    CHECK(worst_rounding(to_f32(y), ref.y) <= 1.0 / 128);
    if (!bf16_conv_rows_backward_data(s, DType::kBF16)) continue;
    bf16_conv_rows_pack_backward_data(s, w.data(), p.words.data());
    bf16_conv_rows_backward_data_slab(s, s.batch, dy.data(), p.words.data(), dx.data(), nullptr,
                                      p.area.data());
    CHECK(worst_rounding(to_f32(dx), ref.dx) <= 1.0 / 128);
  }
}

TEST_CASE("bf16 conv rows: sums in fp32's subnormal range are zeros, as vdpbf16ps flushes "
          "them", "[image-ops]") {
  if (skip_without_kernel()) return;
  // x = 2^-67 and w = 2^-63 (normal bf16 values): products of 2^-130, each vdpbf16ps step
  // adding 2^-129, subnormal in fp32, which the instruction flushes (it also reads
  // subnormal inputs as zero), as oneDNN's bf16 kernels on these CPUs do: the outputs are +0
  // where exact sums (8 to 12 products) would be subnormal.
  const ConvShape s = conv_shape(1, 2, 2, 32, 4, 3, 1, 1, false);
  const Bf x(static_cast<size_t>(s.x_elems()), f32_to_bf16(0x1p-67f));
  const Bf w(static_cast<size_t>(s.w_elems()), f32_to_bf16(0x1p-63f));
  Packed p(s);
  Bf y(static_cast<size_t>(s.y_elems()), f32_to_bf16(1.0f));
  bf16_conv_rows_pack_forward(s, w.data(), p.words.data());
  bf16_conv_rows_forward_slab(s, 1, x.data(), p.words.data(), y.data(), p.area.data());
  CHECK(y == Bf(y.size(), bf16_t{0}));
}

TEST_CASE("bf16 conv rows through CpuOps: the same bits for 1 and 2 threads, the dx epilogue "
          "with add_relu_backward's bits", "[image-ops]") {
  if (skip_without_kernel()) return;
  uint32_t seed = 1950;
  for (const ConvShape& s : row_shapes()) {
    CONV_INFO(s);
    const ConvCase c(s, seed += 10);
    CpuOps one(1), two(2);
    const ConvCase::Out a = c.run<bf16_t>(one), b = c.run<bf16_t>(two);
    // CpuOps runs this kernel, whatever the slabs.
    const Bf x = to_bf16(c.x), w = to_bf16(c.w), dy = to_bf16(c.dy);
    Packed p(s);
    Bf y(dy.size()), dx(x.size());
    bf16_conv_rows_pack_forward(s, w.data(), p.words.data());
    bf16_conv_rows_forward_slab(s, s.batch, x.data(), p.words.data(), y.data(), p.area.data());
    CHECK(same_bits(a.y, to_f32(y)));
    const bool data = bf16_conv_rows_backward_data(s, DType::kBF16);
    if (data) {
      bf16_conv_rows_pack_backward_data(s, w.data(), p.words.data());
      bf16_conv_rows_backward_data_slab(s, s.batch, dy.data(), p.words.data(), dx.data(),
                                        nullptr, p.area.data());
      CHECK(same_bits(a.dx, to_f32(dx)));
    }
    CHECK(same_bits(a.y, b.y));
    CHECK(same_bits(a.dx, b.dx));
    CHECK(same_bits(a.dw, b.dw));
    // conv2d_backward with the epilogue = backward-data, then add_relu_backward.
    const Bf r = to_bf16(random_vec(static_cast<int64_t>(x.size()), seed + 1));
    const Bf post = to_bf16(random_vec(static_cast<int64_t>(x.size()), seed + 2));
    const Bf b_dx = to_bf16(b.dx);
    Bf want(x.size()), got(x.size()), plain(x.size());
    Vec dw = c.dw0, dw_plain = c.dw0;
    auto bytes = two.conv2d_plan(s, DType::kBF16);
    REQUIRE(bytes.ok());
    std::vector<std::byte> ws(*bytes);
    two.add_relu_backward(cview(b_dx), cview(r), cview(post), view(want));
    two.conv2d_backward(s, cview(x), cview(dy), cview(w), view(got), ConvDxEpilogue{cview(r), cview(post)},
                        dw.data(), nullptr, ws.data(), ws.size());
    CHECK(same_bits(got, want));
    CHECK(same_bits(dw, b.dw));
    two.conv2d_backward(s, cview(x), cview(dy), cview(w), view(plain), {}, dw_plain.data(), nullptr,
                        ws.data(), ws.size());
    CHECK(same_bits(plain, b_dx));
    CHECK(same_bits(dw_plain, b.dw));
  }
}
