// CpuOps' ViT patches (contracts: kernels/op_list.inc): patchify gathers, unpatchify
// scatters the inverse permutation (kernels/common/image_shapes.h PatchShape, whose
// patch_source the runs below follow); each element is copied by itself, so the thread
// count changes nothing.
#include <string>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

// Patch n of image b is y's row b * N + n (D values): per channel c and patch row ky, a
// run of `patch` contiguous pixels of x. f(yi, xi, patch) copies one run (at y + yi and
// x + xi) either way, so the index math runs once per run (per element, its ten 64-bit
// divisions took 5 ms of vit-tiny's step for 393,216 elements).
template <class F>
void for_each_run(int threads, const PatchShape& s, const F& f) {
  const int64_t P = s.patch, gw = s.grid_w(), N = s.patches(), D = s.patch_elems();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t bn = 0; bn < s.batch * N; ++bn) {
    const int64_t b = bn / N, n = bn % N, py = n / gw, px = n % gw;
    int64_t yi = bn * D;
    for (int64_t c = 0; c < s.channels; ++c)
      for (int64_t ky = 0; ky < P; ++ky, yi += P)
        f(yi, ((b * s.channels + c) * s.height + py * P + ky) * s.width + px * P, P);
  }
}

template <class T>
void patchify_impl(int threads, const PatchShape& s, const T* x, T* y) {
  for_each_run(threads, s, [x, y](int64_t yi, int64_t xi, int64_t len) {
    for (int64_t k = 0; k < len; ++k) y[yi + k] = x[xi + k];
  });
}

template <class T>
void unpatchify_impl(int threads, const PatchShape& s, const T* dy, T* dx) {
  for_each_run(threads, s, [dy, dx](int64_t yi, int64_t xi, int64_t len) {
    for (int64_t k = 0; k < len; ++k) dx[xi + k] = dy[yi + k];
  });
}

// Why s is not a shape patchify can run (a permutation needs whole patches), or empty.
std::string patch_problem(const PatchShape& s) {
  if (s.batch < 0 || s.channels < 0 || s.height < 0 || s.width < 0 || s.patch <= 0 ||
      s.height % s.patch != 0 || s.width % s.patch != 0)
    return "image (" + std::to_string(s.batch) + ", " + std::to_string(s.channels) + ", " +
           std::to_string(s.height) + ", " + std::to_string(s.width) + ") does not split into " +
           std::to_string(s.patch) + "x" + std::to_string(s.patch) + " patches";
  return {};
}

}  // namespace

void CpuOps::patchify(const PatchShape& s, ConstView x, View y) {
  const char* op = "patchify";
  if (const std::string why = patch_problem(s); !why.empty()) cpu_op_failed(op, make_error(why));
  expect_elems(op, s.elems(), {x, y});
  dispatch_float(op, {y, x}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    patchify_impl(threads_, s, x.as<T>(), y.as<T>());
  });
}

void CpuOps::unpatchify(const PatchShape& s, ConstView dy, View dx) {
  const char* op = "unpatchify";
  if (const std::string why = patch_problem(s); !why.empty()) cpu_op_failed(op, make_error(why));
  expect_elems(op, s.elems(), {dy, dx});
  dispatch_float(op, {dx, dy}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    unpatchify_impl(threads_, s, dy.as<T>(), dx.as<T>());
  });
}

}  // namespace noeira
