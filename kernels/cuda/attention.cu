// CudaOps' multi-head self-attention core, causal or not (contracts: kernels/op_list.inc).
// Each op checks its shape (a bad one is a programming error) and enqueues on the
// backend's stream.
//
// fp32, per (b, h), llm.c's scheme: q, k, v are copied into fp32 (B, nh, T, hd) buffers in
// the workspace (attention_heads.cu), so every product is one strided-batched fp32
// cuBLASLt GEMM over the B * nh heads (TF32 when the backend's switch is on), its
// algorithm chosen once per shape by GemmLt and reused by eager and captured runs:
//   forward:  att = q k^T (the raw product), then the softmax in place (scale, the causal
//             mask when asked, max, exp, sum, divide), o = att v, o copied out into
//             (B, T, C). Without the mask the GEMMs are the same; only the softmax rows
//             see every key (att has no zero entries then).
//   backward: dout copied per head; datt = dout v^T; dv = att^T dout; dS = softmax
//             backward in place over datt (times scale); dq = dS k; dk = dS^T q; the
//             three copied out into dqkv (B, T, 3C).
// The kernels here: the softmax forward and backward (one warp per row, the orders of
// kernels/cpu/attention.cpp with the lane sums folded by a butterfly: attention_gemm.cuh).
// Softmax row r = (b, h, i), i = r % T, sees keys j < end, end = i + 1 when causal, T when
// not: s_j = product * scale, mx = max, e_j = expf(s_j - mx), sum of e_j in fp32 (lane l
// sums j = l, l + 32, ... in order), att = e_j / sum, 0 for j >= end. Backward: r =
// sum_{j < end} datt_j att_j (the lane order above); dS_j = (att_j * (datt_j - r)) * scale
// for j < end, else 0.
//
// bf16 views up to T = kGemmAttentionMaxT take attention_bf16.cu: the same scheme with
// bf16 heads and every product on bf16 tensor cores (bf16 A/B, fp32 sums), P and dS
// rounded to bf16 for the products that read them; att still holds the fp32
// probabilities, the outputs are rounded to bf16 once on the copy out. (Before it, bf16
// views took this file's fp32 path, heads widened: 6.9 ms of attention per gpt bf16 step
// on the first H200 run; the flash kernels below measured 2.8 + 12.1 ms, this path 2.6 +
// 4.5 in fp32.) Past that T (where the T x T buffers grow), or with
// CudaOptions::flash_attention (NOEIRA_ATTENTION=flash; the tests keep them as a
// reference), bf16 views (1 <= hd <= 128) take the fused flash-style kernels
// (flash_attention.h): no T x T buffer, att holds the per-row log-sum-exp
// (attention_saved_floats), the workspace holds the backward's D = rowsum(dO * O).
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "kernels/common/attention.h"
#include "kernels/common/saturating.h"
#include "kernels/cuda/attention_gemm.cuh"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/flash_attention.h"
#include "kernels/cuda/gemm_lt.h"
#include "kernels/cuda/launchers.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

std::string attention_problem(int64_t B, int64_t T, int64_t C, int64_t nh) {
  if (B < 0 || T < 0 || C < 0 || nh <= 0 || C % nh != 0)
    return "invalid attention shape B " + std::to_string(B) + ", T " + std::to_string(T) +
           ", C " + std::to_string(C) + ", nh " + std::to_string(nh) +
           " (C must be a multiple of nh > 0)";
  if (B * nh > INT32_MAX)
    return "attention over " + std::to_string(B * nh) + " heads: cuBLASLt's batch count is int32";
  return {};
}

// The twin's scale: 1 / sqrt(hd) in double, rounded to fp32 (as kernels/cpu/attention_plan.h).
float attention_scale(int64_t hd) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
}

std::string flash_problem(int64_t B, int64_t C, int64_t nh) {
  // Heads and batch ride on grid y and z.
  if (B > 65535 || nh > 65535)
    return "bf16 attention on CUDA takes at most 65535 sequences and 65535 heads per call, not B " +
           std::to_string(B) + ", nh " + std::to_string(nh);
  if (cuda::flash_attention_supported(C / nh)) return {};
  return "bf16 attention on CUDA takes head sizes 1.." +
         std::to_string(cuda::kFlashMaxHeadDim) + ", not " + std::to_string(C / nh) +
         " (C " + std::to_string(C) + ", nh " + std::to_string(nh) + ")";
}

}  // namespace

namespace cuda {

namespace {

using attention::visible_keys;
using attention_gemm::align_up;
using attention_gemm::kAlign;
using attention_gemm::kRowsPerBlock;
using attention_gemm::row_blocks;
using attention_gemm::warp_max;
using attention_gemm::warp_sum;

__global__ void attention_softmax_kernel(float* att, int64_t rows, int64_t T_, float scale,
                                         bool causal) {
  const int lane = threadIdx.x % 32;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
       r < rows; r += static_cast<int64_t>(gridDim.x) * kRowsPerBlock) {
    float* a = att + r * T_;
    const int64_t end = visible_keys(r, T_, causal);  // keys 0 .. end - 1 are visible
    float mx = -INFINITY;
    // __fmul_rn: the scaled score is rounded before the subtraction (no FMA contraction),
    // as the twin's (q @ k^T) * scale and the CPU's loop round it.
    for (int64_t j = lane; j < end; j += 32) mx = fmaxf(mx, __fmul_rn(a[j], scale));
    mx = warp_max(mx);
    float sum = 0.0f;
    for (int64_t j = lane; j < end; j += 32) sum += expf(__fmul_rn(a[j], scale) - mx);
    sum = warp_sum(sum);
    for (int64_t j = lane; j < T_; j += 32)
      a[j] = j < end ? expf(__fmul_rn(a[j], scale) - mx) / sum : 0.0f;
  }
}

__global__ void attention_softmax_backward_kernel(const float* att, float* datt, int64_t rows,
                                                  int64_t T_, float scale, bool causal) {
  const int lane = threadIdx.x % 32;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
       r < rows; r += static_cast<int64_t>(gridDim.x) * kRowsPerBlock) {
    const float* a = att + r * T_;
    float* g = datt + r * T_;
    const int64_t end = visible_keys(r, T_, causal);
    float dot = 0.0f;
    for (int64_t j = lane; j < end; j += 32) dot += g[j] * a[j];
    dot = warp_sum(dot);
    for (int64_t j = lane; j < T_; j += 32) g[j] = j < end ? (a[j] * (g[j] - dot)) * scale : 0.0f;
  }
}

struct AttentionWorkspace {
  float* qkv_h;
  float* o_h;
  float* dqkv_h;
  float* datt;
};

size_t attention_workspace_bytes(int64_t B, int64_t T, int64_t C, int64_t nh) {
  (void)nh;
  const size_t btc = static_cast<size_t>(B * T * C) * sizeof(float);
  const size_t att = static_cast<size_t>(B * nh * T * T) * sizeof(float);
  return kAlign /* to align the base */ + 2 * align_up(3 * btc) + align_up(btc) +
         align_up(att);
}

AttentionWorkspace attention_workspace(void* workspace, int64_t B, int64_t T, int64_t C,
                                       int64_t nh) {
  (void)nh;
  const uintptr_t base = align_up(workspace);
  const size_t btc = static_cast<size_t>(B * T * C) * sizeof(float);
  AttentionWorkspace w;
  w.qkv_h = reinterpret_cast<float*>(base);
  w.o_h = reinterpret_cast<float*>(base + align_up(3 * btc));
  w.dqkv_h = reinterpret_cast<float*>(base + align_up(3 * btc) + align_up(btc));
  w.datt = reinterpret_cast<float*>(base + 2 * align_up(3 * btc) + align_up(btc));
  return w;
}

cudaError_t launch_attention_softmax(cudaStream_t stream, float* att, int64_t rows, int64_t T,
                                     float scale, bool causal) {
  if (rows == 0 || T == 0) return cudaSuccess;
  attention_softmax_kernel<<<row_blocks(rows), kBlock, 0, stream>>>(att, rows, T, scale, causal);
  return cudaGetLastError();
}

cudaError_t launch_attention_softmax_backward(cudaStream_t stream, const float* att, float* datt,
                                              int64_t rows, int64_t T, float scale, bool causal) {
  if (rows == 0 || T == 0) return cudaSuccess;
  attention_softmax_backward_kernel<<<row_blocks(rows), kBlock, 0, stream>>>(att, datt, rows, T,
                                                                             scale, causal);
  return cudaGetLastError();
}

}  // namespace

}  // namespace cuda

// The fp32 path's T x T buffers and the flash kernels' tiles set no limit of their own
// (the workspace query refuses what would overflow).
int64_t CudaOps::attention_max_context() const { return 0; }

// Up to here bf16 attention keeps the T x T probabilities (4 T^2 bytes per head: 256 KiB
// at the gpt recipe's T = 256, 16 MiB at 2048), with 8 T^2 more of workspace (datt, P,
// dS), and runs on bf16 tensor cores (attention_bf16.cu).
constexpr int64_t kGemmAttentionMaxT = 2048;

bool CudaOps::bf16_attention_is_flash(int64_t T) const {
  return flash_attention_ || T > kGemmAttentionMaxT;
}

int64_t CudaOps::attention_saved_floats(int64_t B, int64_t T, int64_t nh, DType dtype) const {
  return dtype == DType::kBF16 && bf16_attention_is_flash(T) ? sat_mul({B, nh, T})
                                                             : sat_mul({B, nh, T, T});
}

size_t CudaOps::attention_workspace_bytes(int64_t B, int64_t T, int64_t C, int64_t nh,
                                          DType dtype) const {
  if (!attention_problem(B, T, C, nh).empty()) return 0;
  // The kernels' byte counts are products of up to four sizes: past 2^58 floats they would
  // wrap. SIZE_MAX makes the plan overflow, and Arenas::allocate refuses it.
  if (sat_mul({B, nh, T, T}) > (int64_t{1} << 58) || sat_mul({B, T, 3 * C}) > (int64_t{1} << 58))
    return std::numeric_limits<size_t>::max();
  if (dtype == DType::kBF16 && bf16_attention_is_flash(T)) {
    // 0 (the op then fails) for head sizes the flash kernels do not take.
    if (!cuda::flash_attention_supported(C / nh) || B > 65535 || nh > 65535) return 0;
    return cuda::flash_attention_workspace_bytes(B, T, nh);
  }
  if (dtype == DType::kBF16) return cuda::attention_gemm::bf16_workspace_bytes(B, T, C, nh);
  return cuda::attention_workspace_bytes(B, T, C, nh);
}

void CudaOps::attention_forward(ConstView qkv, View out, float* att, int64_t B, int64_t T,
                                int64_t C, int64_t nh, bool causal, void* workspace) {
  OpScope scope(*state_, "attention_forward");
  expect_dtype("attention_forward", qkv.dtype, {out});
  if (const std::string p = attention_problem(B, T, C, nh); !p.empty()) return fail(p);
  if (qkv.dtype == DType::kBF16 && bf16_attention_is_flash(T)) {
    if (const std::string p = flash_problem(B, C, nh); !p.empty()) return fail(p);
    if (B * T * C == 0) return;
    expect_elems("attention_forward", 3 * B * T * C, {qkv});
    expect_elems("attention_forward", B * T * C, {out});
    check(cuda::launch_flash_attention_forward(stream_, qkv.as<bf16_t>(), out.as<bf16_t>(), att,
                                               B, T, C, nh, attention_scale(C / nh), causal),
          "flash_forward_kernel");
    return;
  }
  if (B * T * C == 0) return;
  if (!workspace)
    return fail("no workspace; plan attention_workspace_bytes(B, T, C, nh, dtype) bytes");
  if (qkv.dtype == DType::kBF16)  // bf16 tensor cores (attention_bf16.cu)
    return attention_forward_bf16(qkv, out, att, B, T, C, nh, attention_scale(C / nh), causal,
                                  workspace);
  const int64_t hd = C / nh, heads = B * nh, head = T * hd;
  const cuda::AttentionWorkspace w = cuda::attention_workspace(workspace, B, T, C, nh);
  const float* q = w.qkv_h;
  const float* k = w.qkv_h + B * T * C;
  const float* v = w.qkv_h + 2 * B * T * C;
  check(cuda::to_heads(stream_, "attention (qkv to heads)", qkv, w.qkv_h, 3, B, T, C, nh),
        "qkv_to_heads_kernel");
  // att (T, T) = q (T, hd) k (T, hd)^T per head
  run_gemm({.trans_a = false, .trans_b = true, .M = T, .N = T, .K = hd, .alpha = 1.0f,
            .A = q, .lda = hd, .B = k, .ldb = hd, .beta = 0.0f, .C = att, .ldc = T,
            .batch = heads, .stride_a = head, .stride_b = head, .stride_c = T * T});
  check(cuda::launch_attention_softmax(stream_, att, heads * T, T, attention_scale(hd), causal),
        "attention_softmax_kernel");
  // o (T, hd) = att (T, T) v (T, hd) per head
  run_gemm({.trans_a = false, .trans_b = false, .M = T, .N = hd, .K = T, .alpha = 1.0f,
            .A = att, .lda = T, .B = v, .ldb = hd, .beta = 0.0f, .C = w.o_h, .ldc = hd,
            .batch = heads, .stride_a = T * T, .stride_b = head, .stride_c = head});
  check(cuda::from_heads(stream_, "attention (heads to out)", w.o_h, out, 1, B, T, C, nh,
                         B * T * C),
        "heads_to_seq_kernel");
}

void CudaOps::attention_backward(ConstView dout, ConstView qkv, const float* att, View dqkv,
                                 int64_t B, int64_t T, int64_t C, int64_t nh, bool causal,
                                 void* workspace) {
  OpScope scope(*state_, "attention_backward");
  expect_dtype("attention_backward", qkv.dtype, {dout, dqkv});
  if (const std::string p = attention_problem(B, T, C, nh); !p.empty()) return fail(p);
  if (qkv.dtype == DType::kBF16 && bf16_attention_is_flash(T)) {
    if (const std::string p = flash_problem(B, C, nh); !p.empty()) return fail(p);
    if (B * T * C == 0) return;
    if (!workspace)
      return fail("no workspace; plan attention_workspace_bytes(B, T, C, nh, dtype) bytes");
    expect_elems("attention_backward", 3 * B * T * C, {qkv, dqkv});
    expect_elems("attention_backward", B * T * C, {dout});
    check(cuda::launch_flash_attention_backward(stream_, dout.as<bf16_t>(), qkv.as<bf16_t>(),
                                                att, dqkv.as<bf16_t>(), B, T, C, nh,
                                                attention_scale(C / nh), causal, workspace),
          "flash_backward_dq_kernel, flash_backward_dkdv_kernel");
    return;
  }
  if (B * T * C == 0) return;
  if (!workspace)
    return fail("no workspace; plan attention_workspace_bytes(B, T, C, nh, dtype) bytes");
  if (qkv.dtype == DType::kBF16)  // bf16 tensor cores (attention_bf16.cu)
    return attention_backward_bf16(dout, qkv, att, dqkv, B, T, C, nh, attention_scale(C / nh),
                                   causal, workspace);
  const int64_t hd = C / nh, heads = B * nh, head = T * hd, btc = B * T * C;
  const cuda::AttentionWorkspace w = cuda::attention_workspace(workspace, B, T, C, nh);
  const float* q = w.qkv_h;
  const float* k = w.qkv_h + btc;
  const float* v = w.qkv_h + 2 * btc;
  const float* go = w.o_h;
  float* dq = w.dqkv_h;
  float* dk = w.dqkv_h + btc;
  float* dv = w.dqkv_h + 2 * btc;
  check(cuda::to_heads(stream_, "attention (qkv to heads)", qkv, w.qkv_h, 3, B, T, C, nh),
        "qkv_to_heads_kernel");
  check(cuda::to_heads(stream_, "attention (dout to heads)", dout, w.o_h, 1, B, T, C, nh),
        "seq_to_heads_kernel");
  // datt (T, T) = dout (T, hd) v (T, hd)^T
  run_gemm({.trans_a = false, .trans_b = true, .M = T, .N = T, .K = hd, .alpha = 1.0f,
            .A = go, .lda = hd, .B = v, .ldb = hd, .beta = 0.0f, .C = w.datt, .ldc = T,
            .batch = heads, .stride_a = head, .stride_b = head, .stride_c = T * T});
  // dv (T, hd) = att (T, T)^T dout (T, hd)
  run_gemm({.trans_a = true, .trans_b = false, .M = T, .N = hd, .K = T, .alpha = 1.0f,
            .A = att, .lda = T, .B = go, .ldb = hd, .beta = 0.0f, .C = dv, .ldc = hd,
            .batch = heads, .stride_a = T * T, .stride_b = head, .stride_c = head});
  check(cuda::launch_attention_softmax_backward(stream_, att, w.datt, heads * T, T,
                                                attention_scale(hd), causal),
        "attention_softmax_backward_kernel");
  // dq (T, hd) = dS (T, T) k (T, hd)
  run_gemm({.trans_a = false, .trans_b = false, .M = T, .N = hd, .K = T, .alpha = 1.0f,
            .A = w.datt, .lda = T, .B = k, .ldb = hd, .beta = 0.0f, .C = dq, .ldc = hd,
            .batch = heads, .stride_a = T * T, .stride_b = head, .stride_c = head});
  // dk (T, hd) = dS (T, T)^T q (T, hd)
  run_gemm({.trans_a = true, .trans_b = false, .M = T, .N = hd, .K = T, .alpha = 1.0f,
            .A = w.datt, .lda = T, .B = q, .ldb = hd, .beta = 0.0f, .C = dk, .ldc = hd,
            .batch = heads, .stride_a = T * T, .stride_b = head, .stride_c = head});
  check(cuda::from_heads(stream_, "attention (heads to dqkv)", w.dqkv_h, dqkv, 3, B, T, C, nh,
                         btc),
        "heads_to_qkv_kernel");
}

}  // namespace noeira
