// CudaOps' max and average pooling (contracts: kernels/op_list.inc) over NCHW, fp32 or
// bf16 storage, fp32 math. Forward: one thread per output element, scanning its window in
// row-major order. Backward: one thread per input element, gathering the windows that
// cover it in row-major window order, so each input's sum has the order the contract
// states and no thread writes another's element (no scatter, no atomics).
#include <cmath>
#include <string>

#include "kernels/common/pool.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

std::string describe(const PoolShape& s) {
  return "pool " + std::to_string(s.batch) + "x" + std::to_string(s.channels) + "x" +
         std::to_string(s.height) + "x" + std::to_string(s.width) + ", " +
         std::to_string(s.kernel_h) + "x" + std::to_string(s.kernel_w) + " window, stride " +
         std::to_string(s.stride) + ", pad " + std::to_string(s.pad);
}

// Empty when the shape is valid, else what is wrong with it.
std::string pool_problem(const PoolShape& s, bool argmax) {
  if (s.batch < 0 || s.channels < 0 || s.height <= 0 || s.width <= 0 || s.kernel_h <= 0 ||
      s.kernel_w <= 0 || s.stride <= 0 || s.pad < 0)
    return "invalid " + describe(s);
  if (s.out_height() <= 0 || s.out_width() <= 0)
    return "the window is larger than the padded input in " + describe(s);
  if (argmax && s.height * s.width > INT32_MAX)
    return "the argmax (int32) cannot index the planes of " + describe(s);
  return {};
}

}  // namespace

namespace cuda {

namespace {

// The geometry every pooling kernel needs, as plain values.
struct PoolGeom {
  int64_t planes;  // B * C
  int64_t H, W, Ho, Wo, kh, kw, stride, pad;
};

PoolGeom geom_of(const PoolShape& s) {
  return {s.batch * s.channels, s.height, s.width, s.out_height(), s.out_width(), s.kernel_h,
          s.kernel_w, s.stride, s.pad};
}

// y = window maximum, argmax = its h * W + w, scanning the window in row-major order. The
// initial argmax is the window's first in-bounds position (as torch's), kept when every
// value is -inf.
template <class T>
__global__ void maxpool_forward_kernel(const T* x, T* y, int32_t* argmax, PoolGeom g) {
  const int64_t n = g.planes * g.Ho * g.Wo;
  for (int64_t i = global_thread(); i < n; i += grid_stride()) {
    const int64_t ow = i % g.Wo, oh = (i / g.Wo) % g.Ho, plane = i / (g.Wo * g.Ho);
    const int64_t h0 = oh * g.stride - g.pad, w0 = ow * g.stride - g.pad;
    const int64_t hs = h0 < 0 ? 0 : h0, ws = w0 < 0 ? 0 : w0;
    const int64_t he = h0 + g.kh < g.H ? h0 + g.kh : g.H;
    const int64_t we = w0 + g.kw < g.W ? w0 + g.kw : g.W;
    const T* xp = x + plane * g.H * g.W;
    float best = -INFINITY;
    int64_t arg = hs * g.W + ws;
    for (int64_t h = hs; h < he; ++h)
      for (int64_t w = ws; w < we; ++w) {
        const float v = load_f32(xp[h * g.W + w]);
        if (pool_takes_max(v, best)) best = v, arg = h * g.W + w;
      }
    store_f32(y[i], best);
    argmax[i] = static_cast<int32_t>(arg);
  }
}

// dx(h, w) = sum of dy over the covering windows whose argmax is (h, w), row-major order.
template <class T>
__global__ void maxpool_backward_kernel(const T* dy, const int32_t* argmax, T* dx, PoolGeom g) {
  const int64_t n = g.planes * g.H * g.W;
  for (int64_t i = global_thread(); i < n; i += grid_stride()) {
    const int64_t w = i % g.W, h = (i / g.W) % g.H, plane = i / (g.W * g.H);
    const PoolCover ch = pool_covering(h, g.kh, g.stride, g.pad, g.Ho);
    const PoolCover cw = pool_covering(w, g.kw, g.stride, g.pad, g.Wo);
    const int64_t oh0 = ch.lo, oh1 = ch.hi, ow0 = cw.lo, ow1 = cw.hi;
    const int64_t out = plane * g.Ho * g.Wo;
    const int32_t me = static_cast<int32_t>(h * g.W + w);
    float s = 0.0f;
    for (int64_t oh = oh0; oh <= oh1; ++oh)
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        const int64_t o = out + oh * g.Wo + ow;
        if (argmax[o] == me) s += load_f32(dy[o]);
      }
    store_f32(dx[i], s);
  }
}

// y = (sum of the window's in-bounds values, row-major) / (kh * kw): padding counts as
// zeros in the divisor (count_include_pad).
template <class T>
__global__ void avgpool_forward_kernel(const T* x, T* y, PoolGeom g) {
  const int64_t n = g.planes * g.Ho * g.Wo;
  const float div = static_cast<float>(g.kh * g.kw);
  for (int64_t i = global_thread(); i < n; i += grid_stride()) {
    const int64_t ow = i % g.Wo, oh = (i / g.Wo) % g.Ho, plane = i / (g.Wo * g.Ho);
    const int64_t h0 = oh * g.stride - g.pad, w0 = ow * g.stride - g.pad;
    const int64_t hs = h0 < 0 ? 0 : h0, ws = w0 < 0 ? 0 : w0;
    const int64_t he = h0 + g.kh < g.H ? h0 + g.kh : g.H;
    const int64_t we = w0 + g.kw < g.W ? w0 + g.kw : g.W;
    const T* xp = x + plane * g.H * g.W;
    float s = 0.0f;
    for (int64_t h = hs; h < he; ++h)
      for (int64_t w = ws; w < we; ++w) s += load_f32(xp[h * g.W + w]);
    store_f32(y[i], s / div);
  }
}

// dx(h, w) = sum over the covering windows, row-major, of dy / (kh * kw).
template <class T>
__global__ void avgpool_backward_kernel(const T* dy, T* dx, PoolGeom g) {
  const int64_t n = g.planes * g.H * g.W;
  const float div = static_cast<float>(g.kh * g.kw);
  for (int64_t i = global_thread(); i < n; i += grid_stride()) {
    const int64_t w = i % g.W, h = (i / g.W) % g.H, plane = i / (g.W * g.H);
    const PoolCover ch = pool_covering(h, g.kh, g.stride, g.pad, g.Ho);
    const PoolCover cw = pool_covering(w, g.kw, g.stride, g.pad, g.Wo);
    const int64_t oh0 = ch.lo, oh1 = ch.hi, ow0 = cw.lo, ow1 = cw.hi;
    const T* dyp = dy + plane * g.Ho * g.Wo;
    float s = 0.0f;
    for (int64_t oh = oh0; oh <= oh1; ++oh)
      for (int64_t ow = ow0; ow <= ow1; ++ow) s += load_f32(dyp[oh * g.Wo + ow]) / div;
    store_f32(dx[i], s);
  }
}

cudaError_t launch_maxpool2d_forward(cudaStream_t stream, const PoolShape& s, ConstView x,
                                     View y, int32_t* argmax) {
  const char* op = "maxpool2d_forward";
  expect_elems(op, s.x_elems(), {x});
  expect_elems(op, s.y_elems(), {y});
  if (s.y_elems() == 0) return cudaSuccess;
  return dispatch_float(op, {x, y}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    maxpool_forward_kernel<<<grid_for(s.y_elems()), kBlock, 0, stream>>>(x.as<T>(), y.as<T>(),
                                                                          argmax, geom_of(s));
    return cudaGetLastError();
  });
}

cudaError_t launch_maxpool2d_backward(cudaStream_t stream, const PoolShape& s, ConstView dy,
                                      const int32_t* argmax, View dx) {
  const char* op = "maxpool2d_backward";
  expect_elems(op, s.y_elems(), {dy});
  expect_elems(op, s.x_elems(), {dx});
  if (s.x_elems() == 0) return cudaSuccess;
  return dispatch_float(op, {dx, dy}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    maxpool_backward_kernel<<<grid_for(s.x_elems()), kBlock, 0, stream>>>(
        dy.as<T>(), argmax, dx.as<T>(), geom_of(s));
    return cudaGetLastError();
  });
}

cudaError_t launch_avgpool2d_forward(cudaStream_t stream, const PoolShape& s, ConstView x,
                                     View y) {
  const char* op = "avgpool2d_forward";
  expect_elems(op, s.x_elems(), {x});
  expect_elems(op, s.y_elems(), {y});
  if (s.y_elems() == 0) return cudaSuccess;
  return dispatch_float(op, {x, y}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    avgpool_forward_kernel<<<grid_for(s.y_elems()), kBlock, 0, stream>>>(x.as<T>(), y.as<T>(),
                                                                          geom_of(s));
    return cudaGetLastError();
  });
}

cudaError_t launch_avgpool2d_backward(cudaStream_t stream, const PoolShape& s, ConstView dy,
                                      View dx) {
  const char* op = "avgpool2d_backward";
  expect_elems(op, s.y_elems(), {dy});
  expect_elems(op, s.x_elems(), {dx});
  if (s.x_elems() == 0) return cudaSuccess;
  return dispatch_float(op, {dx, dy}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    avgpool_backward_kernel<<<grid_for(s.x_elems()), kBlock, 0, stream>>>(dy.as<T>(), dx.as<T>(),
                                                                           geom_of(s));
    return cudaGetLastError();
  });
}

}  // namespace

}  // namespace cuda

void CudaOps::maxpool2d_forward(const PoolShape& s, ConstView x, View y, int32_t* argmax) {
  OpScope scope(*state_, "maxpool2d_forward");
  if (const std::string p = pool_problem(s, true); !p.empty()) return fail(p);
  check(cuda::launch_maxpool2d_forward(stream_, s, x, y, argmax), "maxpool_forward_kernel");
}

void CudaOps::maxpool2d_backward(const PoolShape& s, ConstView dy, const int32_t* argmax,
                                 View dx) {
  OpScope scope(*state_, "maxpool2d_backward");
  if (const std::string p = pool_problem(s, true); !p.empty()) return fail(p);
  check(cuda::launch_maxpool2d_backward(stream_, s, dy, argmax, dx), "maxpool_backward_kernel");
}

void CudaOps::avgpool2d_forward(const PoolShape& s, ConstView x, View y) {
  OpScope scope(*state_, "avgpool2d_forward");
  if (const std::string p = pool_problem(s, false); !p.empty()) return fail(p);
  check(cuda::launch_avgpool2d_forward(stream_, s, x, y), "avgpool_forward_kernel");
}

void CudaOps::avgpool2d_backward(const PoolShape& s, ConstView dy, View dx) {
  OpScope scope(*state_, "avgpool2d_backward");
  if (const std::string p = pool_problem(s, false); !p.empty()) return fail(p);
  check(cuda::launch_avgpool2d_backward(stream_, s, dy, dx), "avgpool_backward_kernel");
}

}  // namespace noeira
