// The CUDA image ops (kernels/ops.h: convolutions through cuDNN, pooling, BatchNorm, the
// option-A shortcut, dropout, augmentation, SGD's schedule) against the CPU reference
// (CpuOps) on random inputs, at the shapes of resnet20, cifar-cnn and conv2d-mnist plus
// odd ones. Errors are normwise relative (gpu_rig.h): convolutions < 1e-4 in fp32 with
// TF32 off (cuDNN may pick Winograd or FFT), 4e-3 with it on, 1e-2 for bf16 outputs;
// the ops whose every element is computed in the same order on both backends (pooling,
// shortcut, dropout, augmentation) must match bit for bit. Every op also repeats bit for
// bit, and a captured graph replays the eager bits. The chosen cuDNN algorithms and the
// measured errors are printed, to calibrate the bounds on new hardware.
#include <catch2/catch.hpp>

#include "tests/support/gpu_guard.h"

#if defined(NOEIRA_WITH_CUDA)
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "kernels/common/augment.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/dispatch.h"
#include "tests/gpu/gpu_rig.h"
#endif

using namespace noeira;
using namespace noeira::test;

#if defined(NOEIRA_WITH_CUDA)
namespace {

// ---- Storage helpers: fp32 values as T (bf16 rounds), T back to fp32 ----

template <class T>
std::vector<T> stored(const std::vector<float>& v) {
  std::vector<T> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) store_f32(out[i], v[i]);
  return out;
}

template <class T>
View host_view(std::vector<T>& v) {
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

size_t floats_for(size_t bytes) { return bytes / sizeof(float) + 1; }

// The same values: the same bits, or both NaN (x86 and the GPU make NaNs with different
// bits, e.g. for inf * 0 or a sum with a NaN). T float or bf16_t.
template <class T>
bool same_values(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const float x = load_f32(a[i]), y = load_f32(b[i]);
    if (std::isnan(x) && std::isnan(y)) continue;
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return false;
  }
  return true;
}

CudaOps& cuda_ops(Backend& gpu) {
  auto* ops = dynamic_cast<CudaOps*>(gpu.ops.get());
  REQUIRE(ops != nullptr);
  return *ops;
}

// ---- Convolutions ----

ConvShape conv_shape(int64_t B, int64_t Cin, int64_t H, int64_t W, int64_t Cout, int64_t kh,
                     int64_t kw, int64_t stride, int64_t pad, bool bias) {
  ConvShape s;
  s.batch = B, s.in_channels = Cin, s.height = H, s.width = W;
  s.out_channels = Cout, s.kernel_h = kh, s.kernel_w = kw, s.stride = stride, s.pad = pad;
  s.has_bias = bias;
  return s;
}

std::string text(const ConvShape& s) {
  return std::to_string(s.batch) + "x" + std::to_string(s.in_channels) + "x" +
         std::to_string(s.height) + "x" + std::to_string(s.width) + " -> " +
         std::to_string(s.out_channels) + ", " + std::to_string(s.kernel_h) + "x" +
         std::to_string(s.kernel_w) + " stride " + std::to_string(s.stride) + " pad " +
         std::to_string(s.pad) + (s.has_bias ? " bias" : " no bias");
}

// The models' shapes and odd ones (non-square kernels and images, padding 2, B = 3).
std::vector<ConvShape> conv_shapes() {
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
ConvOut conv_on_cpu(CpuOps& cpu, const ConvCase& c) {
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
ConvOut conv_on_gpu(Backend& gpu, const ConvCase& c) {
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

void check_conv(const ConvOut& got, const ConvOut& want, double y_tol, double dx_tol,
                double dw_tol, double db_tol) {
  const double ey = rel_error(got.y, want.y), edx = rel_error(got.dx, want.dx),
               edw = rel_error(got.dw, want.dw), edb = rel_error(got.db, want.db);
  std::printf("  errors: y %.2e, dx %.2e, dw %.2e, db %.2e\n", ey, edx, edw, edb);
  CHECK(ey < y_tol);
  CHECK(edx < dx_tol);
  CHECK(edw < dw_tol);
  CHECK(edb < db_tol);
}

bool same(const ConvOut& a, const ConvOut& b) {
  return same_bytes(a.y, b.y) && same_bytes(a.dx, b.dx) && same_bytes(a.dw, b.dw) &&
         same_bytes(a.db, b.db);
}

// ---- Pooling ----

PoolShape pool_shape(int64_t B, int64_t C, int64_t H, int64_t W, int64_t k, int64_t stride,
                     int64_t pad) {
  PoolShape s;
  s.batch = B, s.channels = C, s.height = H, s.width = W;
  s.kernel_h = k, s.kernel_w = k, s.stride = stride, s.pad = pad;
  return s;
}

std::vector<PoolShape> pool_shapes() {
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
std::vector<float> pool_input(size_t n, uint32_t seed, bool specials) {
  std::vector<float> v = random_floats(n, seed, -2.5f, 2.5f);
  for (float& x : v) x = std::round(x);
  if (specials)
    for (size_t i = 5; i < n; i += 97) v[i] = i % 2 ? std::numeric_limits<float>::quiet_NaN()
                                                    : -std::numeric_limits<float>::infinity();
  return v;
}

// ---- BatchNorm ----

NormShape norm_shape(int64_t B, int64_t C, int64_t S) {
  NormShape s;
  s.batch = B, s.channels = C, s.spatial = S;
  return s;
}

std::vector<NormShape> norm_shapes() {
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

ShortcutShape shortcut_shape(int64_t B, int64_t Cin, int64_t H, int64_t W, int64_t Cout,
                             int64_t stride) {
  ShortcutShape s;
  s.batch = B, s.in_channels = Cin, s.height = H, s.width = W;
  s.out_channels = Cout, s.stride = stride;
  return s;
}

}  // namespace
#endif

// ---------------------------------------------------------------------------------------

TEST_CASE("cuda: conv2d's three passes equal the CPU in fp32 (TF32 off) and repeat bit for bit",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend(/*tf32=*/false);
  CpuOps cpu(1);
  uint32_t seed = 100;
  for (const ConvShape& s : conv_shapes()) {
    INFO(text(s));
    const ConvCase c(s, seed);
    seed += 10;
    const ConvOut want = conv_on_cpu<float>(cpu, c);
    const ConvOut got = conv_on_gpu<float>(gpu, c);
    check_conv(got, want, 1e-4, 1e-4, 1e-4, 1e-5);
    CHECK(same(got, conv_on_gpu<float>(gpu, c)));
  }
#endif
}

TEST_CASE("cuda: conv2d with TF32 stays within TF32's bound of the CPU", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend(/*tf32=*/true);
  CpuOps cpu(1);
  uint32_t seed = 200;
  for (const ConvShape& s : conv_shapes()) {
    INFO(text(s));
    const ConvCase c(s, seed);
    seed += 10;
    // TF32 rounds each operand to 10 mantissa bits (gpu_rig.h's GEMM bound); cuDNN's
    // Winograd and FFT algorithms round their transformed operands too: 4e-3 for all.
    const double tol = 4e-3;
    check_conv(conv_on_gpu<float>(gpu, c), conv_on_cpu<float>(cpu, c), tol, tol, tol, 1e-5);
  }
#endif
}

TEST_CASE("cuda: bf16 conv2d equals the CPU's bf16 convolution within bf16 rounding", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  uint32_t seed = 300;
  for (const ConvShape& s : conv_shapes()) {
    INFO(text(s));
    const ConvCase c(s, seed);
    seed += 10;
    const ConvOut got = conv_on_gpu<bf16_t>(gpu, c);
    // y and dx are rounded to bf16 (2^-9 relative) by each backend; dw and db are fp32 sums
    // of exact products of the same bf16 values, in other orders (3e-3: room for a
    // Winograd or FFT algorithm's rounded transforms in the widened TF32 pass).
    check_conv(got, conv_on_cpu<bf16_t>(cpu, c), 1e-2, 1e-2, 3e-3, 1e-5);
    CHECK(same(got, conv_on_gpu<bf16_t>(gpu, c)));
  }
#endif
}

TEST_CASE("cuda: conv2d_plan rejects bad shapes and dtypes and plans a shape once", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CHECK_FALSE(gpu.ops->conv2d_plan(conv_shape(1, 1, 2, 2, 2, 5, 5, 1, 1, true), DType::kF32).ok());
  CHECK_FALSE(gpu.ops->conv2d_plan(conv_shape(0, 1, 8, 8, 2, 3, 3, 1, 0, true), DType::kF32).ok());
  CHECK_FALSE(gpu.ops->conv2d_plan(conv_shape(1, 1, 8, 8, 2, 3, 3, 1, 0, true), DType::kI32).ok());
  const ConvShape s = conv_shape(2, 3, 8, 8, 4, 3, 3, 1, 1, true);
  Result<size_t> a = gpu.ops->conv2d_plan(s, DType::kF32);
  REQUIRE(a.ok());
  Result<size_t> b = gpu.ops->conv2d_plan(s, DType::kF32);  // planned once, same answer
  REQUIRE(b.ok());
  CHECK(*a == *b);
  CHECK(cuda_ops(gpu).conv2d_plan_description(s, DType::kBF16).empty());
  CHECK_FALSE(cuda_ops(gpu).conv2d_plan_description(s, DType::kF32).empty());
#endif
}

TEST_CASE("cuda: maxpool2d and avgpool2d equal the CPU bit for bit", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  uint32_t seed = 400;
  for (const PoolShape& s : pool_shapes()) {
    for (bool bf16 : {false, true}) {
      INFO("pool " << s.batch << "x" << s.channels << "x" << s.height << "x" << s.width << " k "
                   << s.kernel_h << " stride " << s.stride << " pad " << s.pad << " bf16 "
                   << bf16);
      const size_t nx = static_cast<size_t>(s.x_elems()), ny = static_cast<size_t>(s.y_elems());
      const std::vector<float> xf = pool_input(nx, seed++, !bf16);
      const std::vector<float> dyf = random_floats(ny, seed++);
      const auto run = [&](auto tag) {
        using T = typename decltype(tag)::type;
        std::vector<T> x = stored<T>(xf), dy = stored<T>(dyf);
        // CPU
        std::vector<T> y(ny), dx(nx), ay(ny), adx(nx);
        std::vector<int32_t> arg(ny);
        cpu.maxpool2d_forward(s, host_view(x), host_view(y), arg.data());
        cpu.maxpool2d_backward(s, host_view(dy), arg.data(), host_view(dx));
        cpu.avgpool2d_forward(s, host_view(x), host_view(ay));
        cpu.avgpool2d_backward(s, host_view(dy), host_view(adx));
        // GPU, twice
        for (int rep = 0; rep < 2; ++rep) {
          DeviceArray<T> gx(gpu, x), gdy(gpu, dy), gy(gpu, ny), gdx(gpu, nx), gay(gpu, ny),
              gadx(gpu, nx);
          DeviceArray<int32_t> garg(gpu, ny);
          gpu.ops->maxpool2d_forward(s, gx.view(), gy.view(), garg.get());
          gpu.ops->maxpool2d_backward(s, gdy.view(), garg.get(), gdx.view());
          gpu.ops->avgpool2d_forward(s, gx.view(), gay.view());
          gpu.ops->avgpool2d_backward(s, gdy.view(), gadx.view());
          CHECK(same_values(gy.download(), y));
          CHECK(garg.download() == arg);
          CHECK(same_values(gdx.download(), dx));
          CHECK(same_values(gay.download(), ay));
          CHECK(same_values(gadx.download(), adx));
        }
      };
      if (bf16)
        run(StorageTag<bf16_t>{});
      else
        run(StorageTag<float>{});
    }
  }
#endif
}

TEST_CASE("cuda: batchnorm training, eval and backward equal the CPU and repeat bit for bit",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  uint32_t seed = 500;
  BatchNormHyper h;
  h.momentum = 0.1f;
  h.eps = 1e-5f;
  for (const NormShape& s : norm_shapes()) {
    for (bool bf16 : {false, true}) {
      INFO("batchnorm " << s.batch << "x" << s.channels << "x" << s.spatial << " bf16 " << bf16);
      const size_t n = static_cast<size_t>(s.elems()), C = static_cast<size_t>(s.channels);
      const std::vector<float> xf = random_floats(n, seed++, -1.0f, 3.0f);  // mean != 0
      const std::vector<float> dyf = random_floats(n, seed++);
      const std::vector<float> gamma = random_floats(C, seed++, 0.5f, 1.5f);
      const std::vector<float> beta = random_floats(C, seed++);
      const std::vector<float> rm0 = random_floats(C, seed++), rv0 = random_floats(C, seed++, 0.5f, 2.0f);
      const std::vector<float> dg0 = random_floats(C, seed++), db0 = random_floats(C, seed++);
      const double out_tol = bf16 ? 1e-2 : 1e-5;  // bf16: y and dx rounded by each backend
      const auto run = [&](auto tag) {
        using T = typename decltype(tag)::type;
        std::vector<T> x = stored<T>(xf), dy = stored<T>(dyf);
        std::vector<T> y(n), ye(n), dx(n);
        std::vector<float> mean(C), invstd(C), rm = rm0, rv = rv0, dg = dg0, db = db0;
        cpu.batchnorm_forward_train(s, host_view(x), gamma.data(), beta.data(), h, host_view(y),
                                    mean.data(), invstd.data(), rm.data(), rv.data(), nullptr);
        cpu.batchnorm_forward_eval(s, host_view(x), gamma.data(), beta.data(), rm.data(),
                                   rv.data(), h, host_view(ye));
        cpu.batchnorm_backward(s, host_view(dy), host_view(x), gamma.data(), mean.data(),
                               invstd.data(), host_view(dx), dg.data(), db.data(), nullptr);
        std::vector<std::vector<float>> first;
        for (int rep = 0; rep < 2; ++rep) {
          DeviceArray<float> ws(gpu, floats_for(gpu.ops->batchnorm_workspace_bytes(s)));
          DeviceArray<T> gx(gpu, x), gdy(gpu, dy), gy(gpu, n), gye(gpu, n), gdx(gpu, n);
          DeviceArray<float> gg(gpu, gamma), gb(gpu, beta), gmean(gpu, C), ginv(gpu, C),
              grm(gpu, rm0), grv(gpu, rv0), gdg(gpu, dg0), gdb(gpu, db0);
          gpu.ops->batchnorm_forward_train(s, gx.view(), gg.get(), gb.get(), h, gy.view(),
                                           gmean.get(), ginv.get(), grm.get(), grv.get(),
                                           ws.get());
          gpu.ops->batchnorm_forward_eval(s, gx.view(), gg.get(), gb.get(), grm.get(), grv.get(),
                                          h, gye.view());
          gpu.ops->batchnorm_backward(s, gdy.view(), gx.view(), gg.get(), gmean.get(), ginv.get(),
                                      gdx.view(), gdg.get(), gdb.get(), ws.get());
          std::vector<std::vector<float>> got = {
              to_f32(gy.download()), to_f32(gye.download()), to_f32(gdx.download()),
              gmean.download(),      ginv.download(),       grm.download(),
              grv.download(),        gdg.download(),        gdb.download()};
          CHECK(rel_error(got[0], to_f32(y)) < out_tol);
          CHECK(rel_error(got[1], to_f32(ye)) < out_tol);
          CHECK(rel_error(got[2], to_f32(dx)) < (bf16 ? 1e-2 : 1e-4));
          CHECK(rel_error(got[3], mean) < 1e-6);
          CHECK(rel_error(got[4], invstd) < 1e-6);
          CHECK(rel_error(got[5], rm) < 1e-6);
          CHECK(rel_error(got[6], rv) < 1e-6);
          CHECK(rel_error(got[7], dg) < 1e-5);
          CHECK(rel_error(got[8], db) < 1e-5);
          if (rep == 0)
            first = got;
          else
            for (size_t i = 0; i < got.size(); ++i) CHECK(same_bytes(got[i], first[i]));
        }
      };
      if (bf16)
        run(StorageTag<bf16_t>{});
      else
        run(StorageTag<float>{});
    }
  }
#endif
}

TEST_CASE("cuda: batchnorm_backward without dx accumulates only dgamma and dbeta", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  const NormShape s = norm_shape(4, 3, 25);
  const size_t n = static_cast<size_t>(s.elems()), C = 3;
  DeviceArray<float> ws(gpu, floats_for(gpu.ops->batchnorm_workspace_bytes(s)));
  DeviceArray<float> x(gpu, random_floats(n, 1)), dy(gpu, random_floats(n, 2)),
      g(gpu, std::vector<float>(C, 1.0f)), mean(gpu, std::vector<float>(C, 0.1f)),
      inv(gpu, std::vector<float>(C, 2.0f)), dg(gpu, C), db(gpu, C);
  gpu.ops->batchnorm_backward(s, dy.view(), x.view(), g.get(), mean.get(), inv.get(), View{},
                              dg.get(), db.get(), ws.get());
  const std::vector<float> dyh = dy.download();
  std::vector<double> sums(C, 0.0);
  for (size_t i = 0; i < n; ++i) sums[(i / 25) % C] += dyh[i];
  const std::vector<float> got = db.download();
  for (size_t c = 0; c < C; ++c) CHECK(std::abs(got[c] - sums[c]) < 1e-5);
#endif
}

TEST_CASE("cuda: batchnorm over more channels than a grid's y dimension takes equals the CPU",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  // 70001 channels > 65535 = gridDim.y's limit: each channel-sum block then loops over
  // channels y, y + 65535 (channel_sum.cuh).
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  const NormShape s = norm_shape(2, 70001, 3);
  const size_t n = static_cast<size_t>(s.elems()), C = static_cast<size_t>(s.channels);
  const std::vector<float> x = random_floats(n, 700, -1.0f, 3.0f), dy = random_floats(n, 701);
  const std::vector<float> gamma = random_floats(C, 702, 0.5f, 1.5f), beta = random_floats(C, 703);
  BatchNormHyper h;
  std::vector<float> y(n), dx(n), mean(C), inv(C), rm(C, 0.0f), rv(C, 1.0f), dg(C, 0.0f),
      db(C, 0.0f);
  cpu.batchnorm_forward_train(s, view_of(x), gamma.data(), beta.data(), h, view_of(y),
                              mean.data(), inv.data(), rm.data(), rv.data(), nullptr);
  cpu.batchnorm_backward(s, view_of(dy), view_of(x), gamma.data(), mean.data(), inv.data(),
                         view_of(dx), dg.data(), db.data(), nullptr);
  DeviceArray<float> ws(gpu, floats_for(gpu.ops->batchnorm_workspace_bytes(s)));
  DeviceArray<float> gx(gpu, x), gdy(gpu, dy), gy(gpu, n), gdx(gpu, n), gg(gpu, gamma),
      gb(gpu, beta), gmean(gpu, C), ginv(gpu, C), grm(gpu, std::vector<float>(C, 0.0f)),
      grv(gpu, std::vector<float>(C, 1.0f)), gdg(gpu, C), gdb(gpu, C);
  gpu.ops->batchnorm_forward_train(s, gx.view(), gg.get(), gb.get(), h, gy.view(), gmean.get(),
                                   ginv.get(), grm.get(), grv.get(), ws.get());
  gpu.ops->batchnorm_backward(s, gdy.view(), gx.view(), gg.get(), gmean.get(), ginv.get(),
                              gdx.view(), gdg.get(), gdb.get(), ws.get());
  CHECK(rel_error(gy.download(), y) < 1e-5);
  CHECK(rel_error(gmean.download(), mean) < 1e-6);
  CHECK(rel_error(ginv.download(), inv) < 1e-6);
  CHECK(rel_error(grm.download(), rm) < 1e-6);
  CHECK(rel_error(grv.download(), rv) < 1e-6);
  CHECK(rel_error(gdx.download(), dx) < 1e-4);
  CHECK(rel_error(gdg.download(), dg) < 1e-5);
  CHECK(rel_error(gdb.download(), db) < 1e-5);
#endif
}

TEST_CASE("cuda: shortcut, dropout and augment_crop_flip equal the CPU bit for bit", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  uint32_t seed = 600;
  SECTION("shortcut") {
    for (const ShortcutShape& s :
         {shortcut_shape(10, 16, 32, 32, 32, 2), shortcut_shape(2, 16, 9, 9, 16, 1),
          shortcut_shape(3, 3, 7, 5, 8, 2), shortcut_shape(2, 4, 5, 6, 9, 3)}) {
      INFO("shortcut " << s.in_channels << " -> " << s.out_channels << " " << s.height << "x"
                       << s.width << " stride " << s.stride);
      const std::vector<float> x = random_floats(static_cast<size_t>(s.x_elems()), seed++);
      const std::vector<float> dy = random_floats(static_cast<size_t>(s.y_elems()), seed++);
      std::vector<float> y(dy.size()), dx(x.size());
      cpu.shortcut_forward(s, view_of(x), view_of(y));
      cpu.shortcut_backward(s, view_of(dy), view_of(dx));
      DeviceArray<float> gx(gpu, x), gdy(gpu, dy), gy(gpu, y.size()), gdx(gpu, dx.size());
      gpu.ops->shortcut_forward(s, gx.view(), gy.view());
      gpu.ops->shortcut_backward(s, gdy.view(), gdx.view());
      CHECK(same_bytes(gy.download(), y));
      CHECK(same_bytes(gdx.download(), dx));
      // bf16
      DeviceArray<bf16_t> bx(gpu, to_bf16(x)), bdy(gpu, to_bf16(dy)), by(gpu, y.size()),
          bdx(gpu, dx.size());
      gpu.ops->shortcut_forward(s, bx.view(), by.view());
      gpu.ops->shortcut_backward(s, bdy.view(), bdx.view());
      CHECK(by.download() == to_bf16(y));  // copies and zeros: exact
      CHECK(bdx.download() == to_bf16(dx));
    }
  }
  SECTION("dropout") {
    for (int64_t n : {int64_t{1}, int64_t{1003}, int64_t{40000}}) {
      for (float p : {0.0f, 0.1f, 0.5f}) {
        INFO("dropout n " << n << " p " << p);
        std::vector<float> x = random_floats(static_cast<size_t>(n), seed++);
        if (n > 10) x[3] = -0.0f, x[7] = std::numeric_limits<float>::infinity();
        StepCounters c_cpu{5, 2};
        DeviceArray<StepCounters> c_gpu(gpu, std::vector<StepCounters>{c_cpu});
        std::vector<float> y(x.size());
        cpu.dropout(view_of(x), view_of(y), p, 42, 3, &c_cpu);
        DeviceArray<float> gx(gpu, x), gy(gpu, x.size());
        gpu.ops->dropout(gx.view(), gy.view(), p, 42, 3, c_gpu.get());
        CHECK(same_values(gy.download(), y));  // a dropped inf is NaN on both
        DeviceArray<bf16_t> bx(gpu, to_bf16(x)), by(gpu, x.size());
        std::vector<bf16_t> bxh = to_bf16(x), byh(x.size());
        cpu.dropout(view_of(bxh), view_of(byh), p, 42, 3, &c_cpu);
        gpu.ops->dropout(bx.view(), by.view(), p, 42, 3, c_gpu.get());
        CHECK(same_values(by.download(), byh));
        // The next step draws another mask, read from the device counter.
        if (p > 0.0f && n > 100) {
          gpu.ops->advance(c_gpu.get());
          gpu.ops->dropout(gx.view(), gy.view(), p, 42, 3, c_gpu.get());
          CHECK_FALSE(same_bytes(gy.download(), y));
        }
      }
    }
  }
  SECTION("augment_crop_flip") {
    AugmentSpec spec;
    spec.count = 37, spec.channels = 3, spec.height = 32, spec.width = 32, spec.pad = 4;
    spec.flip = true;
    spec.fill[0] = -1.5f, spec.fill[1] = 0.25f, spec.fill[2] = 2.0f;
    const size_t n = static_cast<size_t>(spec.count * spec.channels * spec.height * spec.width);
    const std::vector<float> src = random_floats(n, seed++);
    for (uint32_t epoch : {0u, 1u, 7u}) {
      for (bool flip : {true, false}) {
        spec.flip = flip;
        std::vector<float> dst(n);
        cpu.augment_crop_flip(spec, src.data(), dst.data(), 99, epoch);
        DeviceArray<float> gs(gpu, src), gd(gpu, n);
        gpu.ops->augment_crop_flip(spec, gs.get(), gd.get(), 99, epoch);
        CHECK(same_bytes(gd.download(), dst));
        CHECK(same_bytes(gs.download(), src));  // never modified
      }
    }
  }
#endif
}

TEST_CASE("cuda: sgd follows its schedule and Nesterov from the device counter like the CPU",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  const int64_t n = 1027;
  SgdHyper h;
  h.lr = 0.1;
  h.momentum = 0.9;
  h.weight_decay = 5e-4;
  h.nesterov = true;
  h.schedule.kind = ScheduleKind::kMultiStep;
  h.schedule.warmup_steps = 2;
  h.schedule.milestones[0] = 1;
  h.schedule.milestones[1] = 3;
  h.schedule.n_milestones = 2;
  std::vector<float> p = random_floats(static_cast<size_t>(n), 7), buf(static_cast<size_t>(n));
  DeviceArray<float> gp(gpu, p), gbuf(gpu, buf), gg(gpu, static_cast<size_t>(n));
  StepCounters c{0, 0};
  DeviceArray<StepCounters> gc(gpu, std::vector<StepCounters>{c});
  for (int step = 0; step < 7; ++step) {
    const std::vector<float> g = random_floats(static_cast<size_t>(n), 100 + step);
    gg.upload(g);
    cpu.sgd(p.data(), g.data(), buf.data(), n, h, &c);
    gpu.ops->sgd(gp.get(), gg.get(), gbuf.get(), n, h, gc.get());
    cpu.advance(&c);
    gpu.ops->advance(gc.get());
  }
  CHECK(max_abs_diff(gp.download(), p) <= 1e-6);
  CHECK(max_abs_diff(gbuf.download(), buf) <= 1e-6);
#endif
}

TEST_CASE("cuda: sgd on buffers off 16-byte alignment (the scalar path) equals the CPU",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  // Element 1 onwards of each buffer: 4-byte aligned only, so sgd_kernel takes its scalar
  // loop (launch_sgd's vec4 needs all three pointers 16-byte aligned); element 0 is left
  // alone by both backends.
  Backend gpu = gpu_backend();
  CpuOps cpu(1);
  const int64_t n = 1027;
  const size_t m = static_cast<size_t>(n + 1);
  SgdHyper h;
  h.lr = 0.05;
  h.momentum = 0.9;
  h.weight_decay = 1e-4;
  h.schedule.kind = ScheduleKind::kCosine;
  h.schedule.cosine_steps = 5;
  std::vector<float> p = random_floats(m, 11), buf(m, 0.0f);
  DeviceArray<float> gp(gpu, p), gbuf(gpu, buf), gg(gpu, m);
  StepCounters c{0, 0};
  DeviceArray<StepCounters> gc(gpu, std::vector<StepCounters>{c});
  for (int step = 0; step < 6; ++step) {
    const std::vector<float> g = random_floats(m, 200 + step);
    gg.upload(g);
    cpu.sgd(p.data() + 1, g.data() + 1, buf.data() + 1, n, h, &c);
    gpu.ops->sgd(gp.get() + 1, gg.get() + 1, gbuf.get() + 1, n, h, gc.get());
    cpu.advance(&c);
    gpu.ops->advance(gc.get());
  }
  CHECK(max_abs_diff(gp.download(), p) <= 1e-6);
  CHECK(max_abs_diff(gbuf.download(), buf) <= 1e-6);
#endif
}

TEST_CASE("cuda: a captured conv + batchnorm + maxpool step replays the eager bits", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  for (bool bf16 : {false, true}) {
    INFO("bf16 " << bf16);
    Backend gpu = gpu_backend();
    const DType dt = bf16 ? DType::kBF16 : DType::kF32;
    const ConvShape cs = conv_shape(10, 16, 32, 32, 32, 3, 3, 1, 1, true);
    const NormShape ns = norm_shape(cs.batch, cs.out_channels, 32 * 32);
    const PoolShape ps = pool_shape(cs.batch, cs.out_channels, 32, 32, 2, 2, 0);
    Result<size_t> conv_bytes = gpu.ops->conv2d_plan(cs, dt);
    REQUIRE(conv_bytes.ok());
    const size_t ny = static_cast<size_t>(cs.y_elems()), nx = static_cast<size_t>(cs.x_elems()),
                 np = static_cast<size_t>(ps.y_elems()), C = static_cast<size_t>(cs.out_channels);
    const auto run = [&](auto tag) {
      using T = typename decltype(tag)::type;
      DeviceArray<float> conv_ws(gpu, floats_for(*conv_bytes));
      DeviceArray<float> bn_ws(gpu, floats_for(gpu.ops->batchnorm_workspace_bytes(ns)));
      DeviceArray<T> x(gpu, stored<T>(random_floats(nx, 1))),
          w(gpu, stored<T>(random_floats(static_cast<size_t>(cs.w_elems()), 2))), y(gpu, ny),
          z(gpu, ny), pooled(gpu, np), dpooled(gpu, stored<T>(random_floats(np, 3))), dz(gpu, ny),
          dy(gpu, ny), dx(gpu, nx);
      DeviceArray<int32_t> arg(gpu, np);
      DeviceArray<float> bias(gpu, random_floats(C, 4)), gamma(gpu, random_floats(C, 5)),
          beta(gpu, random_floats(C, 6)), mean(gpu, C), inv(gpu, C), rm(gpu, C), rv(gpu, C),
          dw(gpu, static_cast<size_t>(cs.w_elems())), db(gpu, C), dg(gpu, C), dbeta(gpu, C);
      const std::vector<float> ones(C, 1.0f);
      BatchNormHyper h;
      // Accumulated and in-place state back to its start, outside any capture.
      const auto reset = [&] {
        rm.upload(std::vector<float>(C, 0.0f));
        rv.upload(ones);
        for (auto* a : {&dw, &db, &dg, &dbeta}) gpu.ops->fill_zero(a->get(), a->size() * 4);
      };
      const auto step = [&] {
        gpu.ops->conv2d_forward(cs, x.view(), w.view(), bias.get(), y.view(), conv_ws.get(),
                                *conv_bytes);
        gpu.ops->batchnorm_forward_train(ns, y.view(), gamma.get(), beta.get(), h, z.view(),
                                         mean.get(), inv.get(), rm.get(), rv.get(), bn_ws.get());
        gpu.ops->maxpool2d_forward(ps, z.view(), pooled.view(), arg.get());
        gpu.ops->maxpool2d_backward(ps, dpooled.view(), arg.get(), dz.view());
        gpu.ops->batchnorm_backward(ns, dz.view(), y.view(), gamma.get(), mean.get(), inv.get(),
                                    dy.view(), dg.get(), dbeta.get(), bn_ws.get());
        gpu.ops->conv2d_backward_data(cs, dy.view(), w.view(), dx.view(), conv_ws.get(),
                                      *conv_bytes);
        gpu.ops->conv2d_backward_weights(cs, x.view(), dy.view(), dw.get(), db.get(),
                                         conv_ws.get(), *conv_bytes);
      };
      const auto results = [&] {
        return std::vector<std::vector<float>>{
            to_f32(pooled.download()), to_f32(dx.download()), dw.download(), db.download(),
            dg.download(),             dbeta.download(),      rm.download(), rv.download()};
      };
      reset();
      step();  // eager, which also loads every kernel before the capture
      const std::vector<std::vector<float>> eager = results();
      reset();
      step();  // eager again: deterministic
      const std::vector<std::vector<float>> again = results();
      reset();
      REQUIRE(gpu.ops->begin_capture().ok());
      step();
      Result<std::unique_ptr<StepGraph>> graph = gpu.ops->end_capture();
      INFO((graph ? std::string() : graph.error().message));
      REQUIRE(graph.ok());
      for (int replay = 0; replay < 2; ++replay) {
        reset();
        (*graph)->replay();
        gpu.ops->synchronize();
        const std::vector<std::vector<float>> replayed = results();
        for (size_t i = 0; i < eager.size(); ++i) {
          INFO("result " << i << " replay " << replay);
          CHECK(same_bytes(again[i], eager[i]));
          CHECK(same_bytes(replayed[i], eager[i]));
        }
      }
    };
    if (bf16)
      run(StorageTag<bf16_t>{});
    else
      run(StorageTag<float>{});
  }
#endif
}
