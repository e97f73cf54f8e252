// CpuOps' option-A shortcut (contracts: kernels/op_list.inc): one output plane per OpenMP
// iteration, each element computed by itself, so the thread count changes nothing.
#include "kernels/common/bf16.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

template <class T>
void shortcut_forward_impl(int threads, const ShortcutShape& s, const T* x, T* y) {
  const int64_t H = s.height, W = s.width, Ho = s.out_height(), Wo = s.out_width();
  const int64_t Cin = s.in_channels, Cout = s.out_channels, p = s.pad_channels();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t bc = 0; bc < s.batch * Cout; ++bc) {  // one output plane
    const int64_t b = bc / Cout, ci = bc % Cout - p;  // the input channel, if any
    T* yp = y + bc * Ho * Wo;
    const bool kept = ci >= 0 && ci < Cin;
    const T* xp = kept ? x + (b * Cin + ci) * H * W : nullptr;
    for (int64_t i = 0; i < Ho; ++i)
      for (int64_t j = 0; j < Wo; ++j)
        store_f32(yp[i * Wo + j], kept ? load_f32(xp[i * s.stride * W + j * s.stride]) : 0.0f);
  }
}

template <class T>
void shortcut_backward_impl(int threads, const ShortcutShape& s, const T* dy, T* dx) {
  const int64_t H = s.height, W = s.width, Ho = s.out_height(), Wo = s.out_width();
  const int64_t Cin = s.in_channels, Cout = s.out_channels, p = s.pad_channels();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t bc = 0; bc < s.batch * Cin; ++bc) {  // one input plane
    const int64_t b = bc / Cin, co = bc % Cin + p;
    const T* dyp = dy + (b * Cout + co) * Ho * Wo;
    T* dxp = dx + bc * H * W;
    for (int64_t h = 0; h < H; ++h)
      for (int64_t w = 0; w < W; ++w) {
        const bool sampled = h % s.stride == 0 && w % s.stride == 0;
        store_f32(dxp[h * W + w],
                  sampled ? load_f32(dyp[(h / s.stride) * Wo + w / s.stride]) : 0.0f);
      }
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
