// Element loops in the index type their shape allows (kernels/common/fast_divmod.h):
// uint32_t indices and multiply-shift divisions below 2^31 elements, int64_t and the
// machine's `/` above. A kernel is written once as a template on I; its launcher picks I
// with with_index, a pure function of the shape, so eager and captured runs agree. Divide
// in I, then widen to int64_t for addresses (64-bit multiply-adds are cheap; divides not).
#pragma once
#include <cstdint>

#include "kernels/common/fast_divmod.h"
#include "kernels/cuda/launch.cuh"

namespace noeira::cuda {

// grid_for's grids: a uint32_t index below 2^31 plus one grid stride stays below 2^32.
static_assert(kMaxGridBlocks * kBlock < (int64_t{1} << 31), "grid stride must fit 31 bits");

template <class I>
struct IndexTag {
  using type = I;
};

// The calling thread's first index and the grid's stride, in I (kBlock-thread grids).
template <class I>
__device__ __forceinline__ I first_index() {
  return static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x);
}
template <class I>
__device__ __forceinline__ I index_stride() {
  return static_cast<I>(gridDim.x) * static_cast<I>(blockDim.x);
}

// f(IndexTag<uint32_t>{}) when every index below n fits 31 bits, else f(IndexTag<int64_t>{}).
template <class F>
auto with_index(int64_t n, F&& f) {
  return use_index32(n) ? f(IndexTag<uint32_t>{}) : f(IndexTag<int64_t>{});
}

}  // namespace noeira::cuda
