// CpuOps' option-A shortcut (contracts: kernels/op_list.inc): one output plane per OpenMP
// iteration, each element computed by itself, so the thread count changes nothing; the
// output streamed where it is large (kernels/cpu/streaming_store.h).
#include <cstdint>

#include "kernels/common/bf16.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/streaming_store.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

// Stride 2 over even rows moves whole rows as unsigned integers: an output element is the
// low half of an input pair (forward), an input pair is the output element widened with a
// zero high half (backward) on this little-endian machine; one vector instruction per 16
// elements, where copies element by element (bf16 through fp32 and back) ran at 14-17 GB/s
// standalone. A copy's bits either way. may_alias: the rows are T's memory.
template <class T>
struct PairOf;
template <>
struct PairOf<float> {
  using U = uint32_t __attribute__((may_alias));
  using U2 = uint64_t __attribute__((may_alias));
};
template <>
struct PairOf<bf16_t> {
  using U = uint16_t __attribute__((may_alias));
  using U2 = uint32_t __attribute__((may_alias));
};

bool pair_aligned(const void* p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// Planes of at most kStageElems elements (ResNet's: 1024, 256, 64) are built in a staged
// buffer on the stack and streamed when the whole output is (kernels/cpu/streaming_store.h);
// larger planes are written in place. plane(out) writes one plane's elements to out.
template <class T, class F>
void write_plane(T* dst, int64_t n, bool stream, const F& plane) {
  if (!stream || n > kStageElems) {
    plane(dst);
    return;
  }
  // One staged block: write_staged calls f once, with the whole plane.
  write_staged(dst, n, true, [&](int64_t, int64_t, T* staged) { plane(staged); });
}

// Rows of a plane are copied or zeroed whole: a test per element (and the backward's
// 64-bit h % stride, w % stride) made these copies run at 3-5 GB/s.
template <class T>
void shortcut_forward_impl(int threads, const ShortcutShape& s, const T* x, T* y) {
  using U = typename PairOf<T>::U;
  using U2 = typename PairOf<T>::U2;
  const int64_t H = s.height, W = s.width, Ho = s.out_height(), Wo = s.out_width();
  const int64_t Cin = s.in_channels, Cout = s.out_channels, p = s.pad_channels();
  const int64_t st = s.stride;
  const bool pairs = st == 2 && W % 2 == 0 && pair_aligned(x, sizeof(U2));
  const bool stream = streams(static_cast<size_t>(s.y_elems()) * sizeof(T));
#pragma omp parallel num_threads(threads)
  {
#pragma omp for schedule(static) nowait
    for (int64_t bc = 0; bc < s.batch * Cout; ++bc) {  // one output plane
      const int64_t b = bc / Cout, ci = bc % Cout - p;  // the input channel, if any
      const T* __restrict xp = ci < 0 || ci >= Cin ? nullptr : x + (b * Cin + ci) * H * W;
      write_plane(y + bc * Ho * Wo, Ho * Wo, stream, [&](T* __restrict yp) {
        if (!xp) {
          for (int64_t k = 0; k < Ho * Wo; ++k) yp[k] = T{0};  // +0 in fp32 and bf16
        } else if (pairs) {
          for (int64_t i = 0; i < Ho; ++i) {
            const U2* __restrict in = reinterpret_cast<const U2*>(xp + i * 2 * W);
            U* __restrict out = reinterpret_cast<U*>(yp + i * Wo);
            for (int64_t j = 0; j < Wo; ++j) out[j] = static_cast<U>(in[j]);
          }
        } else {
          for (int64_t i = 0; i < Ho; ++i)
            for (int64_t j = 0; j < Wo; ++j)
              store_f32(yp[i * Wo + j], load_f32(xp[(i * W + j) * st]));
        }
      });
    }
    if (stream) stream_fence();
  }
}

template <class T>
void shortcut_backward_impl(int threads, const ShortcutShape& s, const T* dy, T* dx) {
  using U = typename PairOf<T>::U;
  using U2 = typename PairOf<T>::U2;
  const int64_t H = s.height, W = s.width, Ho = s.out_height(), Wo = s.out_width();
  const int64_t Cin = s.in_channels, Cout = s.out_channels, p = s.pad_channels();
  const int64_t st = s.stride;
  const bool pairs = st == 2 && W % 2 == 0 && pair_aligned(dx, sizeof(U2));
  const bool stream = streams(static_cast<size_t>(s.x_elems()) * sizeof(T));
#pragma omp parallel num_threads(threads)
  {
#pragma omp for schedule(static) nowait
    for (int64_t bc = 0; bc < s.batch * Cin; ++bc) {  // one input plane
      const int64_t b = bc / Cin, co = bc % Cin + p;
      const T* __restrict dyp = dy + (b * Cout + co) * Ho * Wo;
      write_plane(dx + bc * H * W, H * W, stream, [&](T* __restrict dxp) {
        if (pairs) {
          // Row 2i: output row i widened; row 2i + 1: zeros.
          for (int64_t h = 0; h < H; ++h) {
            U2* __restrict out = reinterpret_cast<U2*>(dxp + h * W);
            if (h % 2 != 0) {
              for (int64_t j = 0; j < W / 2; ++j) out[j] = 0;
              continue;
            }
            const U* __restrict in = reinterpret_cast<const U*>(dyp + (h / 2) * Wo);
            for (int64_t j = 0; j < W / 2; ++j) out[j] = static_cast<U2>(in[j]);
          }
          return;
        }
        for (int64_t k = 0; k < H * W; ++k) dxp[k] = T{0};
        // Input (i * stride, j * stride) was output (i, j); every other input had no path.
        for (int64_t i = 0; i < Ho; ++i)
          for (int64_t j = 0; j < Wo; ++j)
            store_f32(dxp[(i * W + j) * st], load_f32(dyp[i * Wo + j]));
      });
    }
    if (stream) stream_fence();
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
