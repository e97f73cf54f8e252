// oneDNN fp32 convolution (kernels/cpu/onednn_conv.h) against naive double-accumulated
// loops, a finite-difference gradcheck, and the thread-count rule: 1 and 2 threads give the
// same bits (DESIGN.md rule 3). The GEMM's: test_onednn_gemm.cpp.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cpu/onednn_conv.h"
#include "kernels/cpu/onednn_conv_pass.h"
#include "kernels/cpu/onednn_engine.h"
#include "tests/support/image_reference.h"
#include "tests/support/scoped_env.h"

using namespace noeira;

namespace {

using noeira::test::image_ref::random_vec;
using noeira::test::image_ref::rel_error;
using noeira::test::image_ref::same_bits;

// Naive loops over NCHW / OIHW with double accumulation.
struct ConvReference {
  const ConvShape& s;
  int64_t Ho() const { return s.out_height(); }
  int64_t Wo() const { return s.out_width(); }
  size_t x_at(int64_t b, int64_t c, int64_t h, int64_t w) const {
    return static_cast<size_t>(((b * s.in_channels + c) * s.height + h) * s.width + w);
  }
  size_t y_at(int64_t b, int64_t o, int64_t i, int64_t j) const {
    return static_cast<size_t>(((b * s.out_channels + o) * Ho() + i) * Wo() + j);
  }
  size_t w_at(int64_t o, int64_t c, int64_t p, int64_t q) const {
    return static_cast<size_t>(((o * s.in_channels + c) * s.kernel_h + p) * s.kernel_w + q);
  }
  // f(b, o, i, j, c, h, w, p, q) for every product that touches the (unpadded) input.
  template <class F>
  void each(const F& f) const {
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t o = 0; o < s.out_channels; ++o)
        for (int64_t i = 0; i < Ho(); ++i)
          for (int64_t j = 0; j < Wo(); ++j)
            for (int64_t c = 0; c < s.in_channels; ++c)
              for (int64_t p = 0; p < s.kernel_h; ++p)
                for (int64_t q = 0; q < s.kernel_w; ++q) {
                  const int64_t h = i * s.stride - s.pad + p, w = j * s.stride - s.pad + q;
                  if (h >= 0 && h < s.height && w >= 0 && w < s.width) f(b, o, i, j, c, h, w, p, q);
                }
  }
  std::vector<double> forward(const std::vector<float>& x, const std::vector<float>& w,
                              const std::vector<float>& bias) const {
    std::vector<double> y(static_cast<size_t>(s.batch * s.out_channels * Ho() * Wo()), 0.0);
    each([&](auto b, auto o, auto i, auto j, auto c, auto h, auto ww, auto p, auto q) {
      y[y_at(b, o, i, j)] += static_cast<double>(x[x_at(b, c, h, ww)]) * w[w_at(o, c, p, q)];
    });
    if (s.has_bias)
      for (int64_t b = 0; b < s.batch; ++b)
        for (int64_t o = 0; o < s.out_channels; ++o)
          for (int64_t i = 0; i < Ho() * Wo(); ++i) y[y_at(b, o, 0, 0) + i] += bias[o];
    return y;
  }
  std::vector<double> backward_data(const std::vector<float>& dy,
                                    const std::vector<float>& w) const {
    std::vector<double> dx(static_cast<size_t>(s.batch * s.in_channels * s.height * s.width), 0.0);
    each([&](auto b, auto o, auto i, auto j, auto c, auto h, auto ww, auto p, auto q) {
      dx[x_at(b, c, h, ww)] += static_cast<double>(dy[y_at(b, o, i, j)]) * w[w_at(o, c, p, q)];
    });
    return dx;
  }
  std::vector<double> backward_weights(const std::vector<float>& x,
                                       const std::vector<float>& dy) const {
    std::vector<double> dw(
        static_cast<size_t>(s.out_channels * s.in_channels * s.kernel_h * s.kernel_w), 0.0);
    each([&](auto b, auto o, auto i, auto j, auto c, auto h, auto ww, auto p, auto q) {
      dw[w_at(o, c, p, q)] += static_cast<double>(dy[y_at(b, o, i, j)]) * x[x_at(b, c, h, ww)];
    });
    return dw;
  }
  std::vector<double> backward_bias(const std::vector<float>& dy) const {
    std::vector<double> db(static_cast<size_t>(s.out_channels), 0.0);
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t o = 0; o < s.out_channels; ++o)
        for (int64_t i = 0; i < Ho() * Wo(); ++i)
          db[static_cast<size_t>(o)] += dy[y_at(b, o, 0, 0) + i];
    return db;
  }
};

// Inputs for one shape, and the three passes run through an OnednnConv.
struct ConvRun {
  ConvShape s;
  std::vector<float> x, w, bias, dy;
  ConvRun(const ConvShape& shape, uint32_t seed)
      : s(shape),
        x(random_vec(s.batch * s.in_channels * s.height * s.width, seed)),
        w(random_vec(s.out_channels * s.in_channels * s.kernel_h * s.kernel_w, seed + 1)),
        bias(s.has_bias ? random_vec(s.out_channels, seed + 2) : std::vector<float>{}),
        dy(random_vec(s.batch * s.out_channels * s.out_height() * s.out_width(), seed + 3)) {}

  struct Out {
    std::vector<float> y, dx, dw, db;
  };
  // dw and db start from `dw0`/`db0` (zeros when empty): backward_weights accumulates.
  Out run(OnednnConv& conv, int repeats_of_backward_weights = 1) const {
    auto bytes = conv.workspace_bytes(s);
    REQUIRE(bytes.ok());
    std::vector<std::byte> ws(*bytes);
    Out o;
    o.y.assign(dy.size(), 0.0f);
    o.dx.assign(x.size(), 0.0f);
    o.dw.assign(w.size(), 0.0f);
    o.db.assign(bias.size(), 0.0f);
    REQUIRE(conv.forward(s, x.data(), w.data(), s.has_bias ? bias.data() : nullptr, o.y.data(),
                         ws.data(), ws.size())
                .ok());
    REQUIRE(conv.backward_data(s, dy.data(), w.data(), o.dx.data(), ws.data(), ws.size()).ok());
    for (int r = 0; r < repeats_of_backward_weights; ++r)
      REQUIRE(conv.backward_weights(s, x.data(), dy.data(), o.dw.data(),
                                    s.has_bias ? o.db.data() : nullptr, ws.data(), ws.size())
                  .ok());
    return o;
  }
};

ConvShape conv_shape(int64_t B, int64_t Cin, int64_t H, int64_t W, int64_t Cout, int64_t k,
                     int64_t stride, int64_t pad, bool bias = true) {
  ConvShape s;
  s.batch = B, s.in_channels = Cin, s.height = H, s.width = W;
  s.out_channels = Cout, s.kernel_h = k, s.kernel_w = k, s.stride = stride, s.pad = pad;
  s.has_bias = bias;
  return s;
}

// Backward-data runs in plain layouts for Cin < 4, blocked ones otherwise; forward and
// backward-weights in blocked ones, except fp32 direct stride-1 16 -> 16 shapes, all of
// whose passes run on nhwc where oneDNN runs AVX-512 (onednn_conv_pass.cpp).
std::vector<ConvShape> conv_shapes() {
  return {conv_shape(3, 1, 28, 28, 4, 3, 1, 0),          // conv2d-MNIST's first layer
          conv_shape(5, 3, 32, 32, 8, 3, 1, 1),          // CIFAR, 'same' padding
          conv_shape(2, 4, 9, 9, 6, 3, 2, 1),            // stride 2, odd size
          conv_shape(17, 2, 8, 8, 3, 1, 2, 0),           // 1x1 stride 2; 17 = 2 full slabs + 1
          conv_shape(10, 3, 7, 6, 5, 3, 1, 1, false),    // no bias, H != W, 2 slabs
          conv_shape(9, 16, 8, 8, 16, 3, 1, 1),          // Winograd, 2 slabs
          conv_shape(10, 32, 7, 9, 16, 3, 1, 1, false),  // Winograd, partial 4x4 tiles
          conv_shape(4, 17, 7, 7, 24, 3, 2, 1),          // blocked, channels not a multiple of 16
          conv_shape(11, 32, 6, 6, 8, 1, 2, 0, false),   // blocked 1x1 stride 2, no bias
          conv_shape(50, 16, 4, 4, 16, 3, 1, 1, false),  // Winograd, 16-image slabs: 16+16+16+2
          conv_shape(9, 16, 9, 9, 16, 3, 1, 0),          // direct 16 -> 16: nhwc
          conv_shape(6, 16, 10, 7, 16, 3, 1, 1, false),  // nhwc (or Winograd), H != W
          conv_shape(6, 16, 10, 7, 16, 3, 2, 1, false)};  // 16 -> 16 strided: blocked
}

}  // namespace

TEST_CASE("oneDNN convolution: Winograd takes fp32 3x3 stride-1 'same' shapes of 16k channels",
          "[onednn]") {
  // ResNet-20's shapes; where oneDNN runs AMX not the 32x32 one (its direct kernels won).
  const bool amx = onednn::runs_amx();
  CHECK(winograd_applies(conv_shape(8, 16, 32, 32, 16, 3, 1, 1), DType::kF32) == !amx);
  CHECK(winograd_applies(conv_shape(8, 32, 16, 16, 64, 3, 1, 1), DType::kF32));
  CHECK(winograd_applies(conv_shape(8, 32, 17, 16, 64, 3, 1, 1), DType::kF32) == !amx);
  CHECK(winograd_applies(conv_shape(8, 64, 8, 8, 64, 3, 1, 1), DType::kF32));
  CHECK_FALSE(winograd_applies(conv_shape(8, 16, 32, 32, 16, 3, 1, 1), DType::kBF16));
  CHECK_FALSE(winograd_applies(conv_shape(8, 16, 32, 32, 32, 3, 2, 1), DType::kF32));  // stride
  CHECK_FALSE(winograd_applies(conv_shape(8, 32, 16, 16, 64, 3, 1, 0), DType::kF32));  // pad 0
  CHECK_FALSE(winograd_applies(conv_shape(8, 3, 32, 32, 16, 3, 1, 1), DType::kF32));   // Cin 3
  CHECK_FALSE(winograd_applies(conv_shape(8, 16, 8, 8, 24, 3, 1, 1), DType::kF32));    // Cout 24
  CHECK_FALSE(winograd_applies(conv_shape(8, 16, 8, 8, 16, 1, 1, 0), DType::kF32));    // 1x1
  test::ScopedEnv off("NOEIRA_WINOGRAD", "0");  // the A/B switch: direct everywhere
  CHECK_FALSE(winograd_applies(conv_shape(8, 64, 8, 8, 64, 3, 1, 1), DType::kF32));
}

TEST_CASE("oneDNN convolution: fp32 direct stride-1 convolutions from 16 channels to 16 run "
          "on nhwc (nChw16c's bytes), others on oneDNN's choice", "[onednn]") {
  const auto layout = [](const ConvShape& s, DType dtype, int arg) {
    const onednn::SlabConv c = onednn::make_slab_conv(s, 2, dtype, true);
    const onednn::ConvPass* passes[] = {&c.forward, &c.backward_data, &c.backward_weights};
    std::optional<ChannelLayout> first;
    for (const onednn::ConvPass* p : passes) {  // every pass that has the operand agrees
      const onednn::ConvOperand* o = p->operand(arg);
      if (!o) continue;
      if (!first) first = o->channel_blocks;
      CHECK(o->channel_blocks == first);
    }
    return first;
  };
  // Where oneDNN runs AVX-512 (its brgemm kernels); pad 0: never Winograd.
  const ConvShape direct = conv_shape(4, 16, 9, 9, 16, 3, 1, 0);
  const bool nhwc = onednn::runs_avx512();
  CHECK((layout(direct, DType::kF32, DNNL_ARG_SRC) == ChannelLayout::kChannelsLast) == nhwc);
  CHECK((layout(direct, DType::kF32, DNNL_ARG_DST) == ChannelLayout::kChannelsLast) == nhwc);
  CHECK((layout(direct, DType::kF32, DNNL_ARG_DIFF_DST) == ChannelLayout::kChannelsLast) ==
        nhwc);
  CHECK((layout(direct, DType::kF32, DNNL_ARG_DIFF_SRC) == ChannelLayout::kChannelsLast) ==
        nhwc);
  // Strided: oneDNN's choice.
  CHECK(layout(conv_shape(4, 16, 9, 9, 16, 3, 2, 0), DType::kF32, DNNL_ARG_SRC) !=
        ChannelLayout::kChannelsLast);
  // 16 -> 32 channels: oneDNN's choice (nChw16c for its AVX-512 fp32 kernels).
  CHECK(layout(conv_shape(4, 16, 9, 9, 32, 3, 1, 0), DType::kF32, DNNL_ARG_SRC) !=
        ChannelLayout::kChannelsLast);
  test::ScopedEnv off("NOEIRA_CONV_NHWC16", "0");  // the A/B switch
  CHECK(layout(direct, DType::kF32, DNNL_ARG_SRC) != ChannelLayout::kChannelsLast);
}

TEST_CASE("oneDNN convolution: slabs grow for small images, from the shape alone",
          "[onednn]") {
  CHECK(conv_slab_images(conv_shape(128, 16, 32, 32, 16, 3, 1, 1)) == 8);   // 8192 pixels
  CHECK(conv_slab_images(conv_shape(128, 32, 16, 16, 32, 3, 1, 1)) == 16);  // 4096
  CHECK(conv_slab_images(conv_shape(128, 64, 8, 8, 64, 3, 1, 1)) == 64);    // 4096
  CHECK(conv_slab_images(conv_shape(64, 64, 6, 6, 64, 3, 1, 0)) == 32);     // two slabs at least
  CHECK(conv_slab_images(conv_shape(50, 16, 4, 4, 16, 3, 1, 1)) == 16);     // 16+16+16+2
  CHECK(conv_slab_images(conv_shape(5, 3, 2, 2, 4, 1, 1, 0)) == 5);         // the whole batch
  CHECK(conv_slab_images(conv_shape(17, 3, 2, 2, 4, 1, 1, 0)) == 8);        // no single slab
  // Wide 1x1 images: 8 images of 2^21 channels already hold 2^24 elements.
  CHECK(conv_slab_images(conv_shape(64, 1 << 21, 1, 1, 4, 1, 1, 0)) == 8);
}

TEST_CASE("oneDNN convolution: forward, backward-data, backward-weights match naive loops",
          "[onednn]") {
  OnednnConv conv(2);
  uint32_t seed = 1;
  for (const ConvShape& s : conv_shapes()) {
    const ConvRun r(s, seed += 4);
    const ConvRun::Out o = r.run(conv);
    const ConvReference ref{s};
    INFO("B=" << s.batch << " Cin=" << s.in_channels << " H=" << s.height << " W=" << s.width
              << " Cout=" << s.out_channels << " k=" << s.kernel_h << " stride=" << s.stride
              << " pad=" << s.pad << " bias=" << s.has_bias);
    CHECK(rel_error(o.y, ref.forward(r.x, r.w, r.bias)) < 1e-4);
    CHECK(rel_error(o.dx, ref.backward_data(r.dy, r.w)) < 1e-4);
    CHECK(rel_error(o.dw, ref.backward_weights(r.x, r.dy)) < 1e-4);
    if (s.has_bias) CHECK(rel_error(o.db, ref.backward_bias(r.dy)) < 1e-4);
  }
}

TEST_CASE("oneDNN convolution: 1 and 2 threads give the same bits in every pass", "[onednn]") {
  OnednnConv one(1), two(2);
  uint32_t seed = 50;
  for (const ConvShape& s : conv_shapes()) {
    const ConvRun r(s, seed += 4);
    const ConvRun::Out a = r.run(one), b = r.run(two);
    INFO("B=" << s.batch << " Cin=" << s.in_channels << " H=" << s.height);
    CHECK(same_bits(a.y, b.y));
    CHECK(same_bits(a.dx, b.dx));
    CHECK(same_bits(a.dw, b.dw));
    CHECK(same_bits(a.db, b.db));
  }
}

TEST_CASE("oneDNN convolution: backward-weights accumulates into dw and db", "[onednn]") {
  OnednnConv conv(2);
  const ConvRun r(conv_shape(17, 2, 8, 8, 3, 3, 1, 1), 77);
  const ConvRun::Out once = r.run(conv, 1), twice = r.run(conv, 2);
  std::vector<float> dw2 = once.dw, db2 = once.db;
  for (float& v : dw2) v *= 2.0f;  // S + S == 2S exactly in fp32
  for (float& v : db2) v *= 2.0f;
  CHECK(same_bits(twice.dw, dw2));
  CHECK(same_bits(twice.db, db2));
}

TEST_CASE("oneDNN convolution: finite-difference gradcheck", "[onednn]") {
  // L = sum(y * r): dL/dx = backward_data(r), dL/dw = backward_weights(x, r), dL/db = sums of r.
  OnednnConv conv(2);
  const ConvShape s = conv_shape(2, 2, 5, 5, 3, 3, 2, 1);
  ConvRun r(s, 123);
  const ConvRun::Out analytic = r.run(conv);  // r.dy plays the role of r
  auto bytes = conv.workspace_bytes(s);
  REQUIRE(bytes.ok());
  std::vector<std::byte> ws(*bytes);
  const auto loss = [&](const ConvRun& at) {
    std::vector<float> y(at.dy.size());
    REQUIRE(
        conv.forward(s, at.x.data(), at.w.data(), at.bias.data(), y.data(), ws.data(), ws.size())
            .ok());
    double l = 0.0;
    for (size_t i = 0; i < y.size(); ++i) l += static_cast<double>(y[i]) * at.dy[i];
    return l;
  };
  const float eps = 1e-2f;
  // Central differences of L in each entry of one buffer, against the analytic gradient.
  const auto check = [&](std::vector<float> ConvRun::*buffer, const std::vector<float>& grad,
                         const char* name) {
    double worst = 0.0;
    for (size_t i = 0; i < (r.*buffer).size(); ++i) {
      ConvRun plus = r, minus = r;
      (plus.*buffer)[i] += eps;
      (minus.*buffer)[i] -= eps;
      const double numeric = (loss(plus) - loss(minus)) / (2.0 * eps);
      worst = std::max(worst, std::abs(numeric - grad[i]) / std::max(1.0, std::abs(numeric)));
    }
    INFO(name << ": worst relative difference " << worst);
    CHECK(worst < 2e-3);
  };
  check(&ConvRun::x, analytic.dx, "dx");
  check(&ConvRun::w, analytic.dw, "dw");
  check(&ConvRun::bias, analytic.db, "db");
}

TEST_CASE("oneDNN convolution: bad shapes, unplanned shapes, small workspaces are errors",
          "[onednn]") {
  OnednnConv conv(2);
  CHECK_FALSE(conv.workspace_bytes(conv_shape(0, 1, 8, 8, 2, 3, 1, 0)).ok());
  CHECK_FALSE(conv.workspace_bytes(conv_shape(1, 1, 2, 2, 2, 5, 1, 1)).ok());  // kernel > input
  CHECK_FALSE(conv.workspace_bytes(conv_shape(1, 1, 8, 8, 2, 3, 1, -1)).ok());

  const ConvShape s = conv_shape(9, 2, 6, 6, 3, 3, 1, 1);
  const ConvRun r(s, 5);
  std::vector<float> y(r.dy.size());
  std::vector<std::byte> ws(1 << 20);
  const Status unplanned =
      conv.forward(s, r.x.data(), r.w.data(), r.bias.data(), y.data(), ws.data(), ws.size());
  REQUIRE_FALSE(unplanned.ok());
  CHECK(unplanned.error().message.find("not planned") != std::string::npos);

  auto bytes = conv.workspace_bytes(s);
  REQUIRE(bytes.ok());
  CHECK(*bytes > 0);
  CHECK_FALSE(
      conv.forward(s, r.x.data(), r.w.data(), r.bias.data(), y.data(), ws.data(), *bytes - 1).ok());
  CHECK_FALSE(conv.forward(s, r.x.data(), r.w.data(), nullptr, y.data(), ws.data(), *bytes).ok());
  CHECK(conv.forward(s, r.x.data(), r.w.data(), r.bias.data(), y.data(), ws.data(), *bytes).ok());
}
