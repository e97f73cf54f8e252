// The CPU attention's softmax rows (attention_softmax.h): the forward's masked softmax
// and the backward's dS, in place on a T x T matrix, each row's reductions in a fixed
// order.
#include "kernels/cpu/attention_softmax.h"

#include <algorithm>
#include <cmath>

#include "kernels/common/exp_approx.h"

namespace noeira::cpu_attention {

namespace {

// Fixed-order reductions over a row (j = 0..n-1): kLanes interleaved partial results
// (lane l takes j = l mod kLanes, in j order), then the lanes combined in lane order. The
// order depends on n only.
//
// Rows go through in groups of kGroupRows: each row leaves its lanes in the group's table
// and the lanes are combined for the whole group afterwards. Combining one row at a time
// was a chain of 15 dependent adds (or max selects) per row between its exp pass and its
// scaling; a group's chains are independent and overlap. Same operations in the same
// order per row, so the same bits.
constexpr int64_t kLanes = 16;
constexpr int64_t kGroupRows = 16;
using GroupLanes = float[kGroupRows][kLanes];

// The lanes live in local arrays while a row runs (the compiler keeps them in one vector
// register; through the caller's pointer, which may alias the row, the max ran scalar).
//
// A row's n values (a causal row's n runs 1..T) start a row of T floats. Its last
// n mod kLanes values go through as one more whole block of lanes while that block lies
// inside the row (j + kLanes <= T; at T = 64, always), the lanes at or past n selected
// out: as a remainder loop they ran one scalar exp_approx or division each, about as long
// as the vectorised rest of a 64-wide row. Lane l still takes j = l mod kLanes, and a
// lane selected out adds nothing (-inf to a max, +0 to a sum that is never -0), so the
// bits are the remainder loop's; the lanes past n are written 0, which the row's end is
// anyway. A block that would leave the row (T = 65's last column) keeps the scalar loop.
// `#pragma omp simd` on every 16-lane loop: without it GCC unrolled the partial block
// into scalars, and the whole blocks ran slower (vit-tiny's forward, `micro`: 6-8%).

// Whether the partial block at j (j < n < j + kLanes) lies inside the row of T floats.
// Inside a causal row block it then reads only scores the block's GEMM wrote (it writes
// keys up to the block's end, a multiple of kLanes or T).
inline bool partial_fits(int64_t j, int64_t T) { return j + kLanes <= T; }
static_assert(kRowBlock % kLanes == 0);

// Runs `lane(j, l, in)` over a row's values j < n, l = j mod kLanes: whole blocks (in
// true), then the partial block as one more vector where it fits the row (in = j < n),
// else a scalar remainder. Returns the end of the indices it visited.
template <class F>
int64_t each_lane(int64_t n, int64_t T, const F& lane) {
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
#pragma omp simd
    for (int l = 0; l < kLanes; ++l) lane(j + l, l, true);
  if (j < n && partial_fits(j, T)) {
    const int rem = static_cast<int>(n - j);
#pragma omp simd
    for (int l = 0; l < kLanes; ++l) lane(j + l, l, l < rem);
    return j + kLanes;
  }
  for (int l = 0; j < n; ++j, ++l) lane(j, l, true);
  return j;
}

// m[l] = the max over lane l's values (-inf for an empty lane); max is exact in any order.
void max_lanes(const float* __restrict a, int64_t n, int64_t T, float* __restrict m) {
  float lm[kLanes];
  for (int64_t l = 0; l < kLanes; ++l) lm[l] = -INFINITY;
  each_lane(n, T, [&](int64_t j, int l, bool in) {
    const float v = in ? a[j] : -INFINITY;
    lm[l] = v > lm[l] ? v : lm[l];
  });
  for (int64_t l = 0; l < kLanes; ++l) m[l] = lm[l];
}

// a[j] = exp_approx(a[j] - mx) for j < n (0 for a whole partial block's lanes past n);
// s[l] = the sum of lane l's new values.
void exp_sum_lanes(float* __restrict a, int64_t n, int64_t T, float mx, float* __restrict s) {
  float ls[kLanes];
  for (int64_t l = 0; l < kLanes; ++l) ls[l] = 0.0f;
  each_lane(n, T, [&](int64_t j, int l, bool in) {
    const float e = exp_approx(a[j] - mx);
    a[j] = in ? e : 0.0f;
    ls[l] += a[j];
  });
  for (int64_t l = 0; l < kLanes; ++l) s[l] = ls[l];
}

// s[l] = the sum of lane l's products x[j] * y[j], j < n.
void dot_lanes(const float* __restrict x, const float* __restrict y, int64_t n, int64_t T,
               float* __restrict s) {
  float ls[kLanes];
  for (int64_t l = 0; l < kLanes; ++l) ls[l] = 0.0f;
  each_lane(n, T, [&](int64_t j, int l, bool in) { ls[l] += in ? x[j] * y[j] : 0.0f; });
  for (int64_t l = 0; l < kLanes; ++l) s[l] = ls[l];
}

// a[j] = a[j] * (1 / s) for j < n, 0 for a whole partial block's lanes past n; returns the
// end of what it wrote. One division per row, then products (torch's softmax does the
// same): a quotient per element was a vector division per 16 values, 7% of vit-tiny's
// attention forward.
int64_t scale_row(float* __restrict a, int64_t n, int64_t T, float s) {
  const float inv = 1.0f / s;
  return each_lane(n, T, [&](int64_t j, int, bool in) { a[j] = in ? a[j] * inv : 0.0f; });
}

// d[j] = (a[j] * (d[j] - r)) * scale for j < n, 0 for a whole partial block's lanes past
// n; returns the end of what it wrote.
int64_t ds_row(const float* __restrict a, float* __restrict d, int64_t n, int64_t T, float r,
               float scale) {
  return each_lane(n, T, [&](int64_t j, int, bool in) {
    d[j] = in ? (a[j] * (d[j] - r)) * scale : 0.0f;
  });
}

// out[r] = the lanes of row r combined in lane order, for the group's first `rows` rows.
void combine_max(const GroupLanes& m, int64_t rows, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    float mx = m[r][0];
    for (int64_t l = 1; l < kLanes; ++l) mx = m[r][l] > mx ? m[r][l] : mx;
    out[r] = mx;
  }
}
void combine_sum(const GroupLanes& s, int64_t rows, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    float sum = s[r][0];
    for (int64_t l = 1; l < kLanes; ++l) sum += s[r][l];
    out[r] = sum;
  }
}

}  // namespace

// The masked softmax of rows [i0, i1) of att (T columns), in place: row i's first
// visible(p, i) values become exp_approx(S - max) * (1 / sum), the rest 0.
void softmax_rows(const Plan& p, float* att, int64_t i0, int64_t i1) {
  const int64_t T = p.T;
  for (int64_t g0 = i0; g0 < i1; g0 += kGroupRows) {
    const int64_t rows = std::min(kGroupRows, i1 - g0);
    GroupLanes lanes;
    float mx[kGroupRows], sum[kGroupRows];
    for (int64_t r = 0; r < rows; ++r)
      max_lanes(att + (g0 + r) * T, visible(p, g0 + r), T, lanes[r]);
    combine_max(lanes, rows, mx);
    for (int64_t r = 0; r < rows; ++r)
      exp_sum_lanes(att + (g0 + r) * T, visible(p, g0 + r), T, mx[r], lanes[r]);
    combine_sum(lanes, rows, sum);
    for (int64_t r = 0; r < rows; ++r) {
      float* a = att + (g0 + r) * T;
      const int64_t n = visible(p, g0 + r);
      std::fill(a + scale_row(a, n, T, sum[r]), a + T, 0.0f);
    }
  }
}

// Rows [i0, i1) of datt (T columns) become dS in place, from att's rows: r_i = the lanes'
// sum of datt_ij att_ij, dS_ij = (att_ij (datt_ij - r_i)) scale for j < visible(p, i), else
// 0 (read by dk's GEMMs past the block's keys).
void softmax_backward_rows(const Plan& p, const float* att, float* ds, int64_t i0, int64_t i1,
                           float scale) {
  const int64_t T = p.T;
  for (int64_t g0 = i0; g0 < i1; g0 += kGroupRows) {
    const int64_t rows = std::min(kGroupRows, i1 - g0);
    GroupLanes lanes;
    float rsum[kGroupRows];
    for (int64_t r = 0; r < rows; ++r)
      dot_lanes(ds + (g0 + r) * T, att + (g0 + r) * T, visible(p, g0 + r), T, lanes[r]);
    combine_sum(lanes, rows, rsum);
    for (int64_t r = 0; r < rows; ++r) {
      const float* a = att + (g0 + r) * T;
      float* dsi = ds + (g0 + r) * T;
      const int64_t n = visible(p, g0 + r);
      std::fill(dsi + ds_row(a, dsi, n, T, rsum[r], scale), dsi + T, 0.0f);
    }
  }
}

}  // namespace noeira::cpu_attention
