// CpuOps' self-attention core, causal or not (contract: kernels/op_list.inc). Per (batch,
// head) pair the two big products of each pass are GEMMs (oneDNN matmul, fp32), with a
// fused (masked) softmax between them. OpenMP spreads the (b, h) pairs; one thread computes
// a whole pair in a fixed order, so 1 and N threads agree bit for bit.
//
// Per thread, the workspace holds the pair's q, k, v (and dout) copied to contiguous fp32
// (T x hd each: bf16 storage is read once, and fp32 and bf16 views run the very same
// GEMMs, so bf16 results are fp32 results on the rounded inputs, rounded once on store),
// the pair's dq, dk, dv and one T x T matrix for backward, and the oneDNN scratchpad.
//
// The GEMMs and the row blocks that keep causal products to the keys they need:
// attention_plan.h.
//
// What is computed (hd = C / nh, scale = float(1 / sqrt(double(hd))), fp32 throughout,
// GEMM sums in oneDNN's order for the shape; "lanes": kLanes interleaved partial results
// combined in lane order, see row_max):
//   forward:   S = (q k^T) * scale (oneDNN's output scale on the fp32 dot product: the
//              twin's (q @ k^T) * scale), then per row i, fused:
//              mx = max_{j<n_i} S_ij (lanes; max is exact in any order), n_i = i + 1
//              when causal, else T; e_j = exp_approx(S_ij - mx) (kernels/common); sum =
//              sum_{j<n_i} e_j (lanes); att_ij = e_j / sum; att_ij = 0 for j >= n_i;
//              out = att v, rounded once.
//   backward:  dv = att^T dout; datt = dout v^T; r_i = sum_{j<n_i} datt_ij att_ij (lanes);
//              dS_ij = (att_ij * (datt_ij - r_i)) * scale for j < n_i, else 0;
//              dq = dS k; dk = dS^T q; each rounded once.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "kernels/common/bf16.h"
#include "kernels/common/exp_approx.h"
#include "kernels/common/saturating.h"
#include "kernels/cpu/attention_plan.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/onednn_engine.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

using cpu_attention::attention_scale;
using cpu_attention::block_begin;
using cpu_attention::block_end;
using cpu_attention::grad_begin;
using cpu_attention::Plan;
using cpu_attention::plan_of;
using cpu_attention::run;
using cpu_attention::visible;

// ---- Workspace ----

// Floats per thread before the scratchpad: q, k, v, dout (or out), dq, dk, dv (T x hd
// each) and one T x T matrix (backward's datt / dS).
int64_t thread_floats(int64_t T, int64_t hd) { return 7 * T * hd + T * T; }

size_t thread_bytes(const Plan& p) {
  return onednn::align_up(static_cast<size_t>(thread_floats(p.T, p.hd)) * sizeof(float)) +
         p.scratch_bytes;
}

// Thread t's slab: floats at the start, then its scratchpad.
struct Slab {
  float* f;
  void* scratch;
};

Slab slab_of(void* workspace, const Plan& p, int thread) {
  std::byte* base = onednn::align_up(workspace) + thread_bytes(p) * static_cast<size_t>(thread);
  return {reinterpret_cast<float*>(base),
          base + onednn::align_up(static_cast<size_t>(thread_floats(p.T, p.hd)) * sizeof(float))};
}

constexpr int64_t kPrefetchRows = 6;

// dst (rows, cols) contiguous fp32 from rows of src `ld` apart. Rows are far apart (3C
// floats: over a page for GPT sizes, so no hardware stream), so the rows a few ahead
// are prefetched.
template <class S>
void load_rows(const S* src, int64_t ld, int64_t rows, int64_t cols, float* dst) {
  constexpr int64_t line = 64 / static_cast<int64_t>(sizeof(S));
  for (int64_t t = 0; t < rows; ++t) {
    if (t + kPrefetchRows < rows)
      for (int64_t d = 0; d < cols; d += line)
        __builtin_prefetch(src + (t + kPrefetchRows) * ld + d);
    const S* row = src + t * ld;
    for (int64_t d = 0; d < cols; ++d) dst[t * cols + d] = load_f32(row[d]);
  }
}

// Rows of dst `ld` apart from src (rows, cols) contiguous fp32, rounded once (bf16).
template <class S>
void store_rows(const float* src, int64_t rows, int64_t cols, S* dst, int64_t ld) {
  constexpr int64_t line = 64 / static_cast<int64_t>(sizeof(S));
  for (int64_t t = 0; t < rows; ++t) {
    if (t + kPrefetchRows < rows)
      for (int64_t d = 0; d < cols; d += line)
        __builtin_prefetch(dst + (t + kPrefetchRows) * ld + d, 1);
    S* row = dst + t * ld;
    for (int64_t d = 0; d < cols; ++d) store_f32(row[d], src[t * cols + d]);
  }
}

// Row 0 of head h of batch b's block `which` (0 q, 1 k, 2 v) in qkv (B, T, 3C); rows 3C apart.
template <class S>
const S* head_at(const S* qkv, int64_t b, int64_t h, int which, int64_t T, int64_t C,
                 int64_t hd) {
  return qkv + b * T * 3 * C + which * C + h * hd;
}

// Copies that head into dst (T, hd).
template <class S>
void load_head(const S* qkv, int64_t b, int64_t h, int which, int64_t T, int64_t C, int64_t hd,
               float* dst) {
  load_rows(head_at(qkv, b, h, which, T, C, hd), 3 * C, T, hd, dst);
}

// Asks for rows of src `ld` apart (cols values each) to come into L2 now: the next (b, h)
// pair's rows, fetched while this pair computes. Each head reads its own lines of every
// row, which the hardware prefetcher does not follow: copied on demand, vit-tiny's q, k, v
// came at DRAM latency (a third of the forward outside its GEMMs).
template <class S>
void prefetch_rows(const S* src, int64_t ld, int64_t rows, int64_t cols) {
  constexpr int64_t line = 64 / static_cast<int64_t>(sizeof(S));
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t d = 0; d < cols; d += line) __builtin_prefetch(src + t * ld + d, 0, 2);
}

// The q, k, v rows of pair bh (= b * nh + h) of qkv (B, T, 3C), into L2.
template <class S>
void prefetch_heads(const S* qkv, int64_t bh, int64_t nh, int64_t T, int64_t C, int64_t hd) {
  for (int which = 0; which < 3; ++which)
    prefetch_rows(head_at(qkv, bh / nh, bh % nh, which, T, C, hd), 3 * C, T, hd);
}

// Fixed-order reductions over a row (j = 0..n-1): kLanes interleaved partial results
// (lane l takes j = l mod kLanes, in j order), then the lanes combined in lane order. The
// order depends on n only.
constexpr int64_t kLanes = 16;

float row_max(const float* a, int64_t n) {
  float m[kLanes];
  for (int64_t l = 0; l < kLanes; ++l) m[l] = -INFINITY;
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) m[l] = a[j + l] > m[l] ? a[j + l] : m[l];
  for (int64_t l = 0; j < n; ++j, ++l) m[l] = a[j] > m[l] ? a[j] : m[l];
  float mx = m[0];
  for (int64_t l = 1; l < kLanes; ++l) mx = m[l] > mx ? m[l] : mx;
  return mx;
}

// a[j] = exp_approx(a[j] - mx) for j < n, and their sum in lanes as row_dot's.
float row_exp_sum(float* a, int64_t n, float mx) {
  float s[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) {
      a[j + l] = exp_approx(a[j + l] - mx);
      s[l] += a[j + l];
    }
  for (int64_t l = 0; j < n; ++j, ++l) {
    a[j] = exp_approx(a[j] - mx);
    s[l] += a[j];
  }
  float r = s[0];
  for (int64_t l = 1; l < kLanes; ++l) r += s[l];
  return r;
}

float row_dot(const float* x, const float* y, int64_t n) {
  float s[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) s[l] += x[j + l] * y[j + l];
  for (int64_t l = 0; j < n; ++j, ++l) s[l] += x[j] * y[j];
  float r = s[0];
  for (int64_t l = 1; l < kLanes; ++l) r += s[l];
  return r;
}

// ---- Passes ----

template <class S>
void attention_forward_impl(int threads, const Plan& p, const S* qkv, S* out, float* att_all,
                            int64_t B, int64_t C, int64_t nh, void* ws) {
  const int64_t T = p.T, hd = p.hd;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t bh = 0; bh < B * nh; ++bh) {
    const int64_t b = bh / nh, h = bh % nh;
    const int thread = omp_get_thread_num();
    const Slab slab = slab_of(ws, p, thread);
    dnnl::stream& stream = *p.streams[static_cast<size_t>(thread)];
    float* q = slab.f;
    float* k = q + T * hd;
    float* v = k + T * hd;
    float* o = v + T * hd;
    if (bh + 1 < B * nh) prefetch_heads(qkv, bh + 1, nh, T, C, hd);
    load_head(qkv, b, h, 0, T, C, hd, q);
    load_head(qkv, b, h, 1, T, C, hd, k);
    load_head(qkv, b, h, 2, T, C, hd, v);
    float* att = att_all + bh * T * T;
    for (int64_t blk = 0; blk < p.blocks; ++blk) {
      const int64_t i0 = block_begin(blk), i1 = block_end(p, blk);
      const size_t bk = static_cast<size_t>(blk);
      run(p.s[bk], thread, stream, slab.scratch, q + i0 * hd, k, att + i0 * T);
      for (int64_t i = i0; i < i1; ++i) {
        float* a = att + i * T;
        const int64_t n = visible(p, i);
        const float sum = row_exp_sum(a, n, row_max(a, n));
        for (int64_t j = 0; j < n; ++j) a[j] /= sum;
        for (int64_t j = n; j < T; ++j) a[j] = 0.0f;
      }
      run(p.o[bk], thread, stream, slab.scratch, att + i0 * T, v, o + i0 * hd);
    }
    store_rows(o, T, hd, out + b * T * C + h * hd, C);
  }
}

template <class S>
void attention_backward_impl(int threads, const Plan& p, const S* dout, const S* qkv,
                             const float* att_all, S* dqkv, int64_t B, int64_t C, int64_t nh,
                             void* ws) {
  const int64_t T = p.T, hd = p.hd;
  const float scale = attention_scale(hd);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t bh = 0; bh < B * nh; ++bh) {
    const int64_t b = bh / nh, h = bh % nh;
    const int thread = omp_get_thread_num();
    const Slab slab = slab_of(ws, p, thread);
    dnnl::stream& stream = *p.streams[static_cast<size_t>(thread)];
    float* q = slab.f;
    float* k = q + T * hd;
    float* v = k + T * hd;
    float* go = v + T * hd;
    float* dq = go + T * hd;
    float* dk = dq + T * hd;
    float* dv = dk + T * hd;
    float* ds = dv + T * hd;  // T x T: datt, then dS in place
    if (bh + 1 < B * nh) {
      prefetch_heads(qkv, bh + 1, nh, T, C, hd);
      prefetch_rows(dout + (bh + 1) / nh * T * C + (bh + 1) % nh * hd, C, T, hd);
    }
    load_head(qkv, b, h, 0, T, C, hd, q);
    load_head(qkv, b, h, 1, T, C, hd, k);
    load_head(qkv, b, h, 2, T, C, hd, v);
    load_rows(dout + b * T * C + h * hd, C, T, hd, go);
    const float* att = att_all + bh * T * T;
    // datt and dS by row block, then dq for the block.
    for (int64_t blk = 0; blk < p.blocks; ++blk) {
      const int64_t i0 = block_begin(blk), i1 = block_end(p, blk);
      const size_t bk = static_cast<size_t>(blk);
      run(p.da[bk], thread, stream, slab.scratch, go + i0 * hd, v, ds + i0 * T);
      for (int64_t i = i0; i < i1; ++i) {
        const float* a = att + i * T;
        float* dsi = ds + i * T;
        const int64_t n = visible(p, i);
        const float r = row_dot(dsi, a, n);
        for (int64_t j = 0; j < n; ++j) dsi[j] = (a[j] * (dsi[j] - r)) * scale;
        for (int64_t j = n; j < T; ++j) dsi[j] = 0.0f;  // past the block's keys: read by dk's GEMMs
      }
      run(p.dq[bk], thread, stream, slab.scratch, ds + i0 * T, k, dq + i0 * hd);
    }
    // dv and dk by row block of keys j: sums over rows i >= grad_begin (the block's first
    // row when causal, as the rows above it do not see these keys; else every row).
    for (int64_t blk = 0; blk < p.blocks; ++blk) {
      const int64_t j0 = block_begin(blk), g0 = grad_begin(p, blk);
      const size_t bk = static_cast<size_t>(blk);
      run(p.dv[bk], thread, stream, slab.scratch, att + g0 * T + j0, go + g0 * hd, dv + j0 * hd);
      run(p.dk[bk], thread, stream, slab.scratch, ds + g0 * T + j0, q + g0 * hd, dk + j0 * hd);
    }
    S* dst = dqkv + b * T * 3 * C + h * hd;
    store_rows(dq, T, hd, dst, 3 * C);
    store_rows(dk, T, hd, dst + C, 3 * C);
    store_rows(dv, T, hd, dst + 2 * C, 3 * C);
  }
}

}  // namespace

// att holds the probabilities.
int64_t CpuOps::attention_saved_floats(int64_t B, int64_t T, int64_t nh, DType) const {
  return sat_mul({B, nh, T, T});
}

// oneDNN GEMM primitives are created per block of 64 query rows (about 0.3 MB each
// block): 65,536 positions plan 1,024 blocks.
int64_t CpuOps::attention_max_context() const { return int64_t{1} << 16; }

size_t CpuOps::attention_workspace_bytes(int64_t B, int64_t T, int64_t C, int64_t nh,
                                         DType /*dtype*/) const {
  (void)B;
  if (T <= 0 || nh <= 0 || C <= 0 || C % nh != 0) return 0;
  // Creates the primitives now (plan time), so the first step allocates nothing for them.
  // Both masks' plans (a model may use either): the larger workspace serves both.
  const Plan& causal = plan_of("attention_workspace_bytes", threads_, T, C / nh, true);
  const Plan& full = plan_of("attention_workspace_bytes", threads_, T, C / nh, false);
  return std::max(thread_bytes(causal), thread_bytes(full)) * static_cast<size_t>(threads_) +
         onednn::kAlign;
}

void CpuOps::attention_forward(ConstView qkv, View out, float* att, int64_t B, int64_t T,
                               int64_t C, int64_t nh, bool causal, void* workspace) {
  const char* op = "attention_forward";
  expect_elems(op, B * T * 3 * C, {qkv});
  expect_elems(op, B * T * C, {out});
  if (B <= 0 || T <= 0) return;
  const Plan& p = plan_of(op, threads_, T, C / nh, causal);
  dispatch_float(op, {qkv, out}, [&](auto storage) {
    using S = typename decltype(storage)::type;
    attention_forward_impl(threads_, p, qkv.as<S>(), out.as<S>(), att, B, C, nh, workspace);
  });
}

void CpuOps::attention_backward(ConstView dout, ConstView qkv, const float* att, View dqkv,
                                int64_t B, int64_t T, int64_t C, int64_t nh, bool causal,
                                void* workspace) {
  const char* op = "attention_backward";
  expect_elems(op, B * T * C, {dout});
  expect_elems(op, B * T * 3 * C, {qkv, dqkv});
  if (B <= 0 || T <= 0) return;
  const Plan& p = plan_of(op, threads_, T, C / nh, causal);
  dispatch_float(op, {dout, qkv, dqkv}, [&](auto storage) {
    using S = typename decltype(storage)::type;
    attention_backward_impl(threads_, p, dout.as<S>(), qkv.as<S>(), att, dqkv.as<S>(), B, C,
                            nh, workspace);
  });
}

}  // namespace noeira
