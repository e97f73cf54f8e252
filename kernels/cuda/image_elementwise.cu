// The image ops that compute each output element by itself: the option-A shortcut and its
// backward, dropout (mask drawn from Philox, kernels/common/philox.h), a ViT's patches
// and their inverse (kernels/common/image_shapes.h PatchShape) and the random crop + flip
// (kernels/common/augment.h). One thread per output element, grid-stride loops;
// results depend on neither the launch shape nor scheduling.
#include "kernels/common/augment.h"
#include "kernels/common/philox.h"
#include "kernels/cuda/image_kernels.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/dispatch.h"

namespace noeira::cuda {

namespace {

struct ShortcutGeom {
  int64_t B, Cin, H, W, Cout, Ho, Wo, stride, pad_c;
};

ShortcutGeom geom_of(const ShortcutShape& s) {
  return {s.batch, s.in_channels, s.height, s.width, s.out_channels, s.out_height(),
          s.out_width(), s.stride, s.pad_channels()};
}

// y(b, co, oh, ow) = x(b, co - p, oh * s, ow * s) for kept channels, else 0.
template <class T>
__global__ void shortcut_forward_kernel(const T* x, T* y, ShortcutGeom g) {
  const int64_t n = g.B * g.Cout * g.Ho * g.Wo;
  for (int64_t i = global_thread(); i < n; i += grid_stride()) {
    const int64_t ow = i % g.Wo, oh = (i / g.Wo) % g.Ho;
    const int64_t co = (i / (g.Wo * g.Ho)) % g.Cout, b = i / (g.Wo * g.Ho * g.Cout);
    const int64_t ci = co - g.pad_c;
    float v = 0.0f;
    if (ci >= 0 && ci < g.Cin)
      v = load_f32(x[((b * g.Cin + ci) * g.H + oh * g.stride) * g.W + ow * g.stride]);
    store_f32(y[i], v);
  }
}

// dx(b, ci, h, w) = dy(b, ci + p, h / s, w / s) at the subsampled pixels, else 0.
template <class T>
__global__ void shortcut_backward_kernel(const T* dy, T* dx, ShortcutGeom g) {
  const int64_t n = g.B * g.Cin * g.H * g.W;
  for (int64_t i = global_thread(); i < n; i += grid_stride()) {
    const int64_t w = i % g.W, h = (i / g.W) % g.H;
    const int64_t ci = (i / (g.W * g.H)) % g.Cin, b = i / (g.W * g.H * g.Cin);
    float v = 0.0f;
    if (h % g.stride == 0 && w % g.stride == 0)
      v = load_f32(dy[((b * g.Cout + ci + g.pad_c) * g.Ho + h / g.stride) * g.Wo + w / g.stride]);
    store_f32(dx[i], v);
  }
}

// y = x * mask, the mask dropout_scale(p) where kept and 0 where dropped (torch's product:
// a dropped element is a signed zero, NaN for a non-finite x). The step is the device
// counter's, so a captured graph draws a new mask at every replay.
template <class T>
__global__ void dropout_kernel(const T* x, T* y, int64_t n, float p, uint64_t seed,
                               uint32_t layer, const StepCounters* counters) {
  const uint32_t step = static_cast<uint32_t>(counters->step);
  const float scale = dropout_scale(p);
  for (int64_t i = global_thread(); i < n; i += grid_stride()) {
    const bool keep = dropout_keep(seed, step, layer, static_cast<uint64_t>(i), p);
    store_f32(y[i], load_f32(x[i]) * (keep ? scale : 0.0f));
  }
}

// y[i] = x[s.patch_source(i)]: a gather, the stored bits unchanged.
template <class T>
__global__ void patchify_kernel(const T* x, T* y, PatchShape s, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_stride()) y[i] = x[s.patch_source(i)];
}

// dx[s.patch_source(i)] = dy[i]: patch_source is a permutation, so every element of dx is
// written by exactly one thread (no two writes meet, no atomics).
template <class T>
__global__ void unpatchify_kernel(const T* dy, T* dx, PatchShape s, int64_t n) {
  for (int64_t i = global_thread(); i < n; i += grid_stride()) dx[s.patch_source(i)] = dy[i];
}

// dst(i, c, y, x) = src(i, c, source pixel) or fill[c] in the padding.
__global__ void augment_kernel(AugmentSpec spec, const float* src, float* dst, uint64_t seed,
                               uint32_t epoch) {
  const int64_t H = spec.height, W = spec.width, C = spec.channels;
  const int64_t n = spec.count * C * H * W;
  for (int64_t i = global_thread(); i < n; i += grid_stride()) {
    const int64_t x = i % W, y = (i / W) % H, c = (i / (W * H)) % C, sample = i / (W * H * C);
    const AugmentDraw d =
        augment_draw(seed, epoch, static_cast<uint32_t>(sample), spec.pad, spec.flip);
    const int64_t from = augment_source(d, spec.pad, H, W, y, x);
    dst[i] = from < 0 ? spec.fill[c] : src[(sample * C + c) * H * W + from];
  }
}

}  // namespace

cudaError_t launch_shortcut_forward(cudaStream_t stream, const ShortcutShape& s, ConstView x,
                                    View y) {
  const char* op = "shortcut_forward";
  expect_elems(op, s.x_elems(), {x});
  expect_elems(op, s.y_elems(), {y});
  if (s.y_elems() == 0) return cudaSuccess;
  return dispatch_float(op, {x, y}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    shortcut_forward_kernel<<<grid_for(s.y_elems()), kBlock, 0, stream>>>(x.as<T>(), y.as<T>(),
                                                                           geom_of(s));
    return cudaGetLastError();
  });
}

cudaError_t launch_shortcut_backward(cudaStream_t stream, const ShortcutShape& s, ConstView dy,
                                     View dx) {
  const char* op = "shortcut_backward";
  expect_elems(op, s.y_elems(), {dy});
  expect_elems(op, s.x_elems(), {dx});
  if (s.x_elems() == 0) return cudaSuccess;
  return dispatch_float(op, {dx, dy}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    shortcut_backward_kernel<<<grid_for(s.x_elems()), kBlock, 0, stream>>>(
        dy.as<T>(), dx.as<T>(), geom_of(s));
    return cudaGetLastError();
  });
}

cudaError_t launch_dropout(cudaStream_t stream, ConstView x, View y, float p, uint64_t seed,
                           uint32_t layer, const StepCounters* counters) {
  const char* op = "dropout";
  expect_elems(op, y.n, {x});
  if (y.n == 0) return cudaSuccess;
  return dispatch_float(op, {x, y}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    dropout_kernel<<<grid_for(y.n), kBlock, 0, stream>>>(x.as<T>(), y.as<T>(), y.n, p, seed,
                                                          layer, counters);
    return cudaGetLastError();
  });
}

cudaError_t launch_patchify(cudaStream_t stream, const PatchShape& s, ConstView x, View y) {
  const char* op = "patchify";
  const int64_t n = s.elems();
  expect_elems(op, n, {x, y});
  if (n == 0) return cudaSuccess;
  return dispatch_float(op, {x, y}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    patchify_kernel<<<grid_for(n), kBlock, 0, stream>>>(x.as<T>(), y.as<T>(), s, n);
    return cudaGetLastError();
  });
}

cudaError_t launch_unpatchify(cudaStream_t stream, const PatchShape& s, ConstView dy, View dx) {
  const char* op = "unpatchify";
  const int64_t n = s.elems();
  expect_elems(op, n, {dy, dx});
  if (n == 0) return cudaSuccess;
  return dispatch_float(op, {dy, dx}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    unpatchify_kernel<<<grid_for(n), kBlock, 0, stream>>>(dy.as<T>(), dx.as<T>(), s, n);
    return cudaGetLastError();
  });
}

cudaError_t launch_augment_crop_flip(cudaStream_t stream, const AugmentSpec& spec,
                                     const float* src, float* dst, uint64_t seed,
                                     uint32_t epoch) {
  const int64_t n = spec.count * spec.channels * spec.height * spec.width;
  if (n == 0) return cudaSuccess;
  augment_kernel<<<grid_for(n), kBlock, 0, stream>>>(spec, src, dst, seed, epoch);
  return cudaGetLastError();
}

}  // namespace noeira::cuda
