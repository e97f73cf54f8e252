// CudaOps' bf16 attention on the GEMM path (contract: kernels/op_list.inc; attention.cu
// checks the shape and the workspace and dispatches here for bf16 views up to
// kGemmAttentionMaxT, unless NOEIRA_ATTENTION=flash): llm.c's scheme with every product
// on bf16 tensor cores, one strided-batched cuBLASLt GEMM over the B * nh heads, bf16 A/B
// into fp32 C/D in CUBLAS_COMPUTE_32F (exact products, fp32 sums; gemm_lt.h), each
// algorithm chosen once per shape by GemmLt and reused by eager and captured runs.
//   forward:  q, k, v copied into bf16 (3, B, nh, T, hd) heads (bits unchanged); att = q k^T
//             into att itself; the softmax (one warp per row, kernels/common/attention.h:
//             scale, the causal mask, max, exp, sum, divide) writes the fp32
//             probabilities back into att (the saved tensor) and their bf16 rounding P
//             into the workspace in the same pass; o = P v into fp32 heads; o rounded
//             once into out (B, T, C).
//   backward: dout copied into bf16 heads; datt = dout v^T (fp32); one pass per row reads
//             att and datt, r = sum_j datt_j att_j (lane l sums j = l, l + 32, ... by fused
//             multiply-adds, a butterfly folds the lanes), and writes dS_j = (att_j
//             (datt_j - r)) scale and P_j = att_j, both rounded to bf16 (0 past the
//             visible keys); dv = P^T dout, dq = dS k, dk = dS^T q into fp32 (3, B, nh, T,
//             hd) heads, rounded once into dqkv (B, T, 3C).
// So against fp32 math on the same bf16 inputs (the CPU's bf16), the products see P and dS
// rounded to bf16 (one relative rounding of at most 2^-8 each); the rest differs by fp32
// roundings (sums in other orders, expf for the CPU's exp_approx). The bound this gives is
// tests/support/attention_bf16_bound.h, checked by a host emulation of this file
// (tests/unit/test_attention_bf16_emulation.cpp) and the [gpu] tests.
//
// The workspace (bf16_workspace_bytes), every buffer and every part of one on 256 bytes:
// bf16 qkv heads (3 parts of B T C), bf16 dout heads (B T C), fp32 output heads (3 parts:
// o, then dq, dk, dv), fp32 datt and bf16 P and dS (B nh T x ld each, ld = T rounded up to
// 8: 16-byte rows and per-head strides for the tensor-core kernels; columns past T are
// never written or read).
//
// Roofline (gpt recipe: B 64, T 256, C 384, nh 6, hd 64, 6 layers; H200 989 TFLOP/s dense
// bf16, 495 TF32, 4.8 TB/s; docs/profiling.md has the table): the six products (full T x
// T) are 116 GFLOP per step, 0.23 ms in TF32 before, 0.12 ms in bf16 now, but every
// kernel here is bound by its bytes. Per layer the T x T passes move 44 N bytes before
// (N = B nh T^2 scores; fp32 S, att, datt, dS) and 38 N now (att stays fp32; P and dS
// are bf16), the head copies and products' operands 114 -> 84 bytes per element of
// (B, T, C): 2.28 ms per step before (fwd 0.82, bwd 1.46), 1.86 ms now (0.72, 1.13).
#include <cstdint>
#include <limits>

#include "kernels/common/attention.h"
#include "kernels/common/bf16.h"
#include "kernels/common/saturating.h"
#include "kernels/cuda/attention_gemm.cuh"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/gemm_lt.h"
#include "kernels/cuda/launchers.h"

namespace noeira {

namespace cuda {

namespace {

using attention::visible_keys;
using attention_gemm::align_up;
using attention_gemm::kLanes;
using attention_gemm::kRowsPerBlock;
using attention_gemm::row_blocks;
using attention_gemm::warp_max;
using attention_gemm::warp_sum;

// The leading dimension (elements) of the T x T workspace buffers.
int64_t tt_ld(int64_t T) { return (T + 7) / 8 * 8; }

// The head buffers' part strides (elements): every part starts on kAlign bytes.
int64_t bf16_part(int64_t btc) {
  return attention::aligned_part_stride(btc, sizeof(bf16_t), attention_gemm::kAlign);
}
int64_t f32_part(int64_t btc) {
  return attention::aligned_part_stride(btc, sizeof(float), attention_gemm::kAlign);
}

// Byte offsets from the aligned base.
struct Layout {
  size_t qkv_h, dout_h, heads, datt, p, ds, end;
};

Layout layout_of(int64_t B, int64_t T, int64_t C, int64_t nh) {
  const size_t btc = static_cast<size_t>(B * T * C);
  const size_t qs = static_cast<size_t>(bf16_part(B * T * C));
  const size_t fs = static_cast<size_t>(f32_part(B * T * C));
  const size_t tt = static_cast<size_t>(B * nh * T * tt_ld(T));
  Layout l{};
  size_t at = 0;
  const auto take = [&at](size_t bytes) {
    const size_t here = at;
    at += align_up(bytes);
    return here;
  };
  l.qkv_h = take(3 * qs * sizeof(bf16_t));
  l.dout_h = take(btc * sizeof(bf16_t));
  l.heads = take(3 * fs * sizeof(float));
  l.datt = take(tt * sizeof(float));
  l.p = take(tt * sizeof(bf16_t));
  l.ds = take(tt * sizeof(bf16_t));
  l.end = at;
  return l;
}

struct Workspace {
  bf16_t* qkv_h;   // (3, B, nh, T, hd), parts bf16_part apart
  bf16_t* dout_h;  // (B, nh, T, hd)
  float* heads;    // (3, B, nh, T, hd), parts f32_part apart: o (forward), dq, dk, dv
  float* datt;     // (B, nh, T, ld)
  bf16_t* p;       // (B, nh, T, ld)
  bf16_t* ds;      // (B, nh, T, ld)
};

Workspace workspace_of(void* workspace, int64_t B, int64_t T, int64_t C, int64_t nh) {
  const uintptr_t base = align_up(workspace);
  const Layout l = layout_of(B, T, C, nh);
  return {reinterpret_cast<bf16_t*>(base + l.qkv_h), reinterpret_cast<bf16_t*>(base + l.dout_h),
          reinterpret_cast<float*>(base + l.heads), reinterpret_cast<float*>(base + l.datt),
          reinterpret_cast<bf16_t*>(base + l.p), reinterpret_cast<bf16_t*>(base + l.ds)};
}

// att (rows, T): the raw scores in, the probabilities out; p (rows, ld): their bf16
// rounding (0 where masked).
__global__ void softmax_bf16_kernel(float* att, bf16_t* p, int64_t ld, int64_t rows, int64_t T_,
                                    float scale, bool causal) {
  const int lane = static_cast<int>(threadIdx.x) % kLanes;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kLanes;
       r < rows; r += static_cast<int64_t>(gridDim.x) * kRowsPerBlock) {
    float* a = att + r * T_;
    bf16_t* pr = p + r * ld;
    const int64_t end = visible_keys(r, T_, causal);
    const float mx = warp_max(attention::softmax_lane_max(a, end, scale, lane, kLanes));
    const float sum = warp_sum(attention::softmax_lane_sum(a, end, scale, mx, lane, kLanes));
    for (int64_t j = lane; j < T_; j += kLanes) {
      const float prob = j < end ? attention::softmax_prob(a[j], scale, mx, sum) : 0.0f;
      a[j] = prob;
      pr[j] = f32_to_bf16(prob);
    }
  }
}

// att (rows, T) and datt (rows, ld) fp32 in; dS and P (rows, ld) bf16 out.
__global__ void softmax_backward_bf16_kernel(const float* att, const float* datt, bf16_t* ds,
                                             bf16_t* p, int64_t ld, int64_t rows, int64_t T_,
                                             float scale, bool causal) {
  const int lane = static_cast<int>(threadIdx.x) % kLanes;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kLanes;
       r < rows; r += static_cast<int64_t>(gridDim.x) * kRowsPerBlock) {
    const float* a = att + r * T_;
    const float* g = datt + r * ld;
    bf16_t* dsr = ds + r * ld;
    bf16_t* pr = p + r * ld;
    const int64_t end = visible_keys(r, T_, causal);
    const float dot = warp_sum(attention::softmax_backward_lane_dot(g, a, end, lane, kLanes));
    for (int64_t j = lane; j < T_; j += kLanes) {
      const bool visible = j < end;
      dsr[j] = f32_to_bf16(visible ? attention::softmax_backward_ds(a[j], g[j], dot, scale) : 0.0f);
      pr[j] = f32_to_bf16(visible ? a[j] : 0.0f);
    }
  }
}

cudaError_t launch_softmax_bf16(cudaStream_t stream, float* att, bf16_t* p, int64_t ld,
                                int64_t rows, int64_t T, float scale, bool causal) {
  if (rows == 0 || T == 0) return cudaSuccess;
  softmax_bf16_kernel<<<row_blocks(rows), kBlock, 0, stream>>>(att, p, ld, rows, T, scale, causal);
  return cudaGetLastError();
}

cudaError_t launch_softmax_backward_bf16(cudaStream_t stream, const float* att,
                                         const float* datt, bf16_t* ds, bf16_t* p, int64_t ld,
                                         int64_t rows, int64_t T, float scale, bool causal) {
  if (rows == 0 || T == 0) return cudaSuccess;
  softmax_backward_bf16_kernel<<<row_blocks(rows), kBlock, 0, stream>>>(att, datt, ds, p, ld,
                                                                        rows, T, scale, causal);
  return cudaGetLastError();
}

}  // namespace

size_t attention_gemm::bf16_workspace_bytes(int64_t B, int64_t T, int64_t C, int64_t nh) {
  // The byte counts below multiply up to four sizes (times 4): keep them below 2^60.
  constexpr int64_t kMaxElems = int64_t{1} << 58;
  if (sat_mul({B, nh, T, tt_ld(T)}) > kMaxElems || sat_mul({B, T, 3 * C}) > kMaxElems)
    return std::numeric_limits<size_t>::max();
  return kAlign /* to align the base */ + layout_of(B, T, C, nh).end;
}

}  // namespace cuda

void CudaOps::attention_forward_bf16(ConstView qkv, View out, float* att, int64_t B, int64_t T,
                                     int64_t C, int64_t nh, float scale, bool causal,
                                     void* workspace) {
  const int64_t hd = C / nh, heads = B * nh, head = T * hd, btc = B * T * C;
  const int64_t ld = cuda::tt_ld(T), qs = cuda::bf16_part(btc), fs = cuda::f32_part(btc);
  const cuda::Workspace w = cuda::workspace_of(workspace, B, T, C, nh);
  const bf16_t* q = w.qkv_h;
  const bf16_t* k = w.qkv_h + qs;
  const bf16_t* v = w.qkv_h + 2 * qs;
  check(cuda::to_heads_bf16(stream_, "attention (qkv to heads)", qkv, w.qkv_h, 3, B, T, C, nh,
                            qs),
        "qkv_to_heads_kernel");
  // att (T, T) = q (T, hd) k (T, hd)^T per head
  run_gemm({.trans_a = false, .trans_b = true, .M = T, .N = T, .K = hd, .alpha = 1.0f,
            .A = q, .lda = hd, .B = k, .ldb = hd, .beta = 0.0f, .C = att, .ldc = T,
            .ab_type = CUDA_R_16BF, .cd_type = CUDA_R_32F, .batch = heads, .stride_a = head,
            .stride_b = head, .stride_c = T * T});
  check(cuda::launch_softmax_bf16(stream_, att, w.p, ld, heads * T, T, scale, causal),
        "softmax_bf16_kernel");
  // o (T, hd) = P (T, T) v (T, hd) per head
  run_gemm({.trans_a = false, .trans_b = false, .M = T, .N = hd, .K = T, .alpha = 1.0f,
            .A = w.p, .lda = ld, .B = v, .ldb = hd, .beta = 0.0f, .C = w.heads, .ldc = hd,
            .ab_type = CUDA_R_16BF, .cd_type = CUDA_R_32F, .batch = heads, .stride_a = T * ld,
            .stride_b = head, .stride_c = head});
  check(cuda::from_heads(stream_, "attention (heads to out)", w.heads, out, 1, B, T, C, nh, fs),
        "heads_to_seq_kernel");
}

void CudaOps::attention_backward_bf16(ConstView dout, ConstView qkv, const float* att, View dqkv,
                                      int64_t B, int64_t T, int64_t C, int64_t nh, float scale,
                                      bool causal, void* workspace) {
  const int64_t hd = C / nh, heads = B * nh, head = T * hd, btc = B * T * C;
  const int64_t ld = cuda::tt_ld(T), qs = cuda::bf16_part(btc), fs = cuda::f32_part(btc);
  const cuda::Workspace w = cuda::workspace_of(workspace, B, T, C, nh);
  const bf16_t* q = w.qkv_h;
  const bf16_t* k = w.qkv_h + qs;
  const bf16_t* v = w.qkv_h + 2 * qs;
  const bf16_t* go = w.dout_h;
  float* dq = w.heads;
  float* dk = w.heads + fs;
  float* dv = w.heads + 2 * fs;
  check(cuda::to_heads_bf16(stream_, "attention (qkv to heads)", qkv, w.qkv_h, 3, B, T, C, nh,
                            qs),
        "qkv_to_heads_kernel");
  check(cuda::to_heads_bf16(stream_, "attention (dout to heads)", dout, w.dout_h, 1, B, T, C, nh,
                            btc),
        "seq_to_heads_kernel");
  // datt (T, T) = dout (T, hd) v (T, hd)^T
  run_gemm({.trans_a = false, .trans_b = true, .M = T, .N = T, .K = hd, .alpha = 1.0f,
            .A = go, .lda = hd, .B = v, .ldb = hd, .beta = 0.0f, .C = w.datt, .ldc = ld,
            .ab_type = CUDA_R_16BF, .cd_type = CUDA_R_32F, .batch = heads, .stride_a = head,
            .stride_b = head, .stride_c = T * ld});
  check(cuda::launch_softmax_backward_bf16(stream_, att, w.datt, w.ds, w.p, ld, heads * T, T,
                                           scale, causal),
        "softmax_backward_bf16_kernel");
  // dv (T, hd) = P (T, T)^T dout (T, hd)
  run_gemm({.trans_a = true, .trans_b = false, .M = T, .N = hd, .K = T, .alpha = 1.0f,
            .A = w.p, .lda = ld, .B = go, .ldb = hd, .beta = 0.0f, .C = dv, .ldc = hd,
            .ab_type = CUDA_R_16BF, .cd_type = CUDA_R_32F, .batch = heads, .stride_a = T * ld,
            .stride_b = head, .stride_c = head});
  // dq (T, hd) = dS (T, T) k (T, hd)
  run_gemm({.trans_a = false, .trans_b = false, .M = T, .N = hd, .K = T, .alpha = 1.0f,
            .A = w.ds, .lda = ld, .B = k, .ldb = hd, .beta = 0.0f, .C = dq, .ldc = hd,
            .ab_type = CUDA_R_16BF, .cd_type = CUDA_R_32F, .batch = heads, .stride_a = T * ld,
            .stride_b = head, .stride_c = head});
  // dk (T, hd) = dS (T, T)^T q (T, hd)
  run_gemm({.trans_a = true, .trans_b = false, .M = T, .N = hd, .K = T, .alpha = 1.0f,
            .A = w.ds, .lda = ld, .B = q, .ldb = hd, .beta = 0.0f, .C = dk, .ldc = hd,
            .ab_type = CUDA_R_16BF, .cd_type = CUDA_R_32F, .batch = heads, .stride_a = T * ld,
            .stride_b = head, .stride_c = head});
  check(cuda::from_heads(stream_, "attention (heads to dqkv)", w.heads, dqkv, 3, B, T, C, nh, fs),
        "heads_to_qkv_kernel");
}

}  // namespace noeira
