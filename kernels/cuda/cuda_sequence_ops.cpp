// CudaOps' sequence ops (contracts in kernels/ops.h, "Sequences"; orders and workspaces in
// sequence_kernels.h): embedding, LayerNorm, a ViT's token rows, the attention core and
// global-norm clipping.
// Each op names itself for error messages, checks its shape (a bad one is a programming
// error: it stops the process, or fails the capture) and enqueues on the backend's stream.
//
// Attention, per (b, h), llm.c's scheme: q, k, v are copied into fp32 (B, nh, T, hd)
// buffers in the workspace (widening bf16), so every product is one strided-batched fp32
// cuBLASLt GEMM over the B * nh heads (TF32 when the backend's switch is on), its
// algorithm chosen once per shape by GemmLt and reused by eager and captured runs:
//   forward:  att = q k^T (the raw product), then the softmax in place (scale, the causal
//             mask when asked, max, exp, sum, divide), o = att v, o copied out into
//             (B, T, C). Without the mask the GEMMs are the same; only the softmax rows
//             see every key (att has no zero entries then).
//   backward: dout copied per head; datt = dout v^T; dv = att^T dout; dS = softmax
//             backward in place over datt (times scale); dq = dS k; dk = dS^T q; the
//             three copied out into dqkv (B, T, 3C).
// bf16 views (1 <= hd <= 128) take the fused flash-style kernels instead
// (kernels/cuda/flash_attention.h): no T x T buffer, att holds the per-row log-sum-exp
// (attention_saved_floats), the workspace holds the backward's D = rowsum(dO * O).
#include <cmath>
#include <limits>
#include <string>

#include "kernels/common/saturating.h"
#include "kernels/cuda/flash_attention.h"
#include "kernels/cuda/gemm_lt.h"
#include "kernels/cuda/op_scope.h"
#include "kernels/cuda/sequence_kernels.h"
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

// The twin's scale: 1 / sqrt(hd) in double, rounded to fp32 (kernels/cpu/cpu_attention.cpp).
float attention_scale(int64_t hd) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
}

}  // namespace

// ---- Embedding ----

void CudaOps::embedding_forward(const int32_t* ids, const float* wte, const float* wpe, View y,
                                int64_t rows, int64_t T, int64_t C) {
  OpScope scope(*this, "embedding_forward");
  if (rows < 0 || C < 0 || (rows > 0 && T <= 0)) {
    fail("invalid shape rows " + std::to_string(rows) + ", T " + std::to_string(T) + ", C " +
         std::to_string(C));
    return;
  }
  check(cuda::launch_embedding_forward(stream_, ids, wte, wpe, y, rows, T, C),
        "embedding_forward_kernel");
}

size_t CudaOps::embedding_workspace_bytes(int64_t rows, int64_t V) const {
  return cuda::embedding_workspace_bytes(rows, V);
}

void CudaOps::embedding_backward(const int32_t* ids, ConstView dy, float* dwte, float* dwpe,
                                 int64_t rows, int64_t T, int64_t C, int64_t V,
                                 void* workspace) {
  OpScope scope(*this, "embedding_backward");
  if (rows < 0 || C < 0 || V < 0 || V >= INT32_MAX || rows > INT32_MAX ||
      (rows > 0 && T <= 0)) {
    fail("invalid shape rows " + std::to_string(rows) + ", T " + std::to_string(T) + ", C " +
         std::to_string(C) + ", V " + std::to_string(V) +
         " (the GPU sorts at most 2147483647 rows by int32 token ids)");
    return;
  }
  if (rows * C > 0 && dwte && !workspace) {
    fail("no workspace; plan embedding_workspace_bytes(rows, V) bytes and pass them");
    return;
  }
  check(cuda::launch_embedding_backward(stream_, ids, dy, dwte, dwpe, rows, T, C, V, workspace),
        "embedding_backward (keys kernel, cub::DeviceRadixSort::SortPairs, sum kernels)");
}

// ---- LayerNorm ----

void CudaOps::layernorm_forward(ConstView x, const float* gamma, const float* beta, View y,
                                float* mean, float* rstd, int64_t N, int64_t C, float eps) {
  OpScope scope(*this, "layernorm_forward");
  if (N < 0 || C < 0) {
    fail("invalid shape N " + std::to_string(N) + ", C " + std::to_string(C));
    return;
  }
  check(cuda::launch_layernorm_forward(stream_, x, gamma, beta, y, mean, rstd, N, C, eps),
        "layernorm_forward_kernel");
}

size_t CudaOps::layernorm_workspace_bytes(int64_t N, int64_t C) const {
  return cuda::layernorm_workspace_bytes(N, C);
}

void CudaOps::layernorm_backward(ConstView dy, ConstView x, const float* gamma,
                                 const float* mean, const float* rstd, View dx, float* dgamma,
                                 float* dbeta, int64_t N, int64_t C, void* workspace) {
  OpScope scope(*this, "layernorm_backward");
  if (N < 0 || C < 0) {
    fail("invalid shape N " + std::to_string(N) + ", C " + std::to_string(C));
    return;
  }
  if (N * C > 0 && (dgamma || dbeta) &&
      (!workspace || reinterpret_cast<uintptr_t>(workspace) % 16 != 0)) {
    fail("no 16-byte aligned workspace; plan layernorm_workspace_bytes(N, C) bytes and pass "
         "them");
    return;
  }
  check(cuda::launch_layernorm_backward(stream_, dy, x, gamma, mean, rstd, dx, dgamma, dbeta, N,
                                        C, workspace),
        "layernorm_backward kernels");
}

// ---- A ViT's token rows ----

void CudaOps::class_token_forward(ConstView x, const float* cls, const float* pos, View y,
                                  int64_t B, int64_t N, int64_t C) {
  OpScope scope(*this, "class_token_forward");
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
  OpScope scope(*this, "copy_token_rows");
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

// ---- Attention ----

int64_t CudaOps::attention_saved_floats(int64_t B, int64_t T, int64_t nh, DType dtype) const {
  return dtype == DType::kBF16 ? sat_mul({B, nh, T}) : sat_mul({B, nh, T, T});
}

size_t CudaOps::attention_workspace_bytes(int64_t B, int64_t T, int64_t C, int64_t nh,
                                          DType dtype) const {
  if (!attention_problem(B, T, C, nh).empty()) return 0;
  // The kernels' byte counts are products of up to four sizes: past 2^58 floats they would
  // wrap. SIZE_MAX makes the plan overflow, and Arenas::allocate refuses it.
  if (sat_mul({B, nh, T, T}) > (int64_t{1} << 58) || sat_mul({B, T, 3 * C}) > (int64_t{1} << 58))
    return std::numeric_limits<size_t>::max();
  if (dtype == DType::kBF16) {
    // 0 (the op then fails) for head sizes the flash kernels do not take.
    if (!cuda::flash_attention_supported(C / nh) || B > 65535 || nh > 65535) return 0;
    return cuda::flash_attention_workspace_bytes(B, T, nh);
  }
  return cuda::attention_workspace_bytes(B, T, C, nh);
}

namespace {

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

void CudaOps::attention_forward(ConstView qkv, View out, float* att, int64_t B, int64_t T,
                                int64_t C, int64_t nh, bool causal, void* workspace) {
  OpScope scope(*this, "attention_forward");
  expect_dtype("attention_forward", qkv.dtype, {out});
  if (const std::string p = attention_problem(B, T, C, nh); !p.empty()) return fail(p);
  if (qkv.dtype == DType::kBF16) {
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
  const int64_t hd = C / nh, heads = B * nh, head = T * hd;
  const cuda::AttentionWorkspace w = cuda::attention_workspace(workspace, B, T, C, nh);
  const float* q = w.qkv_h;
  const float* k = w.qkv_h + B * T * C;
  const float* v = w.qkv_h + 2 * B * T * C;
  check(cuda::launch_qkv_to_heads(stream_, qkv, w.qkv_h, B, T, C, nh), "qkv_to_heads_kernel");
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
  check(cuda::launch_heads_to_seq(stream_, w.o_h, out, B, T, C, nh), "heads_to_seq_kernel");
}

void CudaOps::attention_backward(ConstView dout, ConstView qkv, const float* att, View dqkv,
                                 int64_t B, int64_t T, int64_t C, int64_t nh, bool causal,
                                 void* workspace) {
  OpScope scope(*this, "attention_backward");
  expect_dtype("attention_backward", qkv.dtype, {dout, dqkv});
  if (const std::string p = attention_problem(B, T, C, nh); !p.empty()) return fail(p);
  if (qkv.dtype == DType::kBF16) {
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
  const int64_t hd = C / nh, heads = B * nh, head = T * hd, btc = B * T * C;
  const cuda::AttentionWorkspace w = cuda::attention_workspace(workspace, B, T, C, nh);
  const float* q = w.qkv_h;
  const float* k = w.qkv_h + btc;
  const float* v = w.qkv_h + 2 * btc;
  const float* go = w.o_h;
  float* dq = w.dqkv_h;
  float* dk = w.dqkv_h + btc;
  float* dv = w.dqkv_h + 2 * btc;
  check(cuda::launch_qkv_to_heads(stream_, qkv, w.qkv_h, B, T, C, nh), "qkv_to_heads_kernel");
  check(cuda::launch_seq_to_heads(stream_, dout, w.o_h, B, T, C, nh), "seq_to_heads_kernel");
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
  check(cuda::launch_heads_to_qkv(stream_, w.dqkv_h, dqkv, B, T, C, nh), "heads_to_qkv_kernel");
}

// ---- Gradient clipping ----

size_t CudaOps::clip_workspace_bytes(int64_t n_segments) const {
  return cuda::clip_workspace_bytes(n_segments);
}

void CudaOps::clip_grad_norm(float* g, const int64_t* segments, int64_t n_segments,
                             float max_norm, float* norm, void* workspace) {
  OpScope scope(*this, "clip_grad_norm");
  if (n_segments < 0) return fail("negative n_segments " + std::to_string(n_segments));
  if (n_segments > 0 && (!workspace || reinterpret_cast<uintptr_t>(workspace) % 8 != 0))
    return fail("no 8-byte aligned workspace; plan clip_workspace_bytes(n_segments) bytes");
  check(cuda::launch_clip_grad_norm(stream_, g, segments, n_segments, max_norm, norm, workspace),
        "clip_grad_norm kernels");
}

}  // namespace noeira
