// CpuOps' option-A shortcut (contracts: kernels/op_list.inc): one output plane per OpenMP
// iteration, each element computed by itself, so the thread count changes nothing.
#include "kernels/common/bf16.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

// Rows of a plane are copied or zeroed whole: a test per element (and the backward's
// 64-bit h % stride, w % stride) made these copies run at 3-5 GB/s.
template <class T>
void shortcut_forward_impl(int threads, const ShortcutShape& s, const T* x, T* y) {
  const int64_t H = s.height, W = s.width, Ho = s.out_height(), Wo = s.out_width();
  const int64_t Cin = s.in_channels, Cout = s.out_channels, p = s.pad_channels();
  const int64_t st = s.stride;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t bc = 0; bc < s.batch * Cout; ++bc) {  // one output plane
    const int64_t b = bc / Cout, ci = bc % Cout - p;  // the input channel, if any
    T* __restrict yp = y + bc * Ho * Wo;
    if (ci < 0 || ci >= Cin) {
      for (int64_t k = 0; k < Ho * Wo; ++k) store_f32(yp[k], 0.0f);
      continue;
    }
    const T* __restrict xp = x + (b * Cin + ci) * H * W;
    for (int64_t i = 0; i < Ho; ++i)
      for (int64_t j = 0; j < Wo; ++j) store_f32(yp[i * Wo + j], load_f32(xp[(i * W + j) * st]));
  }
}

template <class T>
void shortcut_backward_impl(int threads, const ShortcutShape& s, const T* dy, T* dx) {
  const int64_t H = s.height, W = s.width, Ho = s.out_height(), Wo = s.out_width();
  const int64_t Cin = s.in_channels, Cout = s.out_channels, p = s.pad_channels();
  const int64_t st = s.stride;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t bc = 0; bc < s.batch * Cin; ++bc) {  // one input plane
    const int64_t b = bc / Cin, co = bc % Cin + p;
    const T* __restrict dyp = dy + (b * Cout + co) * Ho * Wo;
    T* __restrict dxp = dx + bc * H * W;
    for (int64_t k = 0; k < H * W; ++k) store_f32(dxp[k], 0.0f);
    // Input (i * stride, j * stride) was output (i, j); every other input had no path.
    for (int64_t i = 0; i < Ho; ++i)
      for (int64_t j = 0; j < Wo; ++j) store_f32(dxp[(i * W + j) * st], load_f32(dyp[i * Wo + j]));
  }
}

}  // namespace

void CpuOps::shortcut_forward(const ShortcutShape& s, ConstView x, View y) {
  const char* op = "shortcut_forward";
  expect_elems(op, s.x_elems(), {x});
  expect_elems(op, s.y_elems(), {y});
  dispatch_float(op, {y, x}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    shortcut_forward_impl(threads_, s, x.as<T>(), y.as<T>());
  });
}

void CpuOps::shortcut_backward(const ShortcutShape& s, ConstView dy, View dx) {
  const char* op = "shortcut_backward";
  expect_elems(op, s.y_elems(), {dy});
  expect_elems(op, s.x_elems(), {dx});
  dispatch_float(op, {dx, dy}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    shortcut_backward_impl(threads_, s, dy.as<T>(), dx.as<T>());
  });
}

}  // namespace noeira
