// CpuOps' Vision-Transformer token ops (contracts: kernels/ops.h): patches of an image
// batch, the class token plus position embedding, and copies of token rows. Each is a
// copy or one fp32 add per element, computed by itself, so the thread count changes
// nothing.
#include <cstring>
#include <string>

#include "kernels/common/bf16.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

template <class T>
void patchify_impl(int threads, const PatchShape& s, const T* x, T* y) {
  const int64_t n = s.elems();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) y[i] = x[s.patch_source(i)];
}

template <class T>
void unpatchify_impl(int threads, const PatchShape& s, const T* dy, T* dx) {
  const int64_t n = s.elems();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) dx[s.patch_source(i)] = dy[i];
}

template <class T>
void class_token_impl(int threads, const T* x, const float* cls, const float* pos, T* y,
                      int64_t B, int64_t N, int64_t C) {
  const int64_t T1 = N + 1;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t row = 0; row < B * T1; ++row) {  // y's row (b, t)
    const int64_t b = row / T1, t = row % T1;
    const float* p = pos + t * C;
    T* yr = y + row * C;
    if (t == 0) {
      for (int64_t c = 0; c < C; ++c) store_f32(yr[c], cls[c] + p[c]);
    } else {
      const T* xr = x + (b * N + t - 1) * C;
      for (int64_t c = 0; c < C; ++c) store_f32(yr[c], load_f32(xr[c]) + p[c]);
    }
  }
}

// Why s is not a shape patchify can run (a permutation needs whole patches), or empty.
std::string patch_problem(const PatchShape& s) {
  if (s.batch < 0 || s.channels < 0 || s.height < 0 || s.width < 0 || s.patch <= 0 ||
      s.height % s.patch != 0 || s.width % s.patch != 0)
    return "image (" + std::to_string(s.batch) + ", " + std::to_string(s.channels) + ", " +
           std::to_string(s.height) + ", " + std::to_string(s.width) + ") does not split into " +
           std::to_string(s.patch) + "x" + std::to_string(s.patch) + " patches";
  return {};
}

}  // namespace

void CpuOps::patchify(const PatchShape& s, ConstView x, View y) {
  const char* op = "patchify";
  if (const std::string why = patch_problem(s); !why.empty()) cpu_op_failed(op, make_error(why));
  expect_elems(op, s.elems(), {x, y});
  dispatch_float(op, {y, x}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    patchify_impl(threads_, s, x.as<T>(), y.as<T>());
  });
}

void CpuOps::unpatchify(const PatchShape& s, ConstView dy, View dx) {
  const char* op = "unpatchify";
  if (const std::string why = patch_problem(s); !why.empty()) cpu_op_failed(op, make_error(why));
  expect_elems(op, s.elems(), {dy, dx});
  dispatch_float(op, {dx, dy}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    unpatchify_impl(threads_, s, dy.as<T>(), dx.as<T>());
  });
}

void CpuOps::class_token_forward(ConstView x, const float* cls, const float* pos, View y,
                                 int64_t B, int64_t N, int64_t C) {
  const char* op = "class_token_forward";
  if (B < 0 || N < 0 || C < 0)
    cpu_op_failed(op, make_error("negative shape (" + std::to_string(B) + ", " +
                                 std::to_string(N) + ", " + std::to_string(C) + ")"));
  expect_elems(op, B * N * C, {x});
  expect_elems(op, B * (N + 1) * C, {y});
  dispatch_float(op, {y, x}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    class_token_impl(threads_, x.as<T>(), cls, pos, y.as<T>(), B, N, C);
  });
}

void CpuOps::copy_token_rows(ConstView src, int64_t src_T, int64_t src_t0, View dst,
                             int64_t dst_T, int64_t dst_t0, int64_t count, int64_t B,
                             int64_t C) {
  const char* op = "copy_token_rows";
  expect_elems(op, B * src_T * C, {src});
  expect_elems(op, B * dst_T * C, {dst});
  if (src_t0 < 0 || dst_t0 < 0 || count < 0 || src_t0 + count > src_T ||
      dst_t0 + count > dst_T)
    cpu_op_failed(op, make_error("rows [" + std::to_string(src_t0) + ", +" +
                                 std::to_string(count) + ") of " + std::to_string(src_T) +
                                 " -> [" + std::to_string(dst_t0) + ", +" +
                                 std::to_string(count) + ") of " + std::to_string(dst_T)));
  dispatch_float(op, {dst, src}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    const T* s = src.as<T>();
    T* d = dst.as<T>();
    const size_t bytes = static_cast<size_t>(count * C) * sizeof(T);
#pragma omp parallel for num_threads(threads_) schedule(static)
    for (int64_t b = 0; b < B; ++b)
      std::memcpy(d + (b * dst_T + dst_t0) * C, s + (b * src_T + src_t0) * C, bytes);
  });
}

}  // namespace noeira
