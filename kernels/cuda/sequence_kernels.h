// Host-side launchers for the sequence ops' own kernels (embedding.cu, layernorm.cu,
// attention.cu, tokens.cu, clip.cu); contracts in kernels/ops.h ("Sequences"). Each
// enqueues on `stream` and returns the first launch error, dispatching once on its views'
// dtype (fp32 or bf16 storage, fp32 math, sums in double where kernels/common/layernorm.h
// and clip.h say so). Nothing here allocates, synchronises or uses floating-point atomics;
// every reduction runs in an order fixed by the shapes (or, for embedding_backward, by the
// ids), stated next to each launcher, so eager and captured runs repeat bit for bit.
//
// Workspaces are planned by the caller (the *_workspace_bytes below, which CudaOps'
// Ops::*_workspace_bytes return) and carved into 256-byte aligned parts here.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/ops.h"

namespace noeira::cuda {

// ---- embedding.cu ----
// Forward: one thread per element of y; an id outside [0, V) is not checked against V
// (the op has no V) but a negative one writes NaN rather than reading out of bounds.
cudaError_t launch_embedding_forward(cudaStream_t stream, const int32_t* ids, const float* wte,
                                     const float* wpe, View y, int64_t rows, int64_t T,
                                     int64_t C);
// Backward. dwte: the rows are sorted by token with cub's LSD radix sort of (id, row)
// pairs, which is stable, so each token's rows stay in row order (an id outside [0, V) is
// keyed V and skipped); then one block per (token, 256-column tile) sums the token's dy
// rows in that order in fp32 from 0.0f and adds the sum to dwte once (the CPU's order,
// kernels/cpu/cpu_sequence.cpp). dwpe: one thread per (t, c) sums rows t, T + t, ... in
// order in fp32 and adds once. Workspace: keys in/out, rows in/out (rows int32 each) and
// cub's temporary storage; rows <= INT_MAX. 0 bytes when the size query fails (the op
// then reports the missing workspace).
size_t embedding_workspace_bytes(int64_t rows, int64_t V);
cudaError_t launch_embedding_backward(cudaStream_t stream, const int32_t* ids, ConstView dy,
                                      float* dwte, float* dwpe, int64_t rows, int64_t T,
                                      int64_t C, int64_t V, void* workspace);

// ---- layernorm.cu ----
// Forward: one warp per row. Lane l sums x[l], x[l + 32], ... in double (x and x * x) in
// ascending order; the 32 lane sums are folded by a butterfly (xor 16, 8, 4, 2, 1), which
// leaves every lane the same bits; then kernels/common/layernorm.h's stats and apply.
cudaError_t launch_layernorm_forward(cudaStream_t stream, ConstView x, const float* gamma,
                                     const float* beta, View y, float* mean, float* rstd,
                                     int64_t N, int64_t C, float eps);
// Backward. dx: one warp per row, the two double row sums in the forward's lane order.
// dgamma/dbeta: the rows are cut into column_sum_plan(N, kColumnSumMaxChunks) chunks
// (kernels/common/column_sum.h); in a chunk, row lane l (of kColumnSumLanes) sums rows
// begin + l, begin + l + kColumnSumLanes, ... in double, the lanes are folded pairwise
// (l += l + h, h = 4, 2, 1), the chunk partials go to the workspace, and a finishing
// kernel adds them in chunk order and adds float(total) to dgamma / dbeta once.
size_t layernorm_workspace_bytes(int64_t N, int64_t C);
cudaError_t launch_layernorm_backward(cudaStream_t stream, ConstView dy, ConstView x,
                                      const float* gamma, const float* mean, const float* rstd,
                                      View dx, float* dgamma, float* dbeta, int64_t N, int64_t C,
                                      void* workspace);

// ---- attention.cu: the element-wise and row kernels around the attention GEMMs ----
// (CudaOps::attention_* in cuda_sequence_ops.cpp run the GEMMs through cuBLASLt.)
// The workspace, in fp32 (each part 256-byte aligned): qkv_h (3, B, nh, T, hd) q, k, v
// per head; o_h (B, nh, T, hd) the forward's att v, the backward's dout per head;
// dqkv_h (3, B, nh, T, hd) the backward's dq, dk, dv per head; datt (B, nh, T, T) the
// backward's datt, then dS in place. The forward uses the first two parts only.
struct AttentionWorkspace {
  float* qkv_h;
  float* o_h;
  float* dqkv_h;
  float* datt;
};
size_t attention_workspace_bytes(int64_t B, int64_t T, int64_t C, int64_t nh);
AttentionWorkspace attention_workspace(void* workspace, int64_t B, int64_t T, int64_t C,
                                       int64_t nh);
// qkv (B, T, 3C) storage -> dst (3, B, nh, T, hd) fp32 (exact for bf16).
cudaError_t launch_qkv_to_heads(cudaStream_t stream, ConstView qkv, float* dst, int64_t B,
                                int64_t T, int64_t C, int64_t nh);
// x (B, T, C) storage -> dst (B, nh, T, hd) fp32.
cudaError_t launch_seq_to_heads(cudaStream_t stream, ConstView x, float* dst, int64_t B,
                                int64_t T, int64_t C, int64_t nh);
// src (B, nh, T, hd) fp32 -> y (B, T, C), rounded once into y's dtype.
cudaError_t launch_heads_to_seq(cudaStream_t stream, const float* src, View y, int64_t B,
                                int64_t T, int64_t C, int64_t nh);
// src (3, B, nh, T, hd) fp32 -> dqkv (B, T, 3C), rounded once into dqkv's dtype.
cudaError_t launch_heads_to_qkv(cudaStream_t stream, const float* src, View dqkv, int64_t B,
                                int64_t T, int64_t C, int64_t nh);
// In place over att (rows, T) holding q k^T, row r = (b, h, i) with i = r % T: one warp per
// row; row r sees keys j < end, end = i + 1 when causal, T when not (no mask at all);
// s_j = product * scale (j < end), mx = max, e_j = expf(s_j - mx), sum of e_j in fp32
// (lane l sums j = l, l + 32, ... in order; butterfly fold), att = e_j / sum; j >= end: 0.
cudaError_t launch_attention_softmax(cudaStream_t stream, float* att, int64_t rows, int64_t T,
                                     float scale, bool causal);
// In place over datt (rows, T): r = sum_{j < end} datt_j att_j (fp32, the lane order above);
// dS_j = (att_j * (datt_j - r)) * scale for j < end, else 0.
cudaError_t launch_attention_softmax_backward(cudaStream_t stream, const float* att, float* datt,
                                              int64_t rows, int64_t T, float scale, bool causal);

// ---- tokens.cu: a ViT's token rows ----
// Ops::class_token_forward: one thread per element of y (B, N + 1, C), the fp32 sum of its
// two operands rounded once into y's dtype (x's; fp32 or bf16).
cudaError_t launch_class_token_forward(cudaStream_t stream, ConstView x, const float* cls,
                                       const float* pos, View y, int64_t B, int64_t N,
                                       int64_t C);
// Ops::copy_token_rows: one thread per copied element, the stored bits unchanged (fp32 or
// bf16, src and dst alike). The caller (CudaOps) checks that the rows lie inside both
// tensors.
cudaError_t launch_copy_token_rows(cudaStream_t stream, ConstView src, int64_t src_T,
                                   int64_t src_t0, View dst, int64_t dst_T, int64_t dst_t0,
                                   int64_t count, int64_t B, int64_t C);

// ---- clip.cu ----
// Each segment p = [segments[p], segments[p + 1]) is cut into kClipChunks equal chunks
// (ceil(len / kClipChunks) elements each, the last shorter, some empty when len is small);
// in a chunk, thread t of 256 sums g[begin + t], g[begin + t + 256], ... as double squares
// in order and the thread sums are folded pairwise (t += t + h, h = 128, ..., 1): the
// chunk's partial, in the workspace. One block then adds each segment's partials in chunk
// order (sq_p), norm_p = clip_segment_norm(sq_p), and one thread adds clip_norm_square(
// norm_p) in segment order: total, *norm, and the coefficient (kernels/common/clip.h),
// which a last kernel multiplies into g[segments[0] .. segments[n_segments]).
inline constexpr int kClipChunks = 32;
size_t clip_workspace_bytes(int64_t n_segments);
cudaError_t launch_clip_grad_norm(cudaStream_t stream, float* g, const int64_t* segments,
                                  int64_t n_segments, float max_norm, float* norm,
                                  void* workspace);

}  // namespace noeira::cuda
