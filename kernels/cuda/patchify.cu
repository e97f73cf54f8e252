// CudaOps' ViT patches (contracts: kernels/op_list.inc; kernels/common/image_shapes.h
// PatchShape): patchify is a gather, one thread per element of y; unpatchify the inverse
// permutation as a scatter, one thread per element of dy, so each element of dx is written
// once. fp32 or bf16, the stored bits copied; index math in 32 bits below 2^31 elements
// (kernels/common/patch_index.h).
#include <string>

#include "kernels/common/patch_index.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/index.cuh"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

std::string patch_problem(const PatchShape& s) {
  if (s.batch < 0 || s.channels < 0 || s.height < 0 || s.width < 0 || s.patch <= 0 ||
      s.height % s.patch != 0 || s.width % s.patch != 0)
    return "invalid patches of " + std::to_string(s.batch) + "x" + std::to_string(s.channels) +
           "x" + std::to_string(s.height) + "x" + std::to_string(s.width) + " images, patch " +
           std::to_string(s.patch) + " (H and W must be multiples of the patch size)";
  return {};
}

}  // namespace

namespace cuda {

namespace {

// y[i] = x[patch_source(i)]: a gather, the stored bits unchanged.
template <class T, class I>
__global__ void patchify_kernel(const T* x, T* y, PatchIndex<I> p, I n) {
  for (I i = first_index<I>(); i < n; i += index_stride<I>()) y[i] = x[p.source(i)];
}

// dx[patch_source(i)] = dy[i]: patch_source is a permutation, so every element of dx is
// written by exactly one thread (no two writes meet, no atomics).
template <class T, class I>
__global__ void unpatchify_kernel(const T* dy, T* dx, PatchIndex<I> p, I n) {
  for (I i = first_index<I>(); i < n; i += index_stride<I>()) dx[p.source(i)] = dy[i];
}

// patchify (gather) or, with `scatter`, unpatchify (the inverse permutation): src and
// dst hold s.elems() elements of one dtype.
cudaError_t launch_patch_copy(cudaStream_t stream, const char* op, const PatchShape& s,
                              ConstView src, View dst, bool scatter) {
  const int64_t n = s.elems();
  expect_elems(op, n, {src, dst});
  if (n == 0) return cudaSuccess;
  return dispatch_float(op, {src, dst}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    return with_index(n, [&](auto index) {
      using I = typename decltype(index)::type;
      const PatchIndex<I> p(s);
      if (scatter)
        unpatchify_kernel<<<grid_for(n), kBlock, 0, stream>>>(src.as<T>(), dst.as<T>(), p,
                                                              static_cast<I>(n));
      else
        patchify_kernel<<<grid_for(n), kBlock, 0, stream>>>(src.as<T>(), dst.as<T>(), p,
                                                            static_cast<I>(n));
      return cudaGetLastError();
    });
  });
}

}  // namespace

}  // namespace cuda

void CudaOps::patchify(const PatchShape& s, ConstView x, View y) {
  OpScope scope(*state_, "patchify");
  if (const std::string p = patch_problem(s); !p.empty()) return fail(p);
  if (s.elems() > 0 && (x.empty() || y.empty())) return fail("a missing operand (x or y)");
  check(cuda::launch_patch_copy(stream_, "patchify", s, x, y, false), "patchify_kernel");
}

void CudaOps::unpatchify(const PatchShape& s, ConstView dy, View dx) {
  OpScope scope(*state_, "unpatchify");
  if (const std::string p = patch_problem(s); !p.empty()) return fail(p);
  if (s.elems() > 0 && (dy.empty() || dx.empty())) return fail("a missing operand (dy or dx)");
  check(cuda::launch_patch_copy(stream_, "unpatchify", s, dy, dx, true), "unpatchify_kernel");
}

}  // namespace noeira
