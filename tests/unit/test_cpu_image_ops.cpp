// CpuOps' image ops (kernels/ops.h) against naive double-precision loops written here:
// convolution (oneDNN), pooling, BatchNorm, the option-A shortcut, dropout and the crop +
// flip augmentation; bf16 storage against fp32; and the thread-count rule (DESIGN.md
// rule 3): 1 and 2 threads give the same bits.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/common/augment.h"
#include "kernels/common/bf16.h"
#include "kernels/common/philox.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/onednn_conv.h"

using namespace noeira;

namespace {

using Vec = std::vector<float>;
using Bf = std::vector<bf16_t>;

Vec random_vec(int64_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  Vec v(static_cast<size_t>(n));
  for (float& x : v) x = u(g);
  return v;
}

// Small integers: many ties inside a pooling window.
Vec random_ints(int64_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int> u(-2, 2);
  Vec v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(u(g));
  return v;
}

Bf to_bf16(const Vec& v) {
  Bf out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = f32_to_bf16(v[i]);
  return out;
}
Vec to_f32(const Bf& v) {
  Vec out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = bf16_to_f32(v[i]);
  return out;
}
// The values bf16 storage holds for v.
Vec rounded(const Vec& v) { return to_f32(to_bf16(v)); }

View view(Vec& v) { return View(v.data(), static_cast<int64_t>(v.size())); }
ConstView cview(const Vec& v) { return ConstView(v.data(), static_cast<int64_t>(v.size())); }
View view(Bf& v) { return View(v.data(), static_cast<int64_t>(v.size())); }
ConstView cview(const Bf& v) { return ConstView(v.data(), static_cast<int64_t>(v.size())); }

// ||got - ref|| / ||ref||.
double rel_error(const Vec& got, const std::vector<double>& ref) {
  REQUIRE(got.size() == ref.size());
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    num += (got[i] - ref[i]) * (got[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}
double rel_error(const Vec& got, const Vec& ref) {
  return rel_error(got, std::vector<double>(ref.begin(), ref.end()));
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// ---- Convolution ----

ConvShape conv_shape(int64_t B, int64_t Cin, int64_t H, int64_t W, int64_t Cout, int64_t k,
                     int64_t stride, int64_t pad, bool bias) {
  ConvShape s;
  s.batch = B, s.in_channels = Cin, s.height = H, s.width = W;
  s.out_channels = Cout, s.kernel_h = k, s.kernel_w = k, s.stride = stride, s.pad = pad;
  s.has_bias = bias;
  return s;
}

// Naive NCHW / OIHW convolution in double: forward, backward-data, backward-weights.
struct ConvRef {
  std::vector<double> y, dx, dw, db;
  ConvRef(const ConvShape& s, const Vec& x, const Vec& w, const Vec& bias, const Vec& dy) {
    const int64_t Ho = s.out_height(), Wo = s.out_width();
    y.assign(static_cast<size_t>(s.y_elems()), 0.0);
    dx.assign(x.size(), 0.0);
    dw.assign(w.size(), 0.0);
    db.assign(static_cast<size_t>(s.out_channels), 0.0);
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t o = 0; o < s.out_channels; ++o)
        for (int64_t i = 0; i < Ho; ++i)
          for (int64_t j = 0; j < Wo; ++j) {
            const size_t yi = static_cast<size_t>(((b * s.out_channels + o) * Ho + i) * Wo + j);
            if (s.has_bias) y[yi] += bias[static_cast<size_t>(o)];
            db[static_cast<size_t>(o)] += dy[yi];
            for (int64_t c = 0; c < s.in_channels; ++c)
              for (int64_t p = 0; p < s.kernel_h; ++p)
                for (int64_t q = 0; q < s.kernel_w; ++q) {
                  const int64_t h = i * s.stride - s.pad + p, ww = j * s.stride - s.pad + q;
                  if (h < 0 || h >= s.height || ww < 0 || ww >= s.width) continue;
                  const size_t xi = static_cast<size_t>(
                      ((b * s.in_channels + c) * s.height + h) * s.width + ww);
                  const size_t wi = static_cast<size_t>(
                      ((o * s.in_channels + c) * s.kernel_h + p) * s.kernel_w + q);
                  y[yi] += static_cast<double>(x[xi]) * w[wi];
                  dx[xi] += static_cast<double>(dy[yi]) * w[wi];
                  dw[wi] += static_cast<double>(dy[yi]) * x[xi];
                }
          }
  }
};

// One shape's inputs; the three passes through CpuOps in storage type T.
struct ConvCase {
  ConvShape s;
  Vec x, w, bias, dy, dw0, db0;
  ConvCase(const ConvShape& shape, uint32_t seed)
      : s(shape),
        x(random_vec(s.x_elems(), seed)),
        w(random_vec(s.w_elems(), seed + 1)),
        bias(random_vec(s.out_channels, seed + 2)),
        dy(random_vec(s.y_elems(), seed + 3)),
        dw0(random_vec(s.w_elems(), seed + 4)),
        db0(random_vec(s.out_channels, seed + 5)) {}

  struct Out {
    Vec y, dx, dw, db;
  };
  template <class T>
  Out run(CpuOps& ops) const {
    constexpr DType dt = DTypeOf<T>::value;
    auto bytes = ops.conv2d_plan(s, dt);
    REQUIRE(bytes.ok());
    std::vector<std::byte> ws(*bytes);
    std::vector<T> xs(x.size()), wts(w.size()), dys(dy.size()), ys(dy.size()), dxs(x.size());
    const auto store = [](const Vec& from, std::vector<T>& to) {
      for (size_t i = 0; i < from.size(); ++i) store_f32(to[i], from[i]);
    };
    store(x, xs), store(w, wts), store(dy, dys);
    const auto v = [](std::vector<T>& a) { return View(a.data(), static_cast<int64_t>(a.size())); };
    Out o;
    o.dw = dw0;  // backward-weights accumulates
    o.db = db0;
    ops.conv2d_forward(s, v(xs), v(wts), s.has_bias ? bias.data() : nullptr, v(ys), ws.data(),
                       ws.size());
    ops.conv2d_backward_data(s, v(dys), v(wts), v(dxs), ws.data(), ws.size());
    ops.conv2d_backward_weights(s, v(xs), v(dys), o.dw.data(), s.has_bias ? o.db.data() : nullptr,
                                ws.data(), ws.size());
    const auto load = [](const std::vector<T>& from) {
      Vec out(from.size());
      for (size_t i = 0; i < from.size(); ++i) out[i] = load_f32(from[i]);
      return out;
    };
    o.y = load(ys);
    o.dx = load(dxs);
    return o;
  }
  // The reference with dw0 and db0 added: what backward-weights should leave.
  ConvRef reference(const Vec& xr, const Vec& wr, const Vec& dyr) const {
    ConvRef r(s, xr, wr, bias, dyr);
    for (size_t i = 0; i < r.dw.size(); ++i) r.dw[i] += dw0[i];
    for (size_t i = 0; i < r.db.size(); ++i) r.db[i] += db0[i];
    return r;
  }
};

std::vector<ConvShape> conv_shapes() {
  return {conv_shape(10, 3, 9, 9, 5, 3, 1, 1, true),    // 'same' padding, 10 = 8 + 2 images
          conv_shape(3, 4, 8, 7, 6, 3, 2, 1, false),    // stride 2, H != W, no bias
          conv_shape(9, 16, 6, 6, 8, 1, 2, 0, true),    // 1x1 stride 2, 2 slabs
          conv_shape(2, 5, 5, 5, 3, 3, 1, 0, true),     // no padding, odd channels
          conv_shape(17, 8, 7, 7, 16, 3, 2, 1, false)};  // 3 slabs, odd size, stride 2
}

#define CONV_INFO(s)                                                                      \
  INFO("B=" << s.batch << " Cin=" << s.in_channels << " H=" << s.height << " W=" << s.width \
            << " Cout=" << s.out_channels << " k=" << s.kernel_h << " stride=" << s.stride   \
            << " pad=" << s.pad << " bias=" << s.has_bias)

// ---- Pooling ----

PoolShape pool_shape(int64_t B, int64_t C, int64_t H, int64_t W, int64_t k, int64_t stride,
                     int64_t pad) {
  PoolShape s;
  s.batch = B, s.channels = C, s.height = H, s.width = W;
  s.kernel_h = k, s.kernel_w = k, s.stride = stride, s.pad = pad;
  return s;
}

// Calls f(plane, oh, ow, h, w) for each in-bounds input position of each window, windows
// and positions in row-major order.
template <class F>
void each_window(const PoolShape& s, const F& f) {
  for (int64_t pl = 0; pl < s.batch * s.channels; ++pl)
    for (int64_t i = 0; i < s.out_height(); ++i)
      for (int64_t j = 0; j < s.out_width(); ++j)
        for (int64_t p = 0; p < s.kernel_h; ++p)
          for (int64_t q = 0; q < s.kernel_w; ++q) {
            const int64_t h = i * s.stride - s.pad + p, w = j * s.stride - s.pad + q;
            if (h >= 0 && h < s.height && w >= 0 && w < s.width) f(pl, i, j, h, w);
          }
}

size_t y_index(const PoolShape& s, int64_t plane, int64_t i, int64_t j) {
  return static_cast<size_t>((plane * s.out_height() + i) * s.out_width() + j);
}
size_t x_index(const PoolShape& s, int64_t plane, int64_t h, int64_t w) {
  return static_cast<size_t>((plane * s.height + h) * s.width + w);
}

// ---- BatchNorm ----

NormShape norm_shape(int64_t B, int64_t C, int64_t S) {
  NormShape s;
  s.batch = B, s.channels = C, s.spatial = S;
  return s;
}

// Per channel, in double: mean, biased variance, and the values' indices.
struct ChannelRef {
  double mean = 0.0, var = 0.0;
  std::vector<size_t> at;
};
std::vector<ChannelRef> channels(const NormShape& s, const Vec& x) {
  std::vector<ChannelRef> out(static_cast<size_t>(s.channels));
  for (int64_t c = 0; c < s.channels; ++c) {
    ChannelRef& r = out[static_cast<size_t>(c)];
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t i = 0; i < s.spatial; ++i)
        r.at.push_back(static_cast<size_t>((b * s.channels + c) * s.spatial + i));
    for (size_t k : r.at) r.mean += x[k];
    r.mean /= static_cast<double>(r.at.size());
    for (size_t k : r.at) r.var += (x[k] - r.mean) * (x[k] - r.mean);
    r.var /= static_cast<double>(r.at.size());
  }
  return out;
}

struct BnOut {
  Vec y, mean, invstd, rmean, rvar, dx, dgamma, dbeta;
};

// Training forward then backward through CpuOps in storage type T.
template <class T>
BnOut run_bn(CpuOps& ops, const NormShape& s, const Vec& x, const Vec& dy, const Vec& gamma,
             const Vec& beta, const BatchNormHyper& h) {
  const size_t C = static_cast<size_t>(s.channels);
  BnOut o;
  o.mean.assign(C, 0.0f), o.invstd.assign(C, 0.0f);
  o.rmean = random_vec(s.channels, 91), o.rvar = random_vec(s.channels, 92, 0.5f, 2.0f);
  o.dgamma = random_vec(s.channels, 93), o.dbeta = random_vec(s.channels, 94);
  std::vector<T> xs(x.size()), dys(x.size()), ys(x.size()), dxs(x.size());
  for (size_t i = 0; i < x.size(); ++i) store_f32(xs[i], x[i]), store_f32(dys[i], dy[i]);
  const auto v = [](std::vector<T>& a) { return View(a.data(), static_cast<int64_t>(a.size())); };
  std::vector<std::byte> ws(ops.batchnorm_workspace_bytes(s) + 1);
  ops.batchnorm_forward_train(s, v(xs), gamma.data(), beta.data(), h, v(ys), o.mean.data(),
                              o.invstd.data(), o.rmean.data(), o.rvar.data(), ws.data());
  ops.batchnorm_backward(s, v(dys), v(xs), gamma.data(), o.mean.data(), o.invstd.data(), v(dxs),
                         o.dgamma.data(), o.dbeta.data(), ws.data());
  o.y.resize(x.size()), o.dx.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) o.y[i] = load_f32(ys[i]), o.dx[i] = load_f32(dxs[i]);
  return o;
}

}  // namespace

// ---- Convolution ----

TEST_CASE("conv2d: forward, backward-data, backward-weights match naive loops", "[image-ops]") {
  CpuOps ops(2);
  uint32_t seed = 1;
  for (const ConvShape& s : conv_shapes()) {
    CONV_INFO(s);
    const ConvCase c(s, seed += 10);
    const ConvCase::Out o = c.run<float>(ops);
    const ConvRef ref = c.reference(c.x, c.w, c.dy);
    CHECK(rel_error(o.y, ref.y) < 1e-5);
    CHECK(rel_error(o.dx, ref.dx) < 1e-5);
    CHECK(rel_error(o.dw, ref.dw) < 1e-5);
    if (s.has_bias) CHECK(rel_error(o.db, ref.db) < 1e-5);
    if (!s.has_bias) CHECK(same_bits(o.db, c.db0));  // db untouched
  }
}

TEST_CASE("conv2d bf16: fp32 sums of the bf16 values, outputs rounded once, close to fp32",
          "[image-ops]") {
  CpuOps ops(2);
  uint32_t seed = 100;
  std::vector<ConvShape> shapes = conv_shapes();
  shapes.push_back(conv_shape(2, 64, 4, 4, 32, 3, 1, 1, true));  // 576-term sums
  for (const ConvShape& s : shapes) {
    CONV_INFO(s);
    const ConvCase c(s, seed += 10);
    const ConvCase::Out b = c.run<bf16_t>(ops);
    // The reference sees what bf16 storage holds; each output within about one bf16
    // rounding of it (fp32 sums in another order may round the other way).
    const ConvRef ref = c.reference(rounded(c.x), rounded(c.w), rounded(c.dy));
    const auto within_one_rounding = [](const Vec& got, const std::vector<double>& want) {
      double worst = 0.0;
      for (size_t i = 0; i < got.size(); ++i)
        worst = std::max(worst, std::abs(got[i] - want[i]) / (std::abs(want[i]) + 1e-3));
      return worst;
    };
    CHECK(within_one_rounding(b.y, ref.y) <= 1.0 / 128);
    CHECK(within_one_rounding(b.dx, ref.dx) <= 1.0 / 128);
    CHECK(rel_error(b.dw, ref.dw) < 1e-5);  // fp32 gradients
    if (s.has_bias) CHECK(rel_error(b.db, ref.db) < 1e-5);
    // And close to the fp32 run.
    const ConvCase::Out f = c.run<float>(ops);
    CHECK(rel_error(b.y, f.y) < 1e-2);
    CHECK(rel_error(b.dx, f.dx) < 1e-2);
    CHECK(rel_error(b.dw, f.dw) < 1e-2);
  }
}

TEST_CASE("conv2d: 1 and 2 threads give the same bits in every pass, fp32 and bf16",
          "[image-ops]") {
  CpuOps one(1), two(2);
  uint32_t seed = 200;
  for (const ConvShape& s : conv_shapes()) {
    CONV_INFO(s);
    const ConvCase c(s, seed += 10);
    const ConvCase::Out a = c.run<float>(one), b = c.run<float>(two);
    CHECK(same_bits(a.y, b.y));
    CHECK(same_bits(a.dx, b.dx));
    CHECK(same_bits(a.dw, b.dw));
    CHECK(same_bits(a.db, b.db));
    const ConvCase::Out p = c.run<bf16_t>(one), q = c.run<bf16_t>(two);
    CHECK(same_bits(p.y, q.y));
    CHECK(same_bits(p.dx, q.dx));
    CHECK(same_bits(p.dw, q.dw));
    CHECK(same_bits(p.db, q.db));
  }
}

TEST_CASE("conv2d: a shape is planned per dtype; a bad shape is an Error", "[image-ops]") {
  CpuOps ops(2);
  CHECK_FALSE(ops.conv2d_plan(conv_shape(1, 1, 2, 2, 2, 5, 1, 1, true), DType::kF32).ok());
  CHECK_FALSE(ops.conv2d_plan(conv_shape(1, 1, 8, 8, 2, 3, 1, 0, true), DType::kI32).ok());
  // The backend's OnednnConv keys plans by dtype: fp32 planned, bf16 not.
  OnednnConv conv(1);
  const ConvShape s = conv_shape(2, 2, 6, 6, 3, 3, 1, 1, false);
  auto bytes = conv.workspace_bytes(s, DType::kF32);
  REQUIRE(bytes.ok());
  std::vector<std::byte> ws(*bytes);
  Bf x(static_cast<size_t>(s.x_elems())), w(static_cast<size_t>(s.w_elems())),
      y(static_cast<size_t>(s.y_elems()));
  const Status st = conv.forward(s, x.data(), w.data(), nullptr, y.data(), ws.data(), ws.size());
  REQUIRE_FALSE(st.ok());
  CHECK_THAT(st.error().message, Catch::Contains("bf16") && Catch::Contains("not planned"));
}

TEST_CASE("conv2d_backward_weights: a null db skips the bias gradient only", "[image-ops]") {
  CpuOps ops(2);
  const ConvShape s = conv_shape(9, 3, 6, 6, 4, 3, 1, 1, true);
  const ConvCase c(s, 300);
  const ConvCase::Out full = c.run<float>(ops);
  auto bytes = ops.conv2d_plan(s, DType::kF32);
  REQUIRE(bytes.ok());
  std::vector<std::byte> ws(*bytes);
  Vec dw = c.dw0;
  ops.conv2d_backward_weights(s, cview(c.x), cview(c.dy), dw.data(), nullptr, ws.data(),
                              ws.size());
  CHECK(same_bits(dw, full.dw));
}

// ---- Pooling ----

TEST_CASE("maxpool2d: first maximum of each window with padding and ties; backward",
          "[image-ops]") {
  CpuOps ops(2);
  for (const PoolShape& s : {pool_shape(2, 3, 7, 7, 3, 2, 1), pool_shape(3, 2, 7, 6, 2, 2, 0),
                             pool_shape(1, 2, 5, 5, 3, 1, 1)}) {
    INFO("H=" << s.height << " W=" << s.width << " k=" << s.kernel_h << " stride=" << s.stride
              << " pad=" << s.pad);
    Vec x = random_ints(s.x_elems(), 7);
    x[3] = NAN;  // NaN counts as the maximum
    Vec y(static_cast<size_t>(s.y_elems()));
    std::vector<int32_t> argmax(y.size(), -7);
    ops.maxpool2d_forward(s, cview(x), view(y), argmax.data());
    // The reference: strict '>' keeps the first maximum, NaN wins once.
    Vec y_ref(y.size(), -INFINITY);
    std::vector<int32_t> arg_ref(y.size(), -1);
    each_window(s, [&](int64_t pl, int64_t i, int64_t j, int64_t h, int64_t w) {
      const size_t k = y_index(s, pl, i, j);
      const float v = x[x_index(s, pl, h, w)];
      if (arg_ref[k] < 0 || v > y_ref[k] || (std::isnan(v) && !std::isnan(y_ref[k])))
        y_ref[k] = v, arg_ref[k] = static_cast<int32_t>(h * s.width + w);
    });
    CHECK(same_bits(y, y_ref));
    CHECK(argmax == arg_ref);

    // Backward: dy scattered to each window's argmax in row-major window order (fp32).
    const Vec dy = random_vec(s.y_elems(), 8);
    Vec dx(x.size(), 1.0f), dx_ref(x.size(), 0.0f);
    ops.maxpool2d_backward(s, cview(dy), argmax.data(), view(dx));
    for (int64_t pl = 0; pl < s.batch * s.channels; ++pl)
      for (int64_t i = 0; i < s.out_height(); ++i)
        for (int64_t j = 0; j < s.out_width(); ++j) {
          const size_t k = y_index(s, pl, i, j);
          dx_ref[static_cast<size_t>(pl * s.height * s.width + arg_ref[k])] += dy[k];
        }
    CHECK(same_bits(dx, dx_ref));

    // bf16: the same maxima (the inputs are small integers) and dx rounded once.
    Bf xb = to_bf16(x), yb(y.size()), dyb = to_bf16(dy), dxb(x.size());
    std::vector<int32_t> argb(y.size());
    ops.maxpool2d_forward(s, cview(xb), view(yb), argb.data());
    CHECK(same_bits(to_f32(yb), y_ref));
    CHECK(argb == arg_ref);
    ops.maxpool2d_backward(s, cview(dyb), argb.data(), view(dxb));
    CHECK(rel_error(to_f32(dxb), dx_ref) < 1e-2);
  }
}

TEST_CASE("avgpool2d: padding counted as zeros, global pooling; backward", "[image-ops]") {
  CpuOps ops(2);
  for (const PoolShape& s : {pool_shape(2, 3, 7, 7, 3, 2, 1), pool_shape(3, 4, 6, 5, 2, 2, 0),
                             pool_shape(5, 3, 4, 4, 4, 1, 0)}) {  // the last: global
    INFO("H=" << s.height << " W=" << s.width << " k=" << s.kernel_h << " stride=" << s.stride
              << " pad=" << s.pad);
    const double count = static_cast<double>(s.kernel_h * s.kernel_w);
    const Vec x = random_vec(s.x_elems(), 11);
    Vec y(static_cast<size_t>(s.y_elems()));
    ops.avgpool2d_forward(s, cview(x), view(y));
    std::vector<double> y_ref(y.size(), 0.0);
    each_window(s, [&](int64_t pl, int64_t i, int64_t j, int64_t h, int64_t w) {
      y_ref[y_index(s, pl, i, j)] += x[x_index(s, pl, h, w)] / count;
    });
    CHECK(rel_error(y, y_ref) < 1e-6);

    // Backward: dy / (kh kw) added to every covered input in row-major window order.
    const Vec dy = random_vec(s.y_elems(), 12);
    Vec dx(x.size(), 1.0f), dx_ref(x.size(), 0.0f);
    ops.avgpool2d_backward(s, cview(dy), view(dx));
    each_window(s, [&](int64_t pl, int64_t i, int64_t j, int64_t h, int64_t w) {
      dx_ref[x_index(s, pl, h, w)] += dy[y_index(s, pl, i, j)] / static_cast<float>(count);
    });
    CHECK(same_bits(dx, dx_ref));

    Bf yb(y.size()), dxb(x.size());
    ops.avgpool2d_forward(s, cview(to_bf16(x)), view(yb));
    CHECK(rel_error(to_f32(yb), y_ref) < 1e-2);
    ops.avgpool2d_backward(s, cview(to_bf16(dy)), view(dxb));
    CHECK(rel_error(to_f32(dxb), dx_ref) < 1e-2);
  }
}

TEST_CASE("pooling: 1 and 2 threads give the same bits", "[image-ops]") {
  CpuOps one(1), two(2);
  const PoolShape s = pool_shape(3, 5, 9, 9, 3, 2, 1);
  const Vec x = random_vec(s.x_elems(), 21), dy = random_vec(s.y_elems(), 22);
  const auto run = [&](CpuOps& ops) {
    Vec y(dy.size()), dx(x.size()), ya(dy.size()), dxa(x.size());
    std::vector<int32_t> arg(dy.size());
    ops.maxpool2d_forward(s, cview(x), view(y), arg.data());
    ops.maxpool2d_backward(s, cview(dy), arg.data(), view(dx));
    ops.avgpool2d_forward(s, cview(x), view(ya));
    ops.avgpool2d_backward(s, cview(dy), view(dxa));
    return std::vector<Vec>{y, dx, ya, dxa};
  };
  const std::vector<Vec> a = run(one), b = run(two);
  for (size_t i = 0; i < a.size(); ++i) CHECK(same_bits(a[i], b[i]));
}

// ---- BatchNorm ----

TEST_CASE("batchnorm: training forward, running statistics, backward, eval", "[image-ops]") {
  CpuOps ops(2);
  BatchNormHyper h;
  h.eps = 1e-3f, h.momentum = 0.2f;
  for (const NormShape& s : {norm_shape(3, 5, 42), norm_shape(7, 4, 1)}) {
    INFO("B=" << s.batch << " C=" << s.channels << " S=" << s.spatial);
    const Vec x = random_vec(s.elems(), 31, -1.0f, 3.0f), dy = random_vec(s.elems(), 32);
    const Vec gamma = random_vec(s.channels, 33, 0.5f, 1.5f), beta = random_vec(s.channels, 34);
    const BnOut o = run_bn<float>(ops, s, x, dy, gamma, beta, h);
    // run_bn's start values of the running statistics and the accumulated gradients.
    const Vec rmean0 = random_vec(s.channels, 91), rvar0 = random_vec(s.channels, 92, 0.5f, 2.0f);
    const Vec dgamma0 = random_vec(s.channels, 93), dbeta0 = random_vec(s.channels, 94);

    std::vector<double> y_ref(x.size()), dx_ref(x.size());
    const std::vector<ChannelRef> ch = channels(s, x);
    for (size_t c = 0; c < ch.size(); ++c) {
      const ChannelRef& r = ch[c];
      const double n = static_cast<double>(r.at.size());
      const double invstd = 1.0 / std::sqrt(r.var + h.eps);
      CHECK(o.mean[c] == Approx(r.mean).margin(1e-6));
      CHECK(o.invstd[c] == Approx(invstd).epsilon(1e-5));
      // Running statistics: the unbiased variance (n / (n - 1)).
      CHECK(o.rmean[c] == Approx((1 - h.momentum) * rmean0[c] + h.momentum * r.mean).margin(1e-6));
      CHECK(o.rvar[c] ==
            Approx((1 - h.momentum) * rvar0[c] + h.momentum * r.var * n / (n - 1)).epsilon(1e-5));
      double sum_dy = 0.0, sum_dy_xhat = 0.0;
      for (size_t k : r.at) {
        const double xhat = (x[k] - r.mean) * invstd;
        y_ref[k] = xhat * gamma[c] + beta[c];
        sum_dy += dy[k];
        sum_dy_xhat += dy[k] * xhat;
      }
      for (size_t k : r.at)
        dx_ref[k] = gamma[c] * invstd *
                    (dy[k] - sum_dy / n - (x[k] - r.mean) * invstd * sum_dy_xhat / n);
      CHECK(o.dgamma[c] == Approx(dgamma0[c] + sum_dy_xhat).margin(1e-5));
      CHECK(o.dbeta[c] == Approx(dbeta0[c] + sum_dy).margin(1e-5));
    }
    CHECK(rel_error(o.y, y_ref) < 1e-6);
    CHECK(rel_error(o.dx, dx_ref) < 1e-5);

    // bf16 storage: close to fp32, statistics from the bf16 values.
    const BnOut b = run_bn<bf16_t>(ops, s, x, dy, gamma, beta, h);
    CHECK(rel_error(b.y, o.y) < 1e-2);
    CHECK(rel_error(b.dx, o.dx) < 2e-2);
    CHECK(rel_error(b.mean, o.mean) < 1e-2);

    // Eval from the running statistics.
    Vec ye(x.size());
    ops.batchnorm_forward_eval(s, cview(x), gamma.data(), beta.data(), o.rmean.data(),
                               o.rvar.data(), h, view(ye));
    std::vector<double> ye_ref(x.size());
    for (size_t c = 0; c < ch.size(); ++c)
      for (size_t k : ch[c].at)
        ye_ref[k] = (x[k] - o.rmean[c]) / std::sqrt(o.rvar[c] + static_cast<double>(h.eps)) *
                        gamma[c] + beta[c];
    CHECK(rel_error(ye, ye_ref) < 1e-6);
  }
}

TEST_CASE("batchnorm: backward without dx still accumulates dgamma and dbeta", "[image-ops]") {
  CpuOps ops(2);
  const NormShape s = norm_shape(2, 3, 10);
  const Vec x = random_vec(s.elems(), 41), dy = random_vec(s.elems(), 42);
  const Vec gamma(3, 1.0f), beta(3, 0.0f);
  const BnOut full = run_bn<float>(ops, s, x, dy, gamma, beta, {});
  Vec mean = full.mean, invstd = full.invstd;
  Vec dgamma = random_vec(3, 93), dbeta = random_vec(3, 94);
  ops.batchnorm_backward(s, cview(dy), cview(x), gamma.data(), mean.data(), invstd.data(), View{},
                         dgamma.data(), dbeta.data(), nullptr);
  CHECK(same_bits(dgamma, full.dgamma));
  CHECK(same_bits(dbeta, full.dbeta));
}

TEST_CASE("batchnorm: 1 and 2 threads give the same bits", "[image-ops]") {
  CpuOps one(1), two(2);
  const NormShape s = norm_shape(5, 7, 33);
  const Vec x = random_vec(s.elems(), 51), dy = random_vec(s.elems(), 52);
  const Vec gamma = random_vec(7, 53), beta = random_vec(7, 54);
  const BnOut a = run_bn<float>(one, s, x, dy, gamma, beta, {});
  const BnOut b = run_bn<float>(two, s, x, dy, gamma, beta, {});
  for (auto m : {&BnOut::y, &BnOut::mean, &BnOut::invstd, &BnOut::rmean, &BnOut::rvar,
                 &BnOut::dx, &BnOut::dgamma, &BnOut::dbeta})
    CHECK(same_bits(a.*m, b.*m));
}

// ---- Shortcut, dropout, augmentation ----

TEST_CASE("shortcut: 16 -> 32 channels at stride 2, and the identity", "[image-ops]") {
  CpuOps ops(2);
  ShortcutShape s;
  s.batch = 3, s.in_channels = 16, s.height = 7, s.width = 7, s.out_channels = 32, s.stride = 2;
  REQUIRE(s.out_height() == 4);
  const Vec x = random_vec(s.x_elems(), 61);
  Vec y(static_cast<size_t>(s.y_elems()), 9.0f);
  ops.shortcut_forward(s, cview(x), view(y));
  Vec y_ref(y.size(), 0.0f);
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t c = 0; c < 16; ++c)
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 4; ++j)
          y_ref[static_cast<size_t>(((b * 32 + c + 8) * 4 + i) * 4 + j)] =
              x[static_cast<size_t>(((b * 16 + c) * 7 + 2 * i) * 7 + 2 * j)];
  CHECK(same_bits(y, y_ref));

  const Vec dy = random_vec(s.y_elems(), 62);
  Vec dx(x.size(), 9.0f), dx_ref(x.size(), 0.0f);
  ops.shortcut_backward(s, cview(dy), view(dx));
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t c = 0; c < 16; ++c)
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 4; ++j)
          dx_ref[static_cast<size_t>(((b * 16 + c) * 7 + 2 * i) * 7 + 2 * j)] =
              dy[static_cast<size_t>(((b * 32 + c + 8) * 4 + i) * 4 + j)];
  CHECK(same_bits(dx, dx_ref));

  Bf yb(y.size());
  ops.shortcut_forward(s, cview(to_bf16(x)), view(yb));
  CHECK(same_bits(to_f32(yb), rounded(y_ref)));

  ShortcutShape id;
  id.batch = 2, id.in_channels = 4, id.height = 5, id.width = 6, id.out_channels = 4, id.stride = 1;
  const Vec xi = random_vec(id.x_elems(), 63);
  Vec yi(xi.size()), dxi(xi.size());
  ops.shortcut_forward(id, cview(xi), view(yi));
  CHECK(same_bits(yi, xi));
  ops.shortcut_backward(id, cview(xi), view(dxi));
  CHECK(same_bits(dxi, xi));
}

TEST_CASE("dropout: the dropout_keep mask, scale 1 / (1 - p), p = 0 is the identity",
          "[image-ops]") {
  CpuOps ops(2);
  const int64_t n = 5000;
  const Vec x = random_vec(n, 71);
  StepCounters counters{12, 3};
  const uint64_t seed = 0x1234567890ull;
  Vec y(static_cast<size_t>(n));
  ops.dropout(cview(x), view(y), 0.0f, seed, 2, &counters);
  CHECK(same_bits(y, x));

  const float p = 0.3f;
  ops.dropout(cview(x), view(y), p, seed, 2, &counters);
  const float scale = 1.0f / (1.0f - p);
  int64_t kept = 0;
  bool match = true;
  for (int64_t i = 0; i < n; ++i) {
    const bool keep = dropout_keep(seed, 12, 2, static_cast<uint64_t>(i), p);
    kept += keep;
    match &= y[static_cast<size_t>(i)] == (keep ? x[static_cast<size_t>(i)] * scale : 0.0f);
  }
  CHECK(match);
  CHECK(std::abs(static_cast<double>(kept) / n - 0.7) < 0.03);

  // Backward is the same op on dy: the same mask, drawn again.
  Vec again(y.size());
  ops.dropout(cview(x), view(again), p, seed, 2, &counters);
  CHECK(same_bits(again, y));
  // Another step or layer: another mask.
  counters.step = 13;
  ops.dropout(cview(x), view(again), p, seed, 2, &counters);
  CHECK_FALSE(same_bits(again, y));
  counters.step = 12;
  ops.dropout(cview(x), view(again), p, seed, 3, &counters);
  CHECK_FALSE(same_bits(again, y));

  // bf16: x * mask rounded once (a dropped negative x gives -0, as torch's product).
  Bf yb(y.size());
  ops.dropout(cview(to_bf16(x)), view(yb), p, seed, 2, &counters);
  const Vec xr = rounded(x);
  bool match_b = true;
  for (int64_t i = 0; i < n; ++i) {
    const bool keep = dropout_keep(seed, 12, 2, static_cast<uint64_t>(i), p);
    match_b &= yb[static_cast<size_t>(i)] ==
               f32_to_bf16(xr[static_cast<size_t>(i)] * (keep ? scale : 0.0f));
  }
  CHECK(match_b);
}

TEST_CASE("augment_crop_flip: crops and flips from augment_draw, padding filled, src kept",
          "[image-ops]") {
  CpuOps ops(2);
  AugmentSpec spec;
  spec.count = 40, spec.channels = 3, spec.height = 6, spec.width = 8, spec.pad = 2;
  spec.fill[0] = -1.5f, spec.fill[1] = -2.5f, spec.fill[2] = -3.5f;
  const int64_t C = 3, H = 6, W = 8, P = 2, image = C * H * W;
  const Vec src = random_vec(spec.count * image, 81);
  const Vec src_copy = src;
  for (bool flip : {true, false}) {
    spec.flip = flip;
    Vec dst(src.size(), 0.0f);
    ops.augment_crop_flip(spec, src.data(), dst.data(), 99, 4);
    CHECK(same_bits(src, src_copy));
    bool all_match = true, any_flip = false, any_fill = false;
    for (int64_t s = 0; s < spec.count; ++s) {
      const AugmentDraw d = augment_draw(99, 4, static_cast<uint32_t>(s), P, flip);
      CHECK((d.top >= 0 && d.top <= 2 * P && d.left >= 0 && d.left <= 2 * P));
      any_flip |= d.flip;
      // The reference: pad with fill, crop at (top, left), then mirror the crop.
      for (int64_t c = 0; c < C; ++c)
        for (int64_t y = 0; y < H; ++y)
          for (int64_t x = 0; x < W; ++x) {
            const int64_t xc = d.flip ? W - 1 - x : x;
            const int64_t r = y + d.top - P, q = xc + d.left - P;
            const bool inside = r >= 0 && r < H && q >= 0 && q < W;
            const float want = inside ? src[static_cast<size_t>(s * image + (c * H + r) * W + q)]
                                      : spec.fill[c];
            any_fill |= !inside;
            all_match &= dst[static_cast<size_t>(s * image + (c * H + y) * W + x)] == want;
          }
    }
    CHECK(all_match);
    CHECK(any_flip == flip);
    CHECK(any_fill);
  }
}

// ---- GEMM and SGD through CpuOps ----

TEST_CASE("gemm (oneDNN fp32 and bf16): matches a double reference; 1 and 2 threads agree",
          "[image-ops]") {
  CpuOps one(1), two(2);
  const int64_t M = 150, N = 33, K = 70;
  const Vec A = random_vec(M * K, 1), B = random_vec(N * K, 2), C0 = random_vec(M * N, 3);
  const auto run = [&](CpuOps& ops, bool bf) {
    Vec C = C0;
    if (bf) {
      Bf a = to_bf16(A), b = to_bf16(B);
      ops.gemm(false, true, M, N, K, 0.5f, cview(a), K, cview(b), K, 1.0f, C.data(), N);
    } else {
      ops.gemm(false, true, M, N, K, 0.5f, cview(A), K, cview(B), K, 1.0f, C.data(), N);
    }
    return C;
  };
  for (bool bf : {false, true}) {
    INFO("bf16 " << bf);
    const Vec a = bf ? rounded(A) : A, b = bf ? rounded(B) : B;
    std::vector<double> ref(C0.begin(), C0.end());
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0.0;
        for (int64_t k = 0; k < K; ++k)
          s += static_cast<double>(a[static_cast<size_t>(i * K + k)]) *
               b[static_cast<size_t>(j * K + k)];
        ref[static_cast<size_t>(i * N + j)] += 0.5 * s;
      }
    const Vec c1 = run(one, bf), c2 = run(two, bf);
    CHECK(rel_error(c1, ref) < 1e-6);
    CHECK(same_bits(c1, c2));
  }
}

TEST_CASE("sgd: the scheduled rate of step counters->step + 1, Nesterov", "[image-ops]") {
  CpuOps ops(2);
  SgdHyper h;
  h.lr = 0.1, h.momentum = 0.9, h.weight_decay = 5e-4, h.nesterov = true;
  h.schedule.kind = ScheduleKind::kMultiStep;
  h.schedule.milestones[0] = 2, h.schedule.n_milestones = 1;
  Vec p = random_vec(100, 1), g = random_vec(100, 2), buf = random_vec(100, 3);
  Vec p_ref = p, buf_ref = buf;
  const StepCounters counters{5, 0};  // step 6: past the milestone, lr 0.01
  ops.sgd(p.data(), g.data(), buf.data(), 100, h, &counters);
  const SgdStepScalars s = sgd_step_scalars(h, 6);
  CHECK(s.lr == static_cast<float>(0.1 * 0.1));
  for (size_t i = 0; i < p.size(); ++i) sgd_update(p_ref[i], g[i], buf_ref[i], s);
  CHECK(same_bits(p, p_ref));
  CHECK(same_bits(buf, buf_ref));
}
