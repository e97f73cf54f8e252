// The per-element math of CUDA's GEMM-path attention (kernels/cuda/attention.cu,
// attention_bf16.cu, attention_heads.cu), written once for the kernels and their host
// emulation (tests/unit/test_attention_bf16_emulation.cpp; DESIGN.md rule 5): the head
// layout's index math, and the softmax rows' per-lane partial results and elements.
// Included by C++17 .cu files: C++17 only.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/common/bf16.h"
#include "kernels/common/fast_divmod.h"
#include "kernels/common/hd.h"

namespace noeira::attention {

// ---- The head layout: (B, T, parts * C) <-> (parts, B, nh, T, hd) ----
//
// The heads buffer holds its parts part_stride elements apart (>= B * T * C: a part may
// start on an aligned boundary, aligned_part_stride).

// The shapes, dividers in the index type I (fast_divmod.h): every index is below
// parts * part_stride, so the index math stays in I.
template <class I>
struct HeadsGeom {
  I n, B, T, C, nh, hd, parts, part_stride, part_gap;  // n = parts * B * T * C elements
  Divider<I> by_hd, by_T, by_nh, by_B, by_C, by_row;   // row = parts * C
};

template <class I>
HeadsGeom<I> heads_geom(int parts, int64_t B, int64_t T, int64_t C, int64_t nh,
                        int64_t part_stride) {
  const int64_t hd = C / nh;
  return {static_cast<I>(parts * B * T * C), static_cast<I>(B), static_cast<I>(T),
          static_cast<I>(C), static_cast<I>(nh), static_cast<I>(hd), static_cast<I>(parts),
          static_cast<I>(part_stride), static_cast<I>(part_stride - B * T * C),
          Divider<I>(hd), Divider<I>(T), Divider<I>(nh), Divider<I>(B), Divider<I>(C),
          Divider<I>(parts * C)};
}

// B * T * C elements rounded up to whole `align_bytes` blocks of elem_bytes-sized
// elements: a part stride that keeps every part of an aligned buffer aligned.
inline int64_t aligned_part_stride(int64_t btc, int64_t elem_bytes, int64_t align_bytes) {
  const int64_t per = align_bytes / elem_bytes;
  return (btc + per - 1) / per * per;
}

// Element e (packed: part, b, h, t, d) of the heads layout -> its index in (B, T, parts *
// C); `stored` gets where the heads buffer holds it.
template <class I>
NOEIRA_HD I seq_index_of_head(const HeadsGeom<I>& g, I e, I& stored) {
  I d, t, h, b;
  const I part = g.by_B.divmod(g.by_nh.divmod(g.by_T.divmod(g.by_hd.divmod(e, d), t), h), b);
  stored = e + part * g.part_gap;
  return (b * g.T + t) * g.parts * g.C + part * g.C + h * g.hd + d;
}

// Element i of (B, T, parts * C) -> where the heads buffer holds it.
template <class I>
NOEIRA_HD I head_index_of_seq(const HeadsGeom<I>& g, I i) {
  I j, t, c, d;
  const I b = g.by_T.divmod(g.by_row.divmod(i, j), t);
  const I part = g.by_C.divmod(j, c);
  const I h = g.by_hd.divmod(c, d);
  return part * g.part_stride + ((b * g.nh + h) * g.T + t) * g.hd + d;
}

// ---- Softmax rows of the (B * nh * T, T) scores ----
//
// Row r = (b, h, i) sees keys j < end: end = i + 1 when causal, T otherwise. A row is
// spread over `lanes` lanes (a warp: 32); lane l takes j = l, l + lanes, ... in order, and
// the caller folds the lanes' partial results (a butterfly on the GPU).

NOEIRA_HD int64_t visible_keys(int64_t r, int64_t T, bool causal) {
  return causal ? r % T + 1 : T;
}

// The scaled score, rounded before the max is subtracted (no FMA contraction), as the
// twin's (q @ k^T) * scale and the CPU's loop round it.
NOEIRA_HD float scaled_score(float s, float scale) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(s, scale);
#else
  return s * scale;  // the host build keeps a * b + c two roundings (-ffp-contract=off)
#endif
}

NOEIRA_HD float softmax_exp(float s, float scale, float mx) {
  return expf(scaled_score(s, scale) - mx);
}

// Lane l's max of the scaled scores s[j] (-inf when it has no key).
NOEIRA_HD float softmax_lane_max(const float* s, int64_t end, float scale, int lane, int lanes) {
  float mx = -INFINITY;
  for (int64_t j = lane; j < end; j += lanes) mx = fmaxf(mx, scaled_score(s[j], scale));
  return mx;
}

// Lane l's sum of exp(scaled s[j] - mx), in j order.
NOEIRA_HD float softmax_lane_sum(const float* s, int64_t end, float scale, float mx, int lane,
                                 int lanes) {
  float sum = 0.0f;
  for (int64_t j = lane; j < end; j += lanes) sum += softmax_exp(s[j], scale, mx);
  return sum;
}

// The probability of a visible key.
NOEIRA_HD float softmax_prob(float s, float scale, float mx, float sum) {
  return softmax_exp(s, scale, mx) / sum;
}

// Backward, lane l's part of r = sum_j datt_j att_j, in j order, one fused multiply-add
// per key (explicit, so the host emulation rounds as the GPU does).
NOEIRA_HD float softmax_backward_lane_dot(const float* datt, const float* att, int64_t end,
                                          int lane, int lanes) {
  float dot = 0.0f;
  for (int64_t j = lane; j < end; j += lanes) dot = fmaf(datt[j], att[j], dot);
  return dot;
}

// dS of a visible key: (att (datt - r)) scale, three roundings in this order.
NOEIRA_HD float softmax_backward_ds(float att, float datt, float r, float scale) {
  return (att * (datt - r)) * scale;
}

}  // namespace noeira::attention
