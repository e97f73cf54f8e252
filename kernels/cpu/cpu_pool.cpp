// CpuOps' pooling (contracts: kernels/ops.h). Every output element is computed by itself,
// so results depend on neither the thread count nor the schedule. Backward gathers: each
// input element walks the windows that cover it in row-major window order and sums in
// fp32, so bf16 dx is rounded once and no scratch buffer is needed.
#include <algorithm>
#include <cmath>

#include "kernels/common/bf16.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/common/pool.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

template <class T>
void maxpool_forward_impl(int threads, const PoolShape& s, const T* x, T* y, int32_t* argmax) {
  const int64_t H = s.height, W = s.width, Ho = s.out_height(), Wo = s.out_width();
  const int64_t rows = s.batch * s.channels * Ho;  // (plane, oh)
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t plane = r / Ho, oh = r % Ho;
    const T* xp = x + plane * H * W;
    const int64_t h0 = oh * s.stride - s.pad;
    const int64_t h_lo = std::max<int64_t>(h0, 0), h_hi = std::min(h0 + s.kernel_h, H);
    for (int64_t ow = 0; ow < Wo; ++ow) {
      const int64_t w0 = ow * s.stride - s.pad;
      const int64_t w_lo = std::max<int64_t>(w0, 0), w_hi = std::min(w0 + s.kernel_w, W);
      float best = -INFINITY;
      int64_t at = h_lo * W + w_lo;  // the first input position, as torch, if all are -inf
      for (int64_t h = h_lo; h < h_hi; ++h)
        for (int64_t w = w_lo; w < w_hi; ++w) {
          const float v = load_f32(xp[h * W + w]);
          if (pool_takes_max(v, best)) best = v, at = h * W + w;
        }
      store_f32(y[r * Wo + ow], best);
      argmax[r * Wo + ow] = static_cast<int32_t>(at);
    }
  }
}

template <class T>
void maxpool_backward_impl(int threads, const PoolShape& s, const T* dy, const int32_t* argmax,
                           T* dx) {
  const int64_t H = s.height, W = s.width, Ho = s.out_height(), Wo = s.out_width();
  const int64_t rows = s.batch * s.channels * H;  // (plane, h)
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t plane = r / H, h = r % H;
    const T* dyp = dy + plane * Ho * Wo;
    const int32_t* ap = argmax + plane * Ho * Wo;
    const PoolCover oh = pool_covering(h, s.kernel_h, s.stride, s.pad, Ho);
    for (int64_t w = 0; w < W; ++w) {
      const PoolCover ow = pool_covering(w, s.kernel_w, s.stride, s.pad, Wo);
      const int32_t me = static_cast<int32_t>(h * W + w);
      float sum = 0.0f;
      for (int64_t i = oh.lo; i <= oh.hi; ++i)
        for (int64_t j = ow.lo; j <= ow.hi; ++j)
          if (ap[i * Wo + j] == me) sum += load_f32(dyp[i * Wo + j]);
      store_f32(dx[r * W + w], sum);
    }
  }
}

template <class T>
void avgpool_forward_impl(int threads, const PoolShape& s, const T* x, T* y) {
  const int64_t H = s.height, W = s.width, Ho = s.out_height(), Wo = s.out_width();
  const float count = static_cast<float>(s.kernel_h * s.kernel_w);  // padding included
  const int64_t rows = s.batch * s.channels * Ho;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t plane = r / Ho, oh = r % Ho;
    const T* xp = x + plane * H * W;
    const int64_t h0 = oh * s.stride - s.pad;
    const int64_t h_lo = std::max<int64_t>(h0, 0), h_hi = std::min(h0 + s.kernel_h, H);
    for (int64_t ow = 0; ow < Wo; ++ow) {
      const int64_t w0 = ow * s.stride - s.pad;
      const int64_t w_lo = std::max<int64_t>(w0, 0), w_hi = std::min(w0 + s.kernel_w, W);
      float sum = 0.0f;  // padded positions add zeros: skipped
      for (int64_t h = h_lo; h < h_hi; ++h)
        for (int64_t w = w_lo; w < w_hi; ++w) sum += load_f32(xp[h * W + w]);
      store_f32(y[r * Wo + ow], sum / count);
    }
  }
}

template <class T>
void avgpool_backward_impl(int threads, const PoolShape& s, const T* dy, T* dx) {
  const int64_t H = s.height, W = s.width, Ho = s.out_height(), Wo = s.out_width();
  const float count = static_cast<float>(s.kernel_h * s.kernel_w);
  const int64_t rows = s.batch * s.channels * H;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t plane = r / H, h = r % H;
    const T* dyp = dy + plane * Ho * Wo;
    const PoolCover oh = pool_covering(h, s.kernel_h, s.stride, s.pad, Ho);
    for (int64_t w = 0; w < W; ++w) {
      const PoolCover ow = pool_covering(w, s.kernel_w, s.stride, s.pad, Wo);
      float sum = 0.0f;
      for (int64_t i = oh.lo; i <= oh.hi; ++i)
        for (int64_t j = ow.lo; j <= ow.hi; ++j) sum += load_f32(dyp[i * Wo + j]) / count;
      store_f32(dx[r * W + w], sum);
    }
  }
}

}  // namespace

void CpuOps::maxpool2d_forward(const PoolShape& s, ConstView x, View y, int32_t* argmax) {
  const char* op = "maxpool2d_forward";
  expect_elems(op, s.x_elems(), {x});
  expect_elems(op, s.y_elems(), {y});
  dispatch_float(op, {y, x}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    maxpool_forward_impl(threads_, s, x.as<T>(), y.as<T>(), argmax);
  });
}

void CpuOps::maxpool2d_backward(const PoolShape& s, ConstView dy, const int32_t* argmax,
                                View dx) {
  const char* op = "maxpool2d_backward";
  expect_elems(op, s.y_elems(), {dy});
  expect_elems(op, s.x_elems(), {dx});
  dispatch_float(op, {dx, dy}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    maxpool_backward_impl(threads_, s, dy.as<T>(), argmax, dx.as<T>());
  });
}

void CpuOps::avgpool2d_forward(const PoolShape& s, ConstView x, View y) {
  const char* op = "avgpool2d_forward";
  expect_elems(op, s.x_elems(), {x});
  expect_elems(op, s.y_elems(), {y});
  dispatch_float(op, {y, x}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    avgpool_forward_impl(threads_, s, x.as<T>(), y.as<T>());
  });
}

void CpuOps::avgpool2d_backward(const PoolShape& s, ConstView dy, View dx) {
  const char* op = "avgpool2d_backward";
  expect_elems(op, s.y_elems(), {dy});
  expect_elems(op, s.x_elems(), {dx});
  dispatch_float(op, {dx, dy}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    avgpool_backward_impl(threads_, s, dy.as<T>(), dx.as<T>());
  });
}

}  // namespace noeira
