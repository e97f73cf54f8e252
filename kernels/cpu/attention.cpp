// CpuOps' self-attention core, causal or not (contract: kernels/op_list.inc). Per (batch,
// head) pair the two big products of each pass are GEMMs (oneDNN matmul, fp32), with a
// fused (masked) softmax between them. OpenMP spreads units of pairs (a batch and a run of
// its heads, cut by the shape alone); one thread computes a whole unit in a fixed order,
// each GEMM call for all of the unit's heads, so 1 and N threads agree bit for bit.
//
// Per thread, the workspace holds the unit's q, k, v (and dout) copied to contiguous fp32
// (T x hd per head: bf16 storage is read once, and fp32 and bf16 views run the very same
// GEMMs, so bf16 results are fp32 results on the rounded inputs, rounded once on store),
// its dq, dk, dv (or out), a T x T matrix per head for backward, and the oneDNN
// scratchpad.
//
// The GEMMs and the row blocks that keep causal products to the keys they need:
// attention_plan.h; the softmax rows between them: attention_softmax.h.
//
// What is computed (hd = C / nh, scale = float(1 / sqrt(double(hd))), fp32 throughout,
// GEMM sums in oneDNN's order for the shape; "lanes": kLanes interleaved partial results
// combined in lane order, see max_lanes):
//   forward:   S = (q k^T) * scale (oneDNN's output scale on the fp32 dot product: the
//              twin's (q @ k^T) * scale), then per row i, fused:
//              mx = max_{j<n_i} S_ij (lanes; max is exact in any order), n_i = i + 1
//              when causal, else T; e_j = exp_approx(S_ij - mx) (kernels/common); sum =
//              sum_{j<n_i} e_j (lanes); att_ij = e_j * (1 / sum); att_ij = 0 for j >= n_i;
//              out = att v, rounded once.
//   backward:  dv = att^T dout; datt = dout v^T; r_i = sum_{j<n_i} datt_ij att_ij (lanes);
//              dS_ij = (att_ij * (datt_ij - r_i)) * scale for j < n_i, else 0;
//              dq = dS k; dk = dS^T q; each rounded once.
#include <omp.h>

#include <algorithm>
#include <cstddef>

#include "kernels/common/bf16.h"
#include "kernels/common/saturating.h"
#include "kernels/cpu/attention_plan.h"
#include "kernels/cpu/attention_softmax.h"
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
using cpu_attention::softmax_backward_rows;
using cpu_attention::softmax_rows;

// ---- Work units ----
//
// A unit is one batch b and a run of its heads [h0, h0 + per); OpenMP spreads the units.
// A unit copies its rows of qkv (and dout) in one sequential pass, so the hardware
// prefetcher streams them: copied head by head, each head's hd values of rows 3C apart came
// at DRAM latency (vit-tiny: over a third of the work outside the GEMMs). Each GEMM call
// takes the unit's heads at once (attention_plan.h). The cut into units depends on the
// shape only, so every head meets the same calls whatever the thread count and 1 and N
// threads agree bit for bit.

// Units to share among the threads when the batch allows it.
constexpr int64_t kMinUnits = 8;
// T x T floats of every head of a call at most (256 KiB: L2-resident with the rest).
constexpr int64_t kMaxSquareFloats = int64_t{1} << 16;

// Heads per unit (and per GEMM call): the most heads, a divisor of nh, whose T x T
// matrices fit kMaxSquareFloats while the batch still makes kMinUnits units (or as many
// as B * nh allows). 1 when no divisor qualifies.
int64_t heads_per_unit(int64_t B, int64_t T, int64_t nh) {
  const int64_t want_units = std::min(kMinUnits, B * nh);
  for (int64_t per = nh; per > 1; --per)
    if (nh % per == 0 && per * T * T <= kMaxSquareFloats && B * (nh / per) >= want_units)
      return per;
  return 1;
}

struct Units {
  int64_t per = 1;     // heads per unit
  int64_t count = 0;   // units in all: B * groups
  int64_t groups = 1;  // units per batch: nh / per
};

Units units_of(int64_t B, int64_t T, int64_t nh) {
  Units u;
  u.per = heads_per_unit(B, T, nh);
  u.groups = nh / u.per;
  u.count = B * u.groups;
  return u;
}

struct Unit {
  int64_t b, h0, heads;
};

Unit unit_at(const Units& u, int64_t i) {
  return {i / u.groups, (i % u.groups) * u.per, u.per};
}

// ---- Workspace ----

// Floats per thread before the scratchpad, for a unit of up to nh heads (head-major
// blocks, T x hd per head): q, k, v, dout (or out), dq, dk, dv, and one T x T matrix per
// head of a unit (backward's datt / dS).
int64_t thread_floats(const Plan& p, int64_t C) { return 7 * p.T * C + p.heads * p.T * p.T; }

size_t thread_bytes(const Plan& p, int64_t C) {
  return onednn::align_up(static_cast<size_t>(thread_floats(p, C)) * sizeof(float)) +
         p.scratch_bytes;
}

// Thread t's slab: floats at the start, then its scratchpad. Its blocks of T x C floats:
// [0] q, [1] k, [2] v, [3] dout or out, [4] dq, [5] dk, [6] dv, head h of the unit at
// h * T * hd within each; then the unit's T x T matrices, head h at h * T * T.
struct Slab {
  float* f;
  void* scratch;
  int64_t T, C, hd;
  float* head(int block, int64_t h) const { return f + block * T * C + h * T * hd; }
  float* square(int64_t h) const { return f + 7 * T * C + h * T * T; }
};

Slab slab_of(void* workspace, const Plan& p, int64_t C, int thread) {
  std::byte* base =
      onednn::align_up(workspace) + thread_bytes(p, C) * static_cast<size_t>(thread);
  return {reinterpret_cast<float*>(base),
          base + onednn::align_up(static_cast<size_t>(thread_floats(p, C)) * sizeof(float)),
          p.T, C, p.hd};
}

// For each row t of batch u.b in a (B, T, parts * C) tensor, each part and each of the
// unit's heads, front to back: f(slab_row, at), slab_row the head's row t in the slab's
// block first_block + part, at the index of its hd values in the tensor.
template <class F>
void for_each_head_row(const Unit& u, const Slab& slab, int parts, int first_block,
                       const F& f) {
  const int64_t T = slab.T, C = slab.C, hd = slab.hd, ld = parts * C;
  for (int64_t t = 0; t < T; ++t)
    for (int part = 0; part < parts; ++part)
      for (int64_t h = 0; h < u.heads; ++h)
        f(slab.head(first_block + part, h) + t * hd,
          (u.b * T + t) * ld + part * C + (u.h0 + h) * hd);
}

// The unit's heads of src (B, T, parts * C) into the slab's blocks first_block + part, fp32.
template <class S>
void load_unit(const S* src, int parts, const Unit& u, const Slab& slab, int first_block) {
  for_each_head_row(u, slab, parts, first_block, [src, hd = slab.hd](float* mine, int64_t at) {
    for (int64_t d = 0; d < hd; ++d) mine[d] = load_f32(src[at + d]);
  });
}

// The reverse: the slab's blocks into dst, rounded once (bf16).
template <class S>
void store_unit(const Slab& slab, int first_block, int parts, const Unit& u, S* dst) {
  for_each_head_row(u, slab, parts, first_block, [dst, hd = slab.hd](float* mine, int64_t at) {
    for (int64_t d = 0; d < hd; ++d) store_f32(dst[at + d], mine[d]);
  });
}

// ---- Passes ----

// Each pass runs every product for the unit's heads in one call (head h's matrices T * hd
// or T * T after head 0's), and the softmax rows head by head between them.
template <class S>
void attention_forward_impl(int threads, const Plan& p, const Units& units, const S* qkv,
                            S* out, float* att_all, int64_t C, int64_t nh, void* ws) {
  const int64_t T = p.T, hd = p.hd;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t ui = 0; ui < units.count; ++ui) {
    const Unit u = unit_at(units, ui);
    const int thread = omp_get_thread_num();
    const Slab slab = slab_of(ws, p, C, thread);
    dnnl::stream& stream = *p.streams[static_cast<size_t>(thread)];
    load_unit(qkv, 3, u, slab, 0);
    const float* q = slab.head(0, 0);
    const float* k = slab.head(1, 0);
    const float* v = slab.head(2, 0);
    float* o = slab.head(3, 0);
    float* att = att_all + (u.b * nh + u.h0) * T * T;  // (heads, T, T)
    for (int64_t blk = 0; blk < p.blocks; ++blk) {
      const int64_t i0 = block_begin(blk), i1 = block_end(p, blk);
      const size_t bk = static_cast<size_t>(blk);
      run(p.s[bk], thread, stream, slab.scratch, q + i0 * hd, k, att + i0 * T);
      for (int64_t h = 0; h < u.heads; ++h) softmax_rows(p, att + h * T * T, i0, i1);
      run(p.o[bk], thread, stream, slab.scratch, att + i0 * T, v, o + i0 * hd);
    }
    store_unit(slab, 3, 1, u, out);
  }
}

template <class S>
void attention_backward_impl(int threads, const Plan& p, const Units& units, const S* dout,
                             const S* qkv, const float* att_all, S* dqkv, int64_t C,
                             int64_t nh, void* ws) {
  const int64_t T = p.T, hd = p.hd;
  const float scale = attention_scale(hd);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t ui = 0; ui < units.count; ++ui) {
    const Unit u = unit_at(units, ui);
    const int thread = omp_get_thread_num();
    const Slab slab = slab_of(ws, p, C, thread);
    dnnl::stream& stream = *p.streams[static_cast<size_t>(thread)];
    load_unit(qkv, 3, u, slab, 0);
    load_unit(dout, 1, u, slab, 3);
    const float* q = slab.head(0, 0);
    const float* k = slab.head(1, 0);
    const float* v = slab.head(2, 0);
    const float* go = slab.head(3, 0);
    float* dq = slab.head(4, 0);
    float* dk = slab.head(5, 0);
    float* dv = slab.head(6, 0);
    float* ds = slab.square(0);  // (heads, T, T): datt, then dS in place
    const float* att = att_all + (u.b * nh + u.h0) * T * T;  // (heads, T, T)
    // datt and dS by row block, then dq for the block.
    for (int64_t blk = 0; blk < p.blocks; ++blk) {
      const int64_t i0 = block_begin(blk), i1 = block_end(p, blk);
      const size_t bk = static_cast<size_t>(blk);
      run(p.da[bk], thread, stream, slab.scratch, go + i0 * hd, v, ds + i0 * T);
      for (int64_t h = 0; h < u.heads; ++h)
        softmax_backward_rows(p, att + h * T * T, ds + h * T * T, i0, i1, scale);
      run(p.dq[bk], thread, stream, slab.scratch, ds + i0 * T, k, dq + i0 * hd);
    }
    // dv and dk by row block of keys j: sums over rows i >= grad_begin (the block's first
    // row when causal, as the rows above it do not see these keys; else every row).
    for (int64_t blk = 0; blk < p.blocks; ++blk) {
      const int64_t j0 = block_begin(blk), g0 = grad_begin(p, blk);
      const size_t bk = static_cast<size_t>(blk);
      run(p.dv[bk], thread, stream, slab.scratch, att + g0 * T + j0, go + g0 * hd,
          dv + j0 * hd);
      run(p.dk[bk], thread, stream, slab.scratch, ds + g0 * T + j0, q + g0 * hd,
          dk + j0 * hd);
    }
    store_unit(slab, 4, 3, u, dqkv);
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
  if (B <= 0 || T <= 0 || nh <= 0 || C <= 0 || C % nh != 0) return 0;
  // Creates the primitives now (plan time), so the first step allocates nothing for them.
  // Both masks' plans (a model may use either): the larger workspace serves both. It also
  // serves any smaller batch (heads per unit never grow as B shrinks), though a batch not
  // planned here makes its primitives on its first call.
  const int64_t heads = heads_per_unit(B, T, nh);
  const Plan& causal = plan_of("attention_workspace_bytes", threads_, T, C / nh, true, heads);
  const Plan& full = plan_of("attention_workspace_bytes", threads_, T, C / nh, false, heads);
  return std::max(thread_bytes(causal, C), thread_bytes(full, C)) * static_cast<size_t>(threads_) +
         onednn::kAlign;
}

void CpuOps::attention_forward(ConstView qkv, View out, float* att, int64_t B, int64_t T,
                               int64_t C, int64_t nh, bool causal, void* workspace) {
  const char* op = "attention_forward";
  expect_elems(op, B * T * 3 * C, {qkv});
  expect_elems(op, B * T * C, {out});
  if (B <= 0 || T <= 0) return;
  const Units units = units_of(B, T, nh);
  const Plan& p = plan_of(op, threads_, T, C / nh, causal, units.per);
  dispatch_float(op, {qkv, out}, [&](auto storage) {
    using S = typename decltype(storage)::type;
    attention_forward_impl(threads_, p, units, qkv.as<S>(), out.as<S>(), att, C, nh, workspace);
  });
}

void CpuOps::attention_backward(ConstView dout, ConstView qkv, const float* att, View dqkv,
                                int64_t B, int64_t T, int64_t C, int64_t nh, bool causal,
                                void* workspace) {
  const char* op = "attention_backward";
  expect_elems(op, B * T * C, {dout});
  expect_elems(op, B * T * 3 * C, {qkv, dqkv});
  if (B <= 0 || T <= 0) return;
  const Units units = units_of(B, T, nh);
  const Plan& p = plan_of(op, threads_, T, C / nh, causal, units.per);
  dispatch_float(op, {dout, qkv, dqkv}, [&](auto storage) {
    using S = typename decltype(storage)::type;
    attention_backward_impl(threads_, p, units, dout.as<S>(), qkv.as<S>(), att, dqkv.as<S>(), C,
                            nh, workspace);
  });
}

}  // namespace noeira
