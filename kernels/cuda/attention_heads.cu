// The head layout changes of CUDA's GEMM-path attention (attention.cu for fp32,
// attention_bf16.cu for bf16; declared in launchers.h): one thread per element, the index
// math of kernels/common/attention.h in the index type the size allows (index.cuh).
#include <type_traits>

#include "kernels/common/attention.h"
#include "kernels/cuda/index.cuh"
#include "kernels/cuda/launchers.h"
#include "kernels/dispatch.h"

namespace noeira::cuda {

namespace {

using attention::HeadsGeom;
using attention::heads_geom;

// Element e of dst (parts, B, nh, T, hd) <- src (B, T, parts * C) at the same (part, b, t,
// h, d): widened to fp32 (D = float), or copied bit for bit (bf16 to bf16).
template <class S, class D, class I>
__global__ void to_heads_kernel(const S* src, D* dst, HeadsGeom<I> g) {
  for (I e = first_index<I>(); e < g.n; e += index_stride<I>()) {
    I stored;
    const S x = src[attention::seq_index_of_head(g, e, stored)];
    if constexpr (std::is_same_v<D, S>)
      dst[stored] = x;
    else
      dst[stored] = load_f32(x);
  }
}

// Element i of y (B, T, parts * C) <- src (parts, B, nh, T, hd), rounded once.
template <class T, class I>
__global__ void from_heads_kernel(const float* src, T* y, HeadsGeom<I> g) {
  for (I i = first_index<I>(); i < g.n; i += index_stride<I>())
    store_f32(y[i], src[attention::head_index_of_seq(g, i)]);
}

// Every index lies below parts * part_stride (>= parts * B * T * C, the elements).
template <class S, class D>
cudaError_t launch_to_heads(cudaStream_t stream, const S* src, D* dst, int parts, int64_t B,
                            int64_t T, int64_t C, int64_t nh, int64_t part_stride) {
  const int64_t n = parts * B * T * C;
  return with_index(parts * part_stride, [&](auto index) {
    using I = typename decltype(index)::type;
    to_heads_kernel<<<grid_for(n), kBlock, 0, stream>>>(
        src, dst, heads_geom<I>(parts, B, T, C, nh, part_stride));
    return cudaGetLastError();
  });
}

}  // namespace

cudaError_t to_heads(cudaStream_t stream, const char* op, ConstView src, float* dst, int parts,
                     int64_t B, int64_t T, int64_t C, int64_t nh) {
  const int64_t n = parts * B * T * C;
  expect_elems(op, n, {src});
  if (n == 0) return cudaSuccess;
  return dispatch_float(op, {src}, [&](auto storage) {
    using S = typename decltype(storage)::type;
    return launch_to_heads(stream, src.as<S>(), dst, parts, B, T, C, nh, B * T * C);
  });
}

cudaError_t to_heads_bf16(cudaStream_t stream, const char* op, ConstView src, bf16_t* dst,
                          int parts, int64_t B, int64_t T, int64_t C, int64_t nh,
                          int64_t part_stride) {
  const int64_t n = parts * B * T * C;
  expect_elems(op, n, {src});
  expect_dtype(op, DType::kBF16, {src});
  if (n == 0) return cudaSuccess;
  return launch_to_heads(stream, src.as<bf16_t>(), dst, parts, B, T, C, nh, part_stride);
}

cudaError_t from_heads(cudaStream_t stream, const char* op, const float* src, View y, int parts,
                       int64_t B, int64_t T, int64_t C, int64_t nh, int64_t part_stride) {
  const int64_t n = parts * B * T * C;
  expect_elems(op, n, {y});
  if (n == 0) return cudaSuccess;
  return dispatch_float(op, {y}, [&](auto storage) {
    using S = typename decltype(storage)::type;
    return with_index(parts * part_stride, [&](auto index) {
      using I = typename decltype(index)::type;
      from_heads_kernel<<<grid_for(n), kBlock, 0, stream>>>(
          src, y.as<S>(), heads_geom<I>(parts, B, T, C, nh, part_stride));
      return cudaGetLastError();
    });
  });
}

}  // namespace noeira::cuda
