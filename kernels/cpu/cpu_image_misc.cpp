// CpuOps' remaining image ops (contracts: kernels/ops.h): the option-A shortcut, dropout
// and the crop + flip augmentation. Each output element is computed by itself (Philox
// draws are keyed by the element or sample index), so the thread count changes nothing.
#include <string>

#include "kernels/common/augment.h"
#include "kernels/common/bf16.h"
#include "kernels/common/philox.h"
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

template <class T>
void dropout_impl(int threads, const T* x, T* y, int64_t n, float p, uint64_t seed,
                  uint32_t step, uint32_t layer) {
  const float scale = dropout_scale(p);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    // x * mask, the mask 0 or scale: torch's product, so NaN and -0 propagate alike.
    const bool keep = dropout_keep(seed, step, layer, static_cast<uint64_t>(i), p);
    store_f32(y[i], load_f32(x[i]) * (keep ? scale : 0.0f));
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

void CpuOps::dropout(ConstView x, View y, float p, uint64_t seed, uint32_t layer,
                     const StepCounters* counters) {
  const char* op = "dropout";
  expect_elems(op, y.n, {x});
  const uint32_t step = static_cast<uint32_t>(counters->step);
  dispatch_float(op, {y, x}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    dropout_impl(threads_, x.as<T>(), y.as<T>(), y.n, p, seed, step, layer);
  });
}

void CpuOps::augment_crop_flip(const AugmentSpec& spec, const float* src, float* dst,
                               uint64_t seed, uint32_t epoch) {
  if (spec.channels > AugmentSpec::kMaxChannels)
    cpu_op_failed("augment_crop_flip",
                  make_error(std::to_string(spec.channels) + " channels; fill holds " +
                             std::to_string(AugmentSpec::kMaxChannels)));
  const int64_t C = spec.channels, H = spec.height, W = spec.width;
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (int64_t n = 0; n < spec.count; ++n) {
    const AugmentDraw d = augment_draw(seed, epoch, static_cast<uint32_t>(n), spec.pad, spec.flip);
    for (int64_t c = 0; c < C; ++c) {
      const float* sp = src + (n * C + c) * H * W;
      float* dp = dst + (n * C + c) * H * W;
      for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x) {
          const int64_t from = augment_source(d, spec.pad, H, W, y, x);
          dp[y * W + x] = from < 0 ? spec.fill[c] : sp[from];
        }
    }
  }
}

}  // namespace noeira
