// Launch shapes shared by our kernels: 256-thread blocks and grid-stride loops, so one
// launch covers any size and the grid never exceeds what the hardware takes.
#pragma once
#include <cstdint>

namespace noeira::cuda {

inline constexpr int kBlock = 256;
inline constexpr int64_t kMaxGridBlocks = int64_t{1} << 20;

// Blocks for `work` items, one item per thread, capped (the loops stride over the rest).
inline unsigned grid_for(int64_t work) {
  const int64_t blocks = (work + kBlock - 1) / kBlock;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > kMaxGridBlocks ? kMaxGridBlocks
                                                                         : blocks));
}

__device__ __forceinline__ int64_t global_thread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ int64_t grid_stride() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

// 16-byte aligned, for float4 / int4 access.
inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace noeira::cuda
