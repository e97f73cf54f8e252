// Naive double-precision references and small helpers for the CPU image-op tests
// (tests/unit/test_cpu_*_ops.cpp): convolution, pooling, BatchNorm.
#pragma once
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

namespace noeira::test::image_ref {

using namespace noeira;

using Vec = std::vector<float>;
using Bf = std::vector<bf16_t>;

inline Vec random_vec(int64_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  Vec v(static_cast<size_t>(n));
  for (float& x : v) x = u(g);
  return v;
}

// Small integers: many ties inside a pooling window.
inline Vec random_ints(int64_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int> u(-2, 2);
  Vec v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(u(g));
  return v;
}

inline Bf to_bf16(const Vec& v) {
  Bf out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = f32_to_bf16(v[i]);
  return out;
}
inline Vec to_f32(const Bf& v) {
  Vec out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = bf16_to_f32(v[i]);
  return out;
}
// The values bf16 storage holds for v.
inline Vec rounded(const Vec& v) { return to_f32(to_bf16(v)); }

inline View view(Vec& v) { return View(v.data(), static_cast<int64_t>(v.size())); }
inline ConstView cview(const Vec& v) { return ConstView(v.data(), static_cast<int64_t>(v.size())); }
inline View view(Bf& v) { return View(v.data(), static_cast<int64_t>(v.size())); }
inline ConstView cview(const Bf& v) { return ConstView(v.data(), static_cast<int64_t>(v.size())); }

// ||got - ref|| / ||ref||.
inline double rel_error(const Vec& got, const std::vector<double>& ref) {
  REQUIRE(got.size() == ref.size());
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    num += (got[i] - ref[i]) * (got[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}
inline double rel_error(const Vec& got, const Vec& ref) {
  return rel_error(got, std::vector<double>(ref.begin(), ref.end()));
}

template <class T>
inline bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// ---- Convolution ----

inline ConvShape conv_shape(int64_t B, int64_t Cin, int64_t H, int64_t W, int64_t Cout, int64_t k,
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

inline std::vector<ConvShape> conv_shapes() {
  return {conv_shape(10, 3, 9, 9, 5, 3, 1, 1, true),    // 'same' padding, 10 = 8 + 2 images
          conv_shape(3, 4, 8, 7, 6, 3, 2, 1, false),    // stride 2, H != W, no bias
          conv_shape(9, 16, 6, 6, 8, 1, 2, 0, true),    // 1x1 stride 2, 2 slabs
          conv_shape(2, 5, 5, 5, 3, 3, 1, 0, true),     // no padding, odd channels
          conv_shape(17, 8, 7, 7, 16, 3, 2, 1, false),   // 3 slabs, odd size, stride 2
          conv_shape(40, 4, 3, 3, 5, 3, 1, 1, true)};    // small images: slabs of 16, 16, 8
}

#define CONV_INFO(s)                                                                      \
  INFO("B=" << s.batch << " Cin=" << s.in_channels << " H=" << s.height << " W=" << s.width \
            << " Cout=" << s.out_channels << " k=" << s.kernel_h << " stride=" << s.stride   \
            << " pad=" << s.pad << " bias=" << s.has_bias)

// ---- Pooling ----

inline PoolShape pool_shape(int64_t B, int64_t C, int64_t H, int64_t W, int64_t k, int64_t stride,
                     int64_t pad) {
  PoolShape s;
  s.batch = B, s.channels = C, s.height = H, s.width = W;
  s.kernel_h = k, s.kernel_w = k, s.stride = stride, s.pad = pad;
  return s;
}

// Calls f(plane, oh, ow, h, w) for each in-bounds input position of each window, windows
// and positions in row-major order.
template <class F>
inline void each_window(const PoolShape& s, const F& f) {
  for (int64_t pl = 0; pl < s.batch * s.channels; ++pl)
    for (int64_t i = 0; i < s.out_height(); ++i)
      for (int64_t j = 0; j < s.out_width(); ++j)
        for (int64_t p = 0; p < s.kernel_h; ++p)
          for (int64_t q = 0; q < s.kernel_w; ++q) {
            const int64_t h = i * s.stride - s.pad + p, w = j * s.stride - s.pad + q;
            if (h >= 0 && h < s.height && w >= 0 && w < s.width) f(pl, i, j, h, w);
          }
}

inline size_t y_index(const PoolShape& s, int64_t plane, int64_t i, int64_t j) {
  return static_cast<size_t>((plane * s.out_height() + i) * s.out_width() + j);
}
inline size_t x_index(const PoolShape& s, int64_t plane, int64_t h, int64_t w) {
  return static_cast<size_t>((plane * s.height + h) * s.width + w);
}

// ---- BatchNorm ----

inline NormShape norm_shape(int64_t B, int64_t C, int64_t S) {
  NormShape s;
  s.batch = B, s.channels = C, s.spatial = S;
  return s;
}

// Per channel, in double: mean, biased variance, and the values' indices.
struct ChannelRef {
  double mean = 0.0, var = 0.0;
  std::vector<size_t> at;
};
inline std::vector<ChannelRef> channels(const NormShape& s, const Vec& x) {
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
inline BnOut run_bn(CpuOps& ops, const NormShape& s, const Vec& x, const Vec& dy, const Vec& gamma,
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
  ops.batchnorm_forward_train(s, v(xs), gamma.data(), beta.data(), h, v(ys), {}, o.mean.data(),
                              o.invstd.data(), o.rmean.data(), o.rvar.data(), ws.data());
  ops.batchnorm_backward(s, v(dys), v(xs), gamma.data(), o.mean.data(), o.invstd.data(), v(dxs),
                         o.dgamma.data(), o.dbeta.data(), ws.data());
  o.y.resize(x.size()), o.dx.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) o.y[i] = load_f32(ys[i]), o.dx[i] = load_f32(dxs[i]);
  return o;
}

}  // namespace noeira::test::image_ref
