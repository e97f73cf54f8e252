// CpuOps' ViT patches (contracts: kernels/op_list.inc): patchify gathers, unpatchify
// scatters the inverse permutation (kernels/common/image_shapes.h PatchShape); each
// element is copied by itself, so the thread count changes nothing.
#include <string>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

template <class T>
void patchify_impl(int threads, const PatchShape& s, const T* x, T* y) {
  const int64_t n = s.elems();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) y[i] = x[s.patch_source(i)];
}

template <class T>
void unpatchify_impl(int threads, const PatchShape& s, const T* dy, T* dx) {
  const int64_t n = s.elems();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) dx[s.patch_source(i)] = dy[i];
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
