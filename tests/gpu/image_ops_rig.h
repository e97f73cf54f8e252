// Helpers for the CUDA image-op tests (tests/gpu/test_cuda_*_ops.cpp): storage
// conversions, random operands and the CPU reference runs they compare against.
#pragma once
#if defined(NOEIRA_WITH_CUDA)
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "kernels/common/augment.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/dispatch.h"
#include "tests/gpu/gpu_rig.h"

namespace noeira::test::image_gpu {

using namespace noeira;
using namespace noeira::test;


// ---- Storage helpers: fp32 values as T (bf16 rounds), T back to fp32 ----

template <class T>
inline std::vector<T> stored(const std::vector<float>& v) {
  std::vector<T> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) store_f32(out[i], v[i]);
  return out;
}

template <class T>
inline View host_view(std::vector<T>& v) {
  return View(v.data(), static_cast<int64_t>(v.size()));
}

template <class T>
constexpr DType dtype_of() {
  return DTypeOf<T>::value;
}

template <class T>
const char* type_name() {
  return std::is_same<T, float>::value ? "fp32" : "bf16";
}

inline size_t floats_for(size_t bytes) { return bytes / sizeof(float) + 1; }

// The same values: the same bits, or both NaN (x86 and the GPU make NaNs with different
// bits, e.g. for inf * 0 or a sum with a NaN). T float or bf16_t.
template <class T>
inline bool same_values(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const float x = load_f32(a[i]), y = load_f32(b[i]);
    if (std::isnan(x) && std::isnan(y)) continue;
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return false;
  }
  return true;
}

// ---- Convolutions ----

inline ConvShape conv_shape(int64_t B, int64_t Cin, int64_t H, int64_t W, int64_t Cout, int64_t kh,
                     int64_t kw, int64_t stride, int64_t pad, bool bias) {
  ConvShape s;
  s.batch = B, s.in_channels = Cin, s.height = H, s.width = W;
  s.out_channels = Cout, s.kernel_h = kh, s.kernel_w = kw, s.stride = stride, s.pad = pad;
  s.has_bias = bias;
  return s;
}

inline std::string text(const ConvShape& s) {
  return std::to_string(s.batch) + "x" + std::to_string(s.in_channels) + "x" +
         std::to_string(s.height) + "x" + std::to_string(s.width) + " -> " +
         std::to_string(s.out_channels) + ", " + std::to_string(s.kernel_h) + "x" +
         std::to_string(s.kernel_w) + " stride " + std::to_string(s.stride) + " pad " +
         std::to_string(s.pad) + (s.has_bias ? " bias" : " no bias");
}

// The models' shapes and odd ones (non-square kernels and images, padding 2, B = 3).
inline std::vector<ConvShape> conv_shapes() {
  return {
      conv_shape(10, 16, 32, 32, 32, 3, 3, 2, 1, false),  // resnet20: 16 -> 32, stride 2
      conv_shape(10, 16, 32, 32, 16, 3, 3, 1, 1, false),  // resnet20: 16 -> 16
      conv_shape(10, 3, 32, 32, 16, 3, 3, 1, 1, false),   // resnet20: the stem
      conv_shape(4, 3, 32, 32, 32, 3, 3, 1, 0, true),     // cifar-cnn: 3 -> 32 valid
      conv_shape(4, 1, 28, 28, 32, 3, 3, 1, 0, true),     // conv2d-mnist: 1 -> 32
      conv_shape(4, 32, 26, 26, 64, 3, 3, 1, 0, true),    // conv2d-mnist: 32 -> 64
      conv_shape(3, 5, 11, 9, 7, 3, 5, 2, 2, true),       // odd everything
      conv_shape(2, 8, 7, 7, 4, 1, 1, 2, 0, false),       // 1x1 stride 2
  };
}

struct ConvCase {
  ConvShape s;
  std::vector<float> x, w, bias, dy, dw0, db0;
  ConvCase(const ConvShape& shape, uint32_t seed)
      : s(shape),
        x(random_floats(static_cast<size_t>(s.x_elems()), seed)),
        w(random_floats(static_cast<size_t>(s.w_elems()), seed + 1)),
        bias(random_floats(static_cast<size_t>(s.out_channels), seed + 2)),
        dy(random_floats(static_cast<size_t>(s.y_elems()), seed + 3)),
        dw0(random_floats(static_cast<size_t>(s.w_elems()), seed + 4)),
        db0(random_floats(static_cast<size_t>(s.out_channels), seed + 5)) {}
};

// The three passes' results as fp32 (y and dx widened from T; dw and db accumulate onto
// dw0 and db0).
struct ConvOut {
  std::vector<float> y, dx, dw, db;
};

template <class T>
inline ConvOut conv_on_cpu(CpuOps& cpu, const ConvCase& c) {
  const ConvShape& s = c.s;
  Result<size_t> bytes = cpu.conv2d_plan(s, dtype_of<T>());
  INFO((bytes ? std::string() : bytes.error().message));
  REQUIRE(bytes.ok());
  std::vector<float> ws(floats_for(*bytes));
  std::vector<T> x = stored<T>(c.x), w = stored<T>(c.w), dy = stored<T>(c.dy);
  std::vector<T> y(static_cast<size_t>(s.y_elems())), dx(static_cast<size_t>(s.x_elems()));
  ConvOut o{{}, {}, c.dw0, c.db0};
  cpu.conv2d_forward(s, host_view(x), host_view(w), s.has_bias ? c.bias.data() : nullptr,
                     host_view(y), ws.data(), *bytes);
  cpu.conv2d_backward_data(s, host_view(dy), host_view(w), host_view(dx), ws.data(), *bytes);
  cpu.conv2d_backward_weights(s, host_view(x), host_view(dy), o.dw.data(),
                              s.has_bias ? o.db.data() : nullptr, ws.data(), *bytes);
  o.y = to_f32(y);
  o.dx = to_f32(dx);
  return o;
}

template <class T>
inline ConvOut conv_on_gpu(Backend& gpu, const ConvCase& c) {
  const ConvShape& s = c.s;
  Result<size_t> bytes = gpu.ops->conv2d_plan(s, dtype_of<T>());
  INFO((bytes ? std::string() : bytes.error().message));
  REQUIRE(bytes.ok());
  std::printf("cuda conv %s %s: %s\n", type_name<T>(), text(s).c_str(),
              cuda_ops(gpu).conv2d_plan_description(s, dtype_of<T>()).c_str());
  DeviceArray<float> ws(gpu, floats_for(*bytes));
  DeviceArray<T> x(gpu, stored<T>(c.x)), w(gpu, stored<T>(c.w)), dy(gpu, stored<T>(c.dy));
  DeviceArray<T> y(gpu, static_cast<size_t>(s.y_elems())), dx(gpu, static_cast<size_t>(s.x_elems()));
  DeviceArray<float> bias(gpu, c.bias), dw(gpu, c.dw0), db(gpu, c.db0);
  gpu.ops->conv2d_forward(s, x.view(), w.view(), s.has_bias ? bias.get() : nullptr, y.view(),
                          ws.get(), *bytes);
  gpu.ops->conv2d_backward_data(s, dy.view(), w.view(), dx.view(), ws.get(), *bytes);
  gpu.ops->conv2d_backward_weights(s, x.view(), dy.view(), dw.get(),
                                   s.has_bias ? db.get() : nullptr, ws.get(), *bytes);
  return {to_f32(y.download()), to_f32(dx.download()), dw.download(), db.download()};
}

inline void check_conv(const ConvOut& got, const ConvOut& want, double y_tol, double dx_tol,
                double dw_tol, double db_tol) {
  const double ey = rel_error(got.y, want.y), edx = rel_error(got.dx, want.dx),
               edw = rel_error(got.dw, want.dw), edb = rel_error(got.db, want.db);
  std::printf("  errors: y %.2e, dx %.2e, dw %.2e, db %.2e\n", ey, edx, edw, edb);
  CHECK(ey < y_tol);
  CHECK(edx < dx_tol);
  CHECK(edw < dw_tol);
  CHECK(edb < db_tol);
}

inline bool same(const ConvOut& a, const ConvOut& b) {
  return same_bytes(a.y, b.y) && same_bytes(a.dx, b.dx) && same_bytes(a.dw, b.dw) &&
         same_bytes(a.db, b.db);
}

// ---- Pooling ----

inline PoolShape pool_shape(int64_t B, int64_t C, int64_t H, int64_t W, int64_t k, int64_t stride,
                     int64_t pad) {
  PoolShape s;
  s.batch = B, s.channels = C, s.height = H, s.width = W;
  s.kernel_h = k, s.kernel_w = k, s.stride = stride, s.pad = pad;
  return s;
}

inline std::vector<PoolShape> pool_shapes() {
  return {
      pool_shape(4, 32, 24, 24, 2, 2, 0),  // conv2d-mnist
      pool_shape(4, 32, 30, 30, 2, 2, 0),  // cifar-cnn
      pool_shape(2, 3, 7, 9, 2, 2, 0),     // odd sizes: uncovered last row and column
      pool_shape(2, 3, 9, 8, 3, 2, 1),     // overlapping windows with padding
      pool_shape(2, 5, 6, 6, 3, 1, 1),     // stride 1: up to 9 windows per input
      pool_shape(3, 4, 8, 8, 8, 1, 0),     // global (resnet20's average pool)
  };
}

// Values with many ties (small integers), a few -inf and NaN: the first-maximum rule.
inline std::vector<float> pool_input(size_t n, uint32_t seed, bool specials) {
  std::vector<float> v = random_floats(n, seed, -2.5f, 2.5f);
  for (float& x : v) x = std::round(x);
  if (specials)
    for (size_t i = 5; i < n; i += 97) v[i] = i % 2 ? std::numeric_limits<float>::quiet_NaN()
                                                    : -std::numeric_limits<float>::infinity();
  return v;
}

// ---- BatchNorm ----

inline NormShape norm_shape(int64_t B, int64_t C, int64_t S) {
  NormShape s;
  s.batch = B, s.channels = C, s.spatial = S;
  return s;
}

inline std::vector<NormShape> norm_shapes() {
  return {
      norm_shape(10, 16, 32 * 32),  // resnet20, several chunks per channel
      norm_shape(10, 64, 8 * 8),    // resnet20's last stage
      norm_shape(3, 5, 7),          // odd, one short chunk
      norm_shape(64, 3, 1024),      // 65536 values per channel: 32 chunks of 2048
      norm_shape(130, 2, 1031),     // 134030 per channel: the most (64) chunks, the last short
      norm_shape(1, 2, 1),          // one value per channel (biased variance 0)
  };
}

// ---- Shortcut ----

inline ShortcutShape shortcut_shape(int64_t B, int64_t Cin, int64_t H, int64_t W, int64_t Cout,
                             int64_t stride) {
  ShortcutShape s;
  s.batch = B, s.in_channels = Cin, s.height = H, s.width = W;
  s.out_channels = Cout, s.stride = stride;
  return s;
}

}  // namespace noeira::test::image_gpu
#endif
