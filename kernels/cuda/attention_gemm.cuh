// What CUDA's two GEMM paths of attention share: attention.cu (fp32 views) and
// attention_bf16.cu (bf16 views on bf16 tensor cores). Their head layout changes are in
// attention_heads.cu (launchers.h), their per-element math in kernels/common/attention.h.
//
// Workspace buffers start on 256 bytes (align_up; the base is aligned first), so every
// cuBLASLt operand does. The softmax kernels take one warp per row of the (B * nh * T, T)
// scores; the lanes' partial results are folded by a butterfly (every lane ends with the
// same value: each step adds the same two numbers on both lanes of a pair, and fp32
// addition commutes).
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/cuda/launch.cuh"

namespace noeira::cuda::attention_gemm {

constexpr size_t kAlign = 256;
inline size_t align_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }
inline uintptr_t align_up(void* p) {
  return (reinterpret_cast<uintptr_t>(p) + kAlign - 1) / kAlign * kAlign;
}

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kLanes = 32;
constexpr int kRowsPerBlock = kBlock / kLanes;

__device__ __forceinline__ float warp_sum(float v) {
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(kFullMask, v, off);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int off = 16; off > 0; off /= 2) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, off));
  return v;
}

// Blocks of kRowsPerBlock warps for `rows` rows, capped (the loops stride over the rest).
inline unsigned row_blocks(int64_t rows) {
  const int64_t b = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  return static_cast<unsigned>(b < 1 ? 1 : (b > (1 << 20) ? (1 << 20) : b));
}

// attention_bf16.cu: the bf16 path's workspace for (B, T, C, nh), SIZE_MAX past what its
// byte counts can hold (the plan then overflows and Arenas::allocate refuses it).
size_t bf16_workspace_bytes(int64_t B, int64_t T, int64_t C, int64_t nh);

}  // namespace noeira::cuda::attention_gemm
