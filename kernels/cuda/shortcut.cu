// CudaOps' option-A shortcut (contracts: kernels/op_list.inc; kernels/common/image_shapes.h):
// one thread per output element, grid-stride loops (32-bit index math below 2^31 elements:
// index.cuh); every element is computed by itself, so results depend on neither the launch
// shape nor scheduling.
#include <string>

#include "kernels/common/bf16.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/index.cuh"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

std::string shortcut_problem(const ShortcutShape& s) {
  if (s.batch < 0 || s.in_channels < 0 || s.height <= 0 || s.width <= 0 || s.stride <= 0 ||
      s.out_channels < s.in_channels)
    return "invalid shortcut " + std::to_string(s.batch) + "x" + std::to_string(s.in_channels) +
           "x" + std::to_string(s.height) + "x" + std::to_string(s.width) + " -> " +
           std::to_string(s.out_channels) + " channels, stride " + std::to_string(s.stride);
  return {};
}

}  // namespace

namespace cuda {

namespace {

struct ShortcutGeom {
  int64_t B, Cin, H, W, Cout, Ho, Wo, stride, pad_c;
};

ShortcutGeom geom_of(const ShortcutShape& s) {
  return {s.batch, s.in_channels, s.height, s.width, s.out_channels, s.out_height(),
          s.out_width(), s.stride, s.pad_channels()};
}

// The geometry's divisors in the index type I (index.cuh); addresses stay in int64_t.
template <class I>
struct ShortcutDiv {
  Divider<I> Cin, H, W, Cout, Ho, Wo, stride;
};

template <class I>
ShortcutDiv<I> div_of(const ShortcutGeom& g) {
  return {Divider<I>(g.Cin), Divider<I>(g.H),  Divider<I>(g.W), Divider<I>(g.Cout),
          Divider<I>(g.Ho),  Divider<I>(g.Wo), Divider<I>(g.stride)};
}

// y(b, co, oh, ow) = x(b, co - p, oh * s, ow * s) for kept channels, else 0.
template <class T, class I>
__global__ void shortcut_forward_kernel(const T* x, T* y, ShortcutGeom g, ShortcutDiv<I> d,
                                        I n) {
  for (I i = first_index<I>(); i < n; i += index_stride<I>()) {
    I ow, oh, co;
    const int64_t b = d.Cout.divmod(d.Ho.divmod(d.Wo.divmod(i, ow), oh), co);
    const int64_t ci = static_cast<int64_t>(co) - g.pad_c;
    float v = 0.0f;
    if (ci >= 0 && ci < g.Cin)
      v = load_f32(x[((b * g.Cin + ci) * g.H + oh * g.stride) * g.W + ow * g.stride]);
    store_f32(y[i], v);
  }
}

// dx(b, ci, h, w) = dy(b, ci + p, h / s, w / s) at the subsampled pixels, else 0.
template <class T, class I>
__global__ void shortcut_backward_kernel(const T* dy, T* dx, ShortcutGeom g, ShortcutDiv<I> d,
                                         I n) {
  for (I i = first_index<I>(); i < n; i += index_stride<I>()) {
    I w, h, ci, hr, wr;
    const int64_t b = d.Cin.divmod(d.H.divmod(d.W.divmod(i, w), h), ci);
    const int64_t hs = d.stride.divmod(h, hr), ws = d.stride.divmod(w, wr);
    float v = 0.0f;
    if (hr == 0 && wr == 0)
      v = load_f32(dy[((b * g.Cout + ci + g.pad_c) * g.Ho + hs) * g.Wo + ws]);
    store_f32(dx[i], v);
  }
}

// The forward (in x, out y) or, with `backward`, its backward (in dy, out dx): one thread
// per element of out.
cudaError_t launch_shortcut(cudaStream_t stream, const char* op, const ShortcutShape& s,
                            ConstView in, View out, bool backward) {
  const int64_t n_in = backward ? s.y_elems() : s.x_elems();
  const int64_t n = backward ? s.x_elems() : s.y_elems();
  expect_elems(op, n_in, {in});
  expect_elems(op, n, {out});
  if (n == 0) return cudaSuccess;
  return dispatch_float(op, {in, out}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    return with_index(n, [&](auto index) {
      using I = typename decltype(index)::type;
      const ShortcutGeom g = geom_of(s);
      const ShortcutDiv<I> d = div_of<I>(g);
      if (backward)
        shortcut_backward_kernel<<<grid_for(n), kBlock, 0, stream>>>(in.as<T>(), out.as<T>(), g,
                                                                     d, static_cast<I>(n));
      else
        shortcut_forward_kernel<<<grid_for(n), kBlock, 0, stream>>>(in.as<T>(), out.as<T>(), g,
                                                                    d, static_cast<I>(n));
      return cudaGetLastError();
    });
  });
}

}  // namespace

}  // namespace cuda

void CudaOps::shortcut_forward(const ShortcutShape& s, ConstView x, View y) {
  OpScope scope(*state_, "shortcut_forward");
  if (const std::string p = shortcut_problem(s); !p.empty()) return fail(p);
  check(cuda::launch_shortcut(stream_, "shortcut_forward", s, x, y, false),
        "shortcut_forward_kernel");
}

void CudaOps::shortcut_backward(const ShortcutShape& s, ConstView dy, View dx) {
  OpScope scope(*state_, "shortcut_backward");
  if (const std::string p = shortcut_problem(s); !p.empty()) return fail(p);
  check(cuda::launch_shortcut(stream_, "shortcut_backward", s, dy, dx, true),
        "shortcut_backward_kernel");
}

}  // namespace noeira
