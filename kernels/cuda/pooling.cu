// CudaOps' max and average pooling (contracts: kernels/op_list.inc) over NCHW, fp32 or
// bf16 storage, fp32 math. Forward: one thread per output element, scanning its window in
// row-major order. Backward: one thread per input element, gathering the windows that
// cover it in row-major window order, so each input's sum has the order the contract
// states and no thread writes another's element (no scatter, no atomics). Element indices
// split in 32 bits below 2^31 elements (kernels/cuda/index.cuh); the window bounds stay
// 64-bit (pool_covering's two divides by the stride, backward only).
#include <cmath>
#include <string>

#include "kernels/common/pool.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/index.cuh"
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

// Element i of an (planes, rows, cols) tensor as (plane, row, col), in the index type I
// (kernels/cuda/index.cuh): multiply-shift divisions below 2^31 elements.
template <class I>
struct PlaneIndex {
  I n;
  Divider<I> by_cols, by_rows;
  NOEIRA_HD I split(I i, I& row, I& col) const { return by_rows.divmod(by_cols.divmod(i, col), row); }
};

template <class I>
PlaneIndex<I> plane_index(int64_t planes, int64_t rows, int64_t cols) {
  return {static_cast<I>(planes * rows * cols), Divider<I>(cols), Divider<I>(rows)};
}

// y = window maximum, argmax = its h * W + w, scanning the window in row-major order. The
// initial argmax is the window's first in-bounds position (as torch's), kept when every
// value is -inf.
template <class T, class I>
__global__ void maxpool_forward_kernel(const T* x, T* y, int32_t* argmax, PoolGeom g,
                                       PlaneIndex<I> ix) {
  for (I i = first_index<I>(); i < ix.n; i += index_stride<I>()) {
    I oh_, ow_;
    const int64_t plane = ix.split(i, oh_, ow_), oh = oh_, ow = ow_;
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
template <class T, class I>
__global__ void maxpool_backward_kernel(const T* dy, const int32_t* argmax, T* dx, PoolGeom g,
                                        PlaneIndex<I> ix) {
  for (I i = first_index<I>(); i < ix.n; i += index_stride<I>()) {
    I h_, w_;
    const int64_t plane = ix.split(i, h_, w_), h = h_, w = w_;
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
template <class T, class I>
__global__ void avgpool_forward_kernel(const T* x, T* y, PoolGeom g, PlaneIndex<I> ix) {
  const float div = static_cast<float>(g.kh * g.kw);
  for (I i = first_index<I>(); i < ix.n; i += index_stride<I>()) {
    I oh_, ow_;
    const int64_t plane = ix.split(i, oh_, ow_), oh = oh_, ow = ow_;
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
template <class T, class I>
__global__ void avgpool_backward_kernel(const T* dy, T* dx, PoolGeom g, PlaneIndex<I> ix) {
  const float div = static_cast<float>(g.kh * g.kw);
  for (I i = first_index<I>(); i < ix.n; i += index_stride<I>()) {
    I h_, w_;
    const int64_t plane = ix.split(i, h_, w_), h = h_, w = w_;
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
    return with_index(s.y_elems(), [&](auto index) {
      using I = typename decltype(index)::type;
      const PoolGeom g = geom_of(s);
      maxpool_forward_kernel<<<grid_for(s.y_elems()), kBlock, 0, stream>>>(
          x.as<T>(), y.as<T>(), argmax, g, plane_index<I>(g.planes, g.Ho, g.Wo));
      return cudaGetLastError();
    });
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
    return with_index(s.x_elems(), [&](auto index) {
      using I = typename decltype(index)::type;
      const PoolGeom g = geom_of(s);
      maxpool_backward_kernel<<<grid_for(s.x_elems()), kBlock, 0, stream>>>(
          dy.as<T>(), argmax, dx.as<T>(), g, plane_index<I>(g.planes, g.H, g.W));
      return cudaGetLastError();
    });
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
    return with_index(s.y_elems(), [&](auto index) {
      using I = typename decltype(index)::type;
      const PoolGeom g = geom_of(s);
      avgpool_forward_kernel<<<grid_for(s.y_elems()), kBlock, 0, stream>>>(
          x.as<T>(), y.as<T>(), g, plane_index<I>(g.planes, g.Ho, g.Wo));
      return cudaGetLastError();
    });
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
    return with_index(s.x_elems(), [&](auto index) {
      using I = typename decltype(index)::type;
      const PoolGeom g = geom_of(s);
      avgpool_backward_kernel<<<grid_for(s.x_elems()), kBlock, 0, stream>>>(
          dy.as<T>(), dx.as<T>(), g, plane_index<I>(g.planes, g.H, g.W));
      return cudaGetLastError();
    });
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
