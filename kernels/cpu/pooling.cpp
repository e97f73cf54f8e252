// CpuOps' pooling (contracts: kernels/op_list.inc). Every output element is computed by itself,
// so results depend on neither the thread count nor the schedule. Backward gathers: each
// input element walks the windows that cover it in row-major window order and sums in
// fp32, so bf16 dx is rounded once and no scratch buffer is needed.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "kernels/common/bf16.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/common/pool.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

// Unpadded max pooling, whose windows all lie inside the image: the same comparisons in
// the same order as the general loop below, but with the window position outside and the
// output column inside, so the compiler vectorises across output columns.
template <class T>
void maxpool_forward_unpadded(int threads, const PoolShape& s, const T* x, T* y, int32_t* argmax) {
  const int64_t H = s.height, W = s.width, Ho = s.out_height(), Wo = s.out_width();
  const int64_t rows = s.batch * s.channels * Ho;  // (plane, oh)
  const int64_t st = s.stride;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t plane = r / Ho, oh = r % Ho;
    const T* __restrict xp = x + plane * H * W;
    T* __restrict yr = y + r * Wo;
    int32_t* __restrict ar = argmax + r * Wo;
    // y and argmax hold the running maximum (rounding a bf16 maximum back is exact).
    for (int64_t ow = 0; ow < Wo; ++ow) {
      store_f32(yr[ow], -INFINITY);
      ar[ow] = static_cast<int32_t>(oh * st * W + ow * st);
    }
    for (int64_t h = oh * st; h < oh * st + s.kernel_h; ++h)
      for (int64_t kw = 0; kw < s.kernel_w; ++kw) {
#pragma omp simd
        for (int64_t ow = 0; ow < Wo; ++ow) {
          const int64_t at = h * W + ow * st + kw;
          const float v = load_f32(xp[at]), best = load_f32(yr[ow]);
          const bool take = pool_takes_max(v, best);
          store_f32(yr[ow], take ? v : best);
          ar[ow] = take ? static_cast<int32_t>(at) : ar[ow];
        }
      }
  }
}

// Branch-free selects, bit for bit a or b. Where a row runs in a loop's scalar remainder
// (a row of 15 in a loop to Wo), GCC compiled plain selects into branches: mispredicted
// on real data (cifar-cnn's bf16 forward: 5.0 ms on random inputs, against 1.0 on a
// predictable pattern).
inline float select_f32(bool t, float a, float b) {
  const uint32_t m = 0u - static_cast<uint32_t>(t);
  return f32_from_bits((f32_bits(a) & m) | (f32_bits(b) & ~m));
}
inline int32_t select_i32(bool t, int32_t a, int32_t b) {
  const int32_t m = -static_cast<int32_t>(t);
  return (a & m) | (b & ~m);
}

// A pair of neighbours p[0], p[1] widened to fp32, and stored rounded. The pair moves as
// one 32-bit (bf16) or 64-bit (fp32) word, p[0] its low half, which GCC vectorises into
// plain loads, shifts and masks; bf16's two 16-bit accesses at stride 2 ran 3-5x slower
// than fp32.
static_assert(std::endian::native == std::endian::little, "pairs: p[0] is the low half");
inline void load_pair_f32(const float* p, float& a, float& b) {
  uint64_t u;
  std::memcpy(&u, p, sizeof u);
  a = f32_from_bits(static_cast<uint32_t>(u));
  b = f32_from_bits(static_cast<uint32_t>(u >> 32));
}
inline void load_pair_f32(const bf16_t* p, float& a, float& b) {
  uint32_t u;
  std::memcpy(&u, p, sizeof u);
  a = f32_from_bits(u << 16);
  b = f32_from_bits(u & 0xffff0000u);
}
inline void store_pair_f32(float* p, float a, float b) {
  const uint64_t u = f32_bits(a) | (static_cast<uint64_t>(f32_bits(b)) << 32);
  std::memcpy(p, &u, sizeof u);
}
inline void store_pair_f32(bf16_t* p, float a, float b) {
  const uint32_t u =
      static_cast<uint32_t>(f32_to_bf16(a)) | (static_cast<uint32_t>(f32_to_bf16(b)) << 16);
  std::memcpy(p, &u, sizeof u);
}

// f(ow) for each of a row's Wo outputs, vectorised. With AVX-512 BW (masked 16- and 32-bit
// loads and stores), a row of at most kShortRow outputs (the CNNs' 6, 12, 15) runs as one
// vector masked past its end: a loop to Wo ran such rows as 4-lane vectors and a scalar
// remainder. Without it the masked form would not vectorise for bf16: 8-lane vectors.
constexpr int64_t kShortRow = 16;
template <class F>
[[gnu::always_inline]] inline void for_each_in_row(int64_t Wo, const F& f) {
#if defined(__AVX512BW__)
  if (Wo <= kShortRow) {
#pragma omp simd simdlen(kShortRow)
    for (int64_t ow = 0; ow < kShortRow; ++ow)
      if (ow < Wo) f(ow);
    return;
  }
#pragma omp simd
  for (int64_t ow = 0; ow < Wo; ++ow) f(ow);
#else
#pragma omp simd simdlen(8)
  for (int64_t ow = 0; ow < Wo; ++ow) f(ow);
#endif
}

// The usual 2x2 window with stride 2 and no padding: each output reads two pairs of
// neighbours, in the general loop's row-major order and with its comparisons (starting
// from the first value instead of -inf keeps the result: -inf is never taken over -inf,
// NaN always is). Whole planes per iteration and no stored running maximum: the
// per-window loop above re-read and re-rounded y in bf16 and did not vectorise there.
template <class T>
void maxpool_forward_2x2(int threads, const PoolShape& s, const T* x, T* y, int32_t* argmax) {
  const int64_t H = s.height, W = s.width, Ho = s.out_height(), Wo = s.out_width();
  const int64_t planes = s.batch * s.channels;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t plane = 0; plane < planes; ++plane) {
    for (int64_t oh = 0; oh < Ho; ++oh) {
      const int64_t top = 2 * oh * W;  // the window's first input row, in the plane
      const T* __restrict x0 = x + plane * H * W + top;
      const T* __restrict x1 = x0 + W;
      T* __restrict yr = y + (plane * Ho + oh) * Wo;
      int32_t* __restrict ar = argmax + (plane * Ho + oh) * Wo;
      const auto window = [&](int64_t ow) {
        const int32_t at = static_cast<int32_t>(top + 2 * ow);
        float best, v1, v2, v3;
        load_pair_f32(x0 + 2 * ow, best, v1);
        load_pair_f32(x1 + 2 * ow, v2, v3);
        int32_t where = at;
        const bool t1 = pool_takes_max(v1, best);
        best = select_f32(t1, v1, best);
        where = select_i32(t1, at + 1, where);
        const bool t2 = pool_takes_max(v2, best);
        best = select_f32(t2, v2, best);
        where = select_i32(t2, at + static_cast<int32_t>(W), where);
        const bool t3 = pool_takes_max(v3, best);
        best = select_f32(t3, v3, best);
        where = select_i32(t3, at + static_cast<int32_t>(W) + 1, where);
        store_f32(yr[ow], best);
        ar[ow] = where;
      };
      for_each_in_row(Wo, window);
    }
  }
}

// Non-overlapping windows without padding (stride == kernel, the usual 2x2 / 2): every
// input is in at most one window, so dx is that window's dy where the input is its argmax
// (0 + dy, as the general sum gives: never -0), else 0.
template <class T>
void maxpool_backward_tiled(int threads, const PoolShape& s, const T* dy, const int32_t* argmax,
                            T* dx) {
  const int64_t H = s.height, W = s.width, Ho = s.out_height(), Wo = s.out_width();
  const int64_t k_h = s.kernel_h, k_w = s.kernel_w;
  const int64_t rows = s.batch * s.channels * H;  // (plane, h)
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t plane = r / H, h = r % H, oh = h / k_h;
    T* __restrict dxr = dx + r * W;
    if (oh >= Ho) {  // rows below the last window
      for (int64_t w = 0; w < W; ++w) store_f32(dxr[w], 0.0f);
      continue;
    }
    const T* __restrict dyr = dy + (plane * Ho + oh) * Wo;
    const int32_t* __restrict ar = argmax + (plane * Ho + oh) * Wo;
    for (int64_t kw = 0; kw < k_w; ++kw) {
#pragma omp simd
      for (int64_t ow = 0; ow < Wo; ++ow) {
        const int64_t w = ow * k_w + kw;
        store_f32(dxr[w], ar[ow] == static_cast<int32_t>(h * W + w) ? 0.0f + load_f32(dyr[ow]) : 0.0f);
      }
    }
    for (int64_t w = Wo * k_w; w < W; ++w) store_f32(dxr[w], 0.0f);  // right of the last window
  }
}

// maxpool_backward_tiled for the 2x2 / 2 window: a whole plane per iteration, each dy
// value written to its window's pair of columns in one vectorised pass per input row.
template <class T>
void maxpool_backward_2x2(int threads, const PoolShape& s, const T* dy, const int32_t* argmax,
                          T* dx) {
  const int64_t H = s.height, W = s.width, Ho = s.out_height(), Wo = s.out_width();
  const int64_t planes = s.batch * s.channels;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t plane = 0; plane < planes; ++plane) {
    for (int64_t h = 0; h < H; ++h) {
      T* __restrict dxr = dx + (plane * H + h) * W;
      const int64_t oh = h / 2;
      int64_t w_done = 0;
      if (oh < Ho) {
        const T* __restrict dyr = dy + (plane * Ho + oh) * Wo;
        const int32_t* __restrict ar = argmax + (plane * Ho + oh) * Wo;
        const int32_t row = static_cast<int32_t>(h * W);
        const auto window = [&](int64_t ow) {
          const float g = 0.0f + load_f32(dyr[ow]);  // never -0, as the general sum
          const int32_t at = row + static_cast<int32_t>(2 * ow);
          store_pair_f32(dxr + 2 * ow, select_f32(ar[ow] == at, g, 0.0f),
                         select_f32(ar[ow] == at + 1, g, 0.0f));
        };
        for_each_in_row(Wo, window);
        w_done = 2 * Wo;
      }
      for (int64_t w = w_done; w < W; ++w) store_f32(dxr[w], 0.0f);  // outside every window
    }
  }
}

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
      // Branch-free (selects, not jumps): on real data the comparisons are coin flips.
      for (int64_t h = h_lo; h < h_hi; ++h)
        for (int64_t w = w_lo; w < w_hi; ++w) {
          const float v = load_f32(xp[h * W + w]);
          const bool take = pool_takes_max(v, best);
          best = take ? v : best;
          at = take ? h * W + w : at;
        }
      store_f32(y[r * Wo + ow], best);
      argmax[r * Wo + ow] = static_cast<int32_t>(at);
    }
  }
}

// pool_covering of every column of a plane, computed once per plane: per element, its
// 64-bit divisions took most of a backward pass. Wider images compute it per element.
constexpr int64_t kCachedColumns = 1024;

template <class F>
void for_each_covered(const PoolShape& s, int64_t plane_count, int threads, const F& f) {
  const int64_t H = s.height, W = s.width, Ho = s.out_height(), Wo = s.out_width();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t plane = 0; plane < plane_count; ++plane) {
    PoolCover cols[kCachedColumns];
    const bool cached = W <= kCachedColumns;
    if (cached)
      for (int64_t w = 0; w < W; ++w) cols[w] = pool_covering(w, s.kernel_w, s.stride, s.pad, Wo);
    for (int64_t h = 0; h < H; ++h) {
      const PoolCover oh = pool_covering(h, s.kernel_h, s.stride, s.pad, Ho);
      for (int64_t w = 0; w < W; ++w)
        f(plane, h, w, oh, cached ? cols[w] : pool_covering(w, s.kernel_w, s.stride, s.pad, Wo));
    }
  }
}

template <class T>
void maxpool_backward_impl(int threads, const PoolShape& s, const T* dy, const int32_t* argmax,
                           T* dx) {
  if (s.pad == 0 && s.stride == 2 && s.kernel_h == 2 && s.kernel_w == 2)
    return maxpool_backward_2x2(threads, s, dy, argmax, dx);
  if (s.pad == 0 && s.stride == s.kernel_h && s.stride == s.kernel_w)
    return maxpool_backward_tiled(threads, s, dy, argmax, dx);
  const int64_t H = s.height, W = s.width, Ho = s.out_height(), Wo = s.out_width();
  for_each_covered(s, s.batch * s.channels, threads,
                   [&](int64_t plane, int64_t h, int64_t w, PoolCover oh, PoolCover ow) {
                     const T* dyp = dy + plane * Ho * Wo;
                     const int32_t* ap = argmax + plane * Ho * Wo;
                     const int32_t me = static_cast<int32_t>(h * W + w);
                     float sum = 0.0f;
                     // Adding +0 where a window is not ours is exact (sum, starting at
                     // +0, is never -0), so this branch-free sum has the gather's bits.
                     for (int64_t i = oh.lo; i <= oh.hi; ++i)
                       for (int64_t j = ow.lo; j <= ow.hi; ++j)
                         sum += ap[i * Wo + j] == me ? load_f32(dyp[i * Wo + j]) : 0.0f;
                     store_f32(dx[(plane * H + h) * W + w], sum);
                   });
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

// Global average pooling (one window covering each unpadded plane): eight planes at a
// time, each summed in the general loop's order, so eight independent chains of adds
// instead of one (the single chain was latency-bound at about 7 GB/s).
template <class T>
void avgpool_forward_global(int threads, const PoolShape& s, const T* x, T* y) {
  constexpr int64_t kPlanes = 8;
  const int64_t HW = s.height * s.width, planes = s.batch * s.channels;
  const float count = static_cast<float>(s.kernel_h * s.kernel_w);
  const int64_t groups = (planes + kPlanes - 1) / kPlanes;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t p0 = g * kPlanes, n = std::min(kPlanes, planes - p0);
    float sum[kPlanes] = {};
    for (int64_t k = 0; k < HW; ++k)
      for (int64_t p = 0; p < kPlanes; ++p)
        if (p < n) sum[p] += load_f32(x[(p0 + p) * HW + k]);
    for (int64_t p = 0; p < n; ++p) store_f32(y[p0 + p], sum[p] / count);
  }
}

// Non-overlapping unpadded windows inside the image (stride = kernel, or one window): each
// input element lies in at most one window, so its gradient is that window's dy / count
// (0 + it, the general loop's bits), or zero right of and below the last window. Whole
// rows, no per-element cover.
template <class T>
void avgpool_backward_tiled(int threads, const PoolShape& s, const T* dy, T* dx) {
  const int64_t H = s.height, W = s.width, Ho = s.out_height(), Wo = s.out_width();
  const int64_t k_h = s.kernel_h, k_w = s.kernel_w;
  const float count = static_cast<float>(k_h * k_w);
  const int64_t planes = s.batch * s.channels;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t plane = 0; plane < planes; ++plane) {
    T* __restrict dxp = dx + plane * H * W;
    const T* __restrict dyp = dy + plane * Ho * Wo;
    // Window row oh covers input rows [oh * k_h, (oh + 1) * k_h): counted, not divided.
    for (int64_t oh = 0; oh < Ho; ++oh) {
      T* __restrict first = dxp + oh * k_h * W;  // the window row's first input row
      for (int64_t ow = 0; ow < Wo; ++ow) {
        T g;  // rounded once, then copied over the window's columns
        store_f32(g, 0.0f + load_f32(dyp[oh * Wo + ow]) / count);
        for (int64_t kw = 0; kw < k_w; ++kw) first[ow * k_w + kw] = g;
      }
      for (int64_t w = Wo * k_w; w < W; ++w) store_f32(first[w], 0.0f);
      for (int64_t kh = 1; kh < k_h; ++kh)
        for (int64_t w = 0; w < W; ++w) first[kh * W + w] = first[w];
    }
    for (int64_t k = Ho * k_h * W; k < H * W; ++k) store_f32(dxp[k], 0.0f);  // below the last
  }
}

template <class T>
void avgpool_backward_impl(int threads, const PoolShape& s, const T* dy, T* dx) {
  const int64_t H = s.height, W = s.width, Ho = s.out_height(), Wo = s.out_width();
  const float count = static_cast<float>(s.kernel_h * s.kernel_w);
  for_each_covered(s, s.batch * s.channels, threads,
                   [&](int64_t plane, int64_t h, int64_t w, PoolCover oh, PoolCover ow) {
                     const T* dyp = dy + plane * Ho * Wo;
                     float sum = 0.0f;
                     for (int64_t i = oh.lo; i <= oh.hi; ++i)
                       for (int64_t j = ow.lo; j <= ow.hi; ++j)
                         sum += load_f32(dyp[i * Wo + j]) / count;
                     store_f32(dx[(plane * H + h) * W + w], sum);
                   });
}

}  // namespace

void CpuOps::maxpool2d_forward(const PoolShape& s, ConstView x, View y, int32_t* argmax) {
  const char* op = "maxpool2d_forward";
  expect_elems(op, s.x_elems(), {x});
  expect_elems(op, s.y_elems(), {y});
  dispatch_float(op, {y, x}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    if (s.pad == 0 && s.stride == 2 && s.kernel_h == 2 && s.kernel_w == 2)
      maxpool_forward_2x2(threads_, s, x.as<T>(), y.as<T>(), argmax);
    else if (s.pad == 0)
      maxpool_forward_unpadded(threads_, s, x.as<T>(), y.as<T>(), argmax);
    else
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
    if (s.pad == 0 && s.out_height() == 1 && s.out_width() == 1 && s.kernel_h == s.height &&
        s.kernel_w == s.width)
      avgpool_forward_global(threads_, s, x.as<T>(), y.as<T>());
    else
      avgpool_forward_impl(threads_, s, x.as<T>(), y.as<T>());
  });
}

void CpuOps::avgpool2d_backward(const PoolShape& s, ConstView dy, View dx) {
  const char* op = "avgpool2d_backward";
  expect_elems(op, s.y_elems(), {dy});
  expect_elems(op, s.x_elems(), {dx});
  dispatch_float(op, {dx, dy}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    const bool one_window = s.out_height() == 1 && s.out_width() == 1;  // global pooling
    const bool fits = s.kernel_h <= s.height && s.kernel_w <= s.width;  // windows inside
    if (s.pad == 0 && fits && ((s.stride == s.kernel_h && s.stride == s.kernel_w) || one_window))
      avgpool_backward_tiled(threads_, s, dy.as<T>(), dx.as<T>());
    else
      avgpool_backward_impl(threads_, s, dy.as<T>(), dx.as<T>());
  });
}

}  // namespace noeira
