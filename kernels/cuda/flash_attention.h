// Fused, flash-style attention, causal (GPT) or not (ViT), for bf16 storage
// (kernels/cuda/flash_attention.cu): the CUDA backend's attention core when the views are
// bf16 and 1 <= hd <= 128 (contract: kernels/op_list.inc, "Sequences"). bf16 in, bf16 out, fp32
// math; the (T, T) probabilities are never stored: att holds each query row's log-sum-exp
// of its visible scaled scores (B, nh, T fp32) and the backward recomputes P from it. No
// allocation, no host synchronisation, no atomics: every output element (out, lse, D, dq,
// dk, dv) is written by exactly one thread, which sums in a fixed order set by the shapes
// and `causal` alone, so eager and captured runs repeat bit for bit.
//
// Visible: query i sees key j when both lie in [0, T) and, if causal, j <= i (the tiles
// are padded past T with zero rows, which are masked, never counted). `causal` is a
// template argument of the kernels (compiled for both cases).
//
// Tiles: hd is padded (zeros) to HD in {16, 32, 64, 128}; a block owns BR = 64 rows
// (HD <= 64) or 32 rows (HD = 128) and loops over tiles of BC = 32 rows of the other
// operand, 4 threads per owned row (4 * BR threads), operands staged in static shared
// memory as bf16 (exact), at most 41.5 KiB per block.
//   forward  (grid: query tiles, nh, B): for key tiles k0 = 0, 32, ... up to the tile's
//            last query row when causal, up to T when not: s = q.k (fp32 FMAs, d
//            ascending) * scale (rounded), invisible keys -inf; online softmax (running
//            max m and sum l, fp32; thread t of the row's 4 holds keys t, t + 4, ..., its
//            partial sum in that order, the 4 folded by a butterfly); o = o * exp(m_old -
//            m) + sum_j p_j v_j (j ascending); out = o / l rounded once; lse = m + log(l).
//   backward, kernel 1 (grid: query tiles, nh, B): pass 1 over the forward's key tiles:
//            D_i = sum_j P_ij dP_ij (P = exp(s - lse_i), dP = dO_i . v_j; the forward's
//            partial-and-butterfly order), written to the workspace; pass 2:
//            dS_ij = (P_ij (dP_ij - D_i)) * scale, dq_i = sum_j dS_ij k_j (j ascending).
//   backward, kernel 2 (grid: key tiles, nh, B), after kernel 1: for query tiles from the
//            one holding the tile's first key (causal; every query tile from 0 when not)
//            to T: dv_j = sum_i P_ij dO_i, dk_j = sum_i dS_ij q_i (i ascending).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/common/bf16.h"

namespace noeira::cuda {

// The head sizes the kernels take (larger ones are refused: the op fails).
inline constexpr int64_t kFlashMaxHeadDim = 128;
inline bool flash_attention_supported(int64_t hd) { return hd >= 1 && hd <= kFlashMaxHeadDim; }

// The workspace: D (B, nh, T) fp32, after aligning the base to 256 bytes.
size_t flash_attention_workspace_bytes(int64_t B, int64_t T, int64_t nh);

// qkv (B, T, 3C) -> out (B, T, C) and lse (B, nh, T).
cudaError_t launch_flash_attention_forward(cudaStream_t stream, const bf16_t* qkv, bf16_t* out,
                                           float* lse, int64_t B, int64_t T, int64_t C,
                                           int64_t nh, float scale, bool causal);
// dout (B, T, C), qkv and the forward's lse (the same `causal`) -> dqkv (B, T, 3C), every
// element overwritten.
cudaError_t launch_flash_attention_backward(cudaStream_t stream, const bf16_t* dout,
                                            const bf16_t* qkv, const float* lse, bf16_t* dqkv,
                                            int64_t B, int64_t T, int64_t C, int64_t nh,
                                            float scale, bool causal, void* workspace);

}  // namespace noeira::cuda
