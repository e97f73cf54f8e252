// CudaOps' class token (contracts: kernels/op_list.inc): the class token + position
// assembly, and the row copies around it. One thread per output element (copied element),
// grid-stride loops, 32-bit index math below 2^31 elements (index.cuh), 64-bit addresses;
// every element is computed by itself (an fp32 sum of two operands rounded once into y's
// dtype, or a copy of the stored bits, fp32 or bf16), so results depend on neither the
// launch shape nor scheduling.
#include <string>

#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/index.cuh"
#include "kernels/dispatch.h"

namespace noeira {

namespace cuda {

namespace {

// y (B, N + 1, C): token 0 = cls + pos[0], token 1 + n = x[b][n] + pos[1 + n]; fp32 sums,
// rounded once into T. I: the index type (index.cuh); addresses in int64_t.
template <class T, class I>
__global__ void class_token_forward_kernel(const T* x, const float* cls, const float* pos, T* y,
                                           I n, Divider<I> C, Divider<I> tokens, int64_t N) {
  for (I i = first_index<I>(); i < n; i += index_stride<I>()) {
    I c, t;
    const int64_t b = tokens.divmod(C.divmod(i, c), t), Cv = C.value();
    const float v = t == 0 ? cls[c] + pos[c]
                           : load_f32(x[(b * N + t - 1) * Cv + c]) + pos[t * Cv + c];
    store_f32(y[i], v);
  }
}

// dst[b][dst_t0 + t][c] = src[b][src_t0 + t][c] for b < B, t < count, c < C: the stored
// bits, unchanged.
template <class T, class I>
__global__ void copy_token_rows_kernel(const T* src, int64_t src_T, int64_t src_t0, T* dst,
                                       int64_t dst_T, int64_t dst_t0, I n, Divider<I> C,
                                       Divider<I> count) {
  for (I i = first_index<I>(); i < n; i += index_stride<I>()) {
    I c, t;
    const int64_t b = count.divmod(C.divmod(i, c), t), Cv = C.value();
    dst[(b * dst_T + dst_t0 + t) * Cv + c] = src[(b * src_T + src_t0 + t) * Cv + c];
  }
}

cudaError_t launch_class_token_forward(cudaStream_t stream, ConstView x, const float* cls,
                                       const float* pos, View y, int64_t B, int64_t N,
                                       int64_t C) {
  const char* op = "class_token_forward";
  expect_elems(op, B * N * C, {x});
  expect_elems(op, B * (N + 1) * C, {y});
  const int64_t n = B * (N + 1) * C;
  if (n == 0) return cudaSuccess;
  return dispatch_float(op, {y, x}, [&](auto storage) {
    using S = typename decltype(storage)::type;
    return with_index(n, [&](auto index) {
      using I = typename decltype(index)::type;
      class_token_forward_kernel<<<grid_for(n), kBlock, 0, stream>>>(
          x.as<S>(), cls, pos, y.as<S>(), static_cast<I>(n), Divider<I>(C), Divider<I>(N + 1),
          N);
      return cudaGetLastError();
    });
  });
}

cudaError_t launch_copy_token_rows(cudaStream_t stream, ConstView src, int64_t src_T,
                                   int64_t src_t0, View dst, int64_t dst_T, int64_t dst_t0,
                                   int64_t count, int64_t B, int64_t C) {
  const char* op = "copy_token_rows";
  expect_elems(op, B * src_T * C, {src});
  expect_elems(op, B * dst_T * C, {dst});
  const int64_t n = B * count * C;
  if (n == 0) return cudaSuccess;
  return dispatch_float(op, {dst, src}, [&](auto storage) {
    using S = typename decltype(storage)::type;
    return with_index(n, [&](auto index) {
      using I = typename decltype(index)::type;
      copy_token_rows_kernel<<<grid_for(n), kBlock, 0, stream>>>(
          src.as<S>(), src_T, src_t0, dst.as<S>(), dst_T, dst_t0, static_cast<I>(n),
          Divider<I>(C), Divider<I>(count));
      return cudaGetLastError();
    });
  });
}

}  // namespace

}  // namespace cuda

void CudaOps::class_token_forward(ConstView x, const float* cls, const float* pos, View y,
                                  int64_t B, int64_t N, int64_t C) {
  OpScope scope(*state_, "class_token_forward");
  if (B < 0 || N < 0 || C < 0)
    return fail("invalid shape B " + std::to_string(B) + ", N " + std::to_string(N) + ", C " +
                std::to_string(C));
  if (B * (N + 1) * C > 0 && (y.empty() || (B * N * C > 0 && x.empty()) || !cls || !pos))
    return fail("a missing operand (x, cls, pos and y are all needed)");
  check(cuda::launch_class_token_forward(stream_, x, cls, pos, y, B, N, C),
        "class_token_forward_kernel");
}

void CudaOps::copy_token_rows(ConstView src, int64_t src_T, int64_t src_t0, View dst,
                              int64_t dst_T, int64_t dst_t0, int64_t count, int64_t B,
                              int64_t C) {
  OpScope scope(*state_, "copy_token_rows");
  if (B < 0 || C < 0 || count < 0 || src_t0 < 0 || dst_t0 < 0 || src_t0 + count > src_T ||
      dst_t0 + count > dst_T)
    return fail("invalid rows: " + std::to_string(count) + " from token " +
                std::to_string(src_t0) + " of " + std::to_string(src_T) + " to token " +
                std::to_string(dst_t0) + " of " + std::to_string(dst_T) + " (B " +
                std::to_string(B) + ", C " + std::to_string(C) + ")");
  if (B * count * C > 0 && (src.empty() || dst.empty()))
    return fail("a missing operand (src and dst are both needed)");
  check(cuda::launch_copy_token_rows(stream_, src, src_T, src_t0, dst, dst_T, dst_t0, count, B,
                                     C),
        "copy_token_rows_kernel");
}

}  // namespace noeira
