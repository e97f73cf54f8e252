// CudaOps' option-A shortcut (contracts: kernels/op_list.inc; kernels/common/image_shapes.h):
// one thread per output element, grid-stride loops; every element is computed by itself,
// so results depend on neither the launch shape nor scheduling.
#include <string>

#include "kernels/common/bf16.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"
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
    if (backward)
      shortcut_backward_kernel<<<grid_for(n), kBlock, 0, stream>>>(in.as<T>(), out.as<T>(),
                                                                   geom_of(s));
    else
      shortcut_forward_kernel<<<grid_for(n), kBlock, 0, stream>>>(in.as<T>(), out.as<T>(),
                                                                  geom_of(s));
    return cudaGetLastError();
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
