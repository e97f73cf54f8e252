// fp32 3x3 convolutions on NCHW rows of 32 pixels (kernels/cpu/f32_conv3x3_rows.h): which
// shapes it takes, its forward and backward-data against naive double loops, the epilogue
// with add_relu_backward's bits, the same bits for 1 and 2 threads through CpuOps. In a build
// without AVX-512 (or with NOEIRA_F32_CONV_ROWS=0) the kernel cases say SKIP.
#include <vector>

#include "kernels/cpu/f32_conv3x3_rows.h"
#include "kernels/cpu/onednn_conv.h"
#include "tests/support/image_reference.h"

using namespace noeira;
using namespace noeira::test::image_ref;

namespace {

// Shapes that walk the kernel's paths: tiles of two rows and a last one alone, the zero
// rows above and below, several output blocks; through CpuOps, several slabs and a shorter
// last one (9 and 17 images).
std::vector<ConvShape> row_shapes() {
  return {conv_shape(3, 16, 32, 32, 16, 3, 1, 1, false),  // ResNet-20's first stage
          conv_shape(9, 3, 5, 32, 8, 3, 1, 1, false),     // the stem's 3 channels; H odd; 8 + 1
          conv_shape(2, 4, 1, 32, 4, 3, 1, 1, false),     // one row: both neighbours zero
          conv_shape(2, 8, 2, 32, 12, 3, 1, 1, false),    // three output blocks
          conv_shape(17, 20, 3, 32, 8, 3, 1, 1, false)};  // 17 images: a shorter last slab
}

bool skip_without_kernel() {
  if (f32_conv_rows_available()) return false;
  WARN("SKIP: the fp32 row kernel is not in this build (no AVX-512) or NOEIRA_F32_CONV_ROWS=0; "
       "oneDNN ran these passes");
  return true;
}

}  // namespace

TEST_CASE("f32 conv rows: it takes fp32 3x3 stride-1 'same' convolutions of 32-pixel rows "
          "without bias that oneDNN's Winograd kernels do not", "[image-ops]") {
  if (skip_without_kernel()) return;
  const ConvShape ok = conv_shape(4, 16, 32, 32, 16, 3, 1, 1, false);
  CHECK(f32_conv_rows_forward(ok, DType::kF32) == !winograd_applies(ok, DType::kF32));
  const ConvShape stem = conv_shape(4, 3, 32, 32, 16, 3, 1, 1, false);
  CHECK(f32_conv_rows_forward(stem, DType::kF32));
  CHECK_FALSE(f32_conv_rows_backward_data(stem, DType::kF32));  // Cin 3: no blocks of 4
  CHECK_FALSE(f32_conv_rows_forward(stem, DType::kBF16));
  CHECK_FALSE(f32_conv_rows_forward(conv_shape(4, 3, 32, 32, 16, 3, 1, 1, true), DType::kF32));
  CHECK_FALSE(f32_conv_rows_forward(conv_shape(4, 3, 32, 16, 16, 3, 1, 1, false), DType::kF32));
  CHECK_FALSE(f32_conv_rows_forward(conv_shape(4, 3, 32, 32, 16, 3, 2, 1, false), DType::kF32));
  CHECK_FALSE(f32_conv_rows_forward(conv_shape(4, 3, 32, 32, 16, 3, 1, 0, false), DType::kF32));
  CHECK_FALSE(f32_conv_rows_forward(conv_shape(4, 3, 32, 32, 6, 3, 1, 1, false), DType::kF32));
}

TEST_CASE("f32 conv rows: forward and backward-data are the convolution's sums, overwriting "
          "their output", "[image-ops]") {
  if (skip_without_kernel()) return;
  uint32_t seed = 900;
  for (const ConvShape& s : row_shapes()) {
    CONV_INFO(s);
    const ConvCase c(s, seed += 10);
    const ConvRef ref = c.reference(c.x, c.w, c.dy);
    std::vector<float> packed(static_cast<size_t>(f32_conv_rows_packed_floats(s)));
    Vec y(c.dy.size(), 7.0f), dx(c.x.size(), -3.0f);  // overwritten
    f32_conv_rows_pack_forward(s, c.w.data(), packed.data());
    f32_conv_rows_forward_slab(s, s.batch, c.x.data(), packed.data(), y.data());
    CHECK(rel_error(y, ref.y) < 1e-5);
    if (s.in_channels % 4 != 0) continue;
    f32_conv_rows_pack_backward_data(s, c.w.data(), packed.data());
    f32_conv_rows_backward_data_slab(s, s.batch, c.dy.data(), packed.data(), dx.data(), nullptr);
    CHECK(rel_error(dx, ref.dx) < 1e-5);
  }
}

TEST_CASE("f32 conv rows through CpuOps: the same bits for 1 and 2 threads, the dx epilogue "
          "with add_relu_backward's bits", "[image-ops]") {
  if (skip_without_kernel()) return;
  uint32_t seed = 950;
  for (const ConvShape& s : row_shapes()) {
    CONV_INFO(s);
    const ConvCase c(s, seed += 10);
    CpuOps one(1), two(2);
    const ConvCase::Out a = c.run<float>(one), b = c.run<float>(two);
    // Where CpuOps takes this kernel (not where Winograd runs), its bits, whatever the slabs.
    std::vector<float> packed(static_cast<size_t>(f32_conv_rows_packed_floats(s)));
    Vec y(c.dy.size()), dx(c.x.size());
    f32_conv_rows_pack_forward(s, c.w.data(), packed.data());
    f32_conv_rows_forward_slab(s, s.batch, c.x.data(), packed.data(), y.data());
    if (f32_conv_rows_forward(s, DType::kF32)) CHECK(same_bits(a.y, y));
    if (f32_conv_rows_backward_data(s, DType::kF32)) {
      f32_conv_rows_pack_backward_data(s, c.w.data(), packed.data());
      f32_conv_rows_backward_data_slab(s, s.batch, c.dy.data(), packed.data(), dx.data(),
                                       nullptr);
      CHECK(same_bits(a.dx, dx));
    }
    CHECK(same_bits(a.y, b.y));
    CHECK(same_bits(a.dx, b.dx));
    CHECK(same_bits(a.dw, b.dw));
    const ConvRef ref = c.reference(c.x, c.w, c.dy);
    CHECK(rel_error(a.y, ref.y) < 1e-5);
    CHECK(rel_error(a.dx, ref.dx) < 1e-5);
    // conv2d_backward with the epilogue = backward-data, then add_relu_backward.
    const Vec r = random_vec(static_cast<int64_t>(c.x.size()), seed + 1);
    const Vec p = random_vec(static_cast<int64_t>(c.x.size()), seed + 2);
    Vec want(c.x.size()), got(c.x.size()), dw = c.dw0;
    auto bytes = two.conv2d_plan(s, DType::kF32);
    REQUIRE(bytes.ok());
    std::vector<std::byte> ws(*bytes);
    const auto cv = [](const Vec& v) { return ConstView(v.data(), static_cast<int64_t>(v.size())); };
    two.add_relu_backward(cv(b.dx), cv(r), cv(p), View(want.data(), static_cast<int64_t>(want.size())));
    two.conv2d_backward(s, cv(c.x), cv(c.dy), cv(c.w), View(got.data(), static_cast<int64_t>(got.size())),
                        ConvDxEpilogue{cv(r), cv(p)}, dw.data(), nullptr, ws.data(), ws.size());
    CHECK(same_bits(got, want));
    CHECK(same_bits(dw, b.dw));
    // Without the epilogue, and without dx (only the weight gradient): the passes' bits.
    Vec plain(c.x.size()), dw_plain = c.dw0, dw_only = c.dw0;
    two.conv2d_backward(s, cv(c.x), cv(c.dy), cv(c.w),
                        View(plain.data(), static_cast<int64_t>(plain.size())), {},
                        dw_plain.data(), nullptr, ws.data(), ws.size());
    two.conv2d_backward(s, cv(c.x), cv(c.dy), cv(c.w), View{}, {}, dw_only.data(), nullptr,
                        ws.data(), ws.size());
    CHECK(same_bits(plain, b.dx));
    CHECK(same_bits(dw_plain, b.dw));
    CHECK(same_bits(dw_only, b.dw));
  }
}
