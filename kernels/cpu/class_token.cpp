// CpuOps' class token (contracts: kernels/op_list.inc): the class token plus position
// embedding, and copies of token rows (its backward's routing). Each is a copy or one fp32
// add per element, computed by itself, so the thread count changes nothing.
#include <cstring>
#include <string>

#include "kernels/common/bf16.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

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

}  // namespace

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
