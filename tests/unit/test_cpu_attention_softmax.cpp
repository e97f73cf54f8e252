// The CPU attention's softmax rows (kernels/cpu/attention_softmax.h) compute what
// attention.cpp's header writes out, bit for bit: per row i of n_i visible keys (i + 1
// when causal, else T), the max and the sums in 16 lanes (lane l takes j = l mod 16, in
// j order; lanes combined in lane order), e_j = exp_approx(S_ij - max),
// att_ij = e_j * (1 / sum), 0 past n_i; backward dS_ij = (att_ij (datt_ij - r_i)) scale,
// r_i the lanes' sum of datt_ij att_ij. Checked against that definition written out one
// element at a time, at every row length from 1 to T for T below, at and above a multiple
// of 16 (a row's last partial block runs as a whole vector where it fits in the row), with
// NaN past each row's visible keys (stricter than the attention, whose GEMM writes up to
// the row block's end).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/common/exp_approx.h"
#include "kernels/cpu/attention_softmax.h"
#include "tests/support/image_reference.h"

using namespace noeira;
using namespace noeira::test::image_ref;

namespace {

constexpr int64_t kLanes = 16;

int64_t visible(int64_t T, bool causal, int64_t i) { return causal ? i + 1 : T; }

// The contract's forward on one row of n values, element by element.
void softmax_row_ref(float* a, int64_t n, int64_t T) {
  float lm[kLanes], ls[kLanes];
  for (int64_t l = 0; l < kLanes; ++l) lm[l] = -INFINITY, ls[l] = 0.0f;
  for (int64_t j = 0; j < n; ++j) lm[j % kLanes] = a[j] > lm[j % kLanes] ? a[j] : lm[j % kLanes];
  float mx = lm[0];
  for (int64_t l = 1; l < kLanes; ++l) mx = lm[l] > mx ? lm[l] : mx;
  for (int64_t j = 0; j < n; ++j) {
    a[j] = exp_approx(a[j] - mx);
    ls[j % kLanes] += a[j];
  }
  float sum = ls[0];
  for (int64_t l = 1; l < kLanes; ++l) sum += ls[l];
  const float inv = 1.0f / sum;
  for (int64_t j = 0; j < n; ++j) a[j] *= inv;
  for (int64_t j = n; j < T; ++j) a[j] = 0.0f;
}

// The contract's backward on one row: d holds datt, becomes dS.
void softmax_backward_row_ref(const float* a, float* d, int64_t n, int64_t T, float scale) {
  float ls[kLanes] = {};
  for (int64_t j = 0; j < n; ++j) ls[j % kLanes] += d[j] * a[j];
  float r = ls[0];
  for (int64_t l = 1; l < kLanes; ++l) r += ls[l];
  for (int64_t j = 0; j < n; ++j) d[j] = (a[j] * (d[j] - r)) * scale;
  for (int64_t j = n; j < T; ++j) d[j] = 0.0f;
}

// Scores of a T x T matrix: visible keys uniform in [-6, 6] (wide enough that exp_approx's
// result varies), NaN past each row's visible keys.
Vec scores(int64_t T, bool causal, uint32_t seed) {
  Vec s = random_vec(T * T, seed, -6.0f, 6.0f);
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = visible(T, causal, i); j < T; ++j) s[static_cast<size_t>(i * T + j)] = NAN;
  return s;
}

cpu_attention::Plan plan(int64_t T, bool causal) {
  cpu_attention::Plan p;
  p.T = T;
  p.causal = causal;
  return p;
}

}  // namespace

TEST_CASE("attention softmax rows: the lanes' definition, bit for bit, at every row length",
          "[attention][cpu]") {
  for (const int64_t T : {1, 15, 16, 17, 40, 64, 65}) {
    for (const bool causal : {true, false}) {
      INFO("T = " << T << (causal ? ", causal" : ", full"));
      const Vec s = scores(T, causal, static_cast<uint32_t>(T));
      Vec want = s;
      for (int64_t i = 0; i < T; ++i)
        softmax_row_ref(want.data() + i * T, visible(T, causal, i), T);
      Vec got = s;
      // Two calls (rows [0, T/2) and [T/2, T)), as row blocks are run.
      cpu_attention::softmax_rows(plan(T, causal), got.data(), 0, T / 2);
      cpu_attention::softmax_rows(plan(T, causal), got.data(), T / 2, T);
      CHECK(same_bits(got, want));

      // Backward on those probabilities, datt from another sequence (NaN past the keys).
      const Vec datt = scores(T, causal, static_cast<uint32_t>(T) + 99u);
      const float scale = 0.17677669f;
      Vec want_ds = datt;
      for (int64_t i = 0; i < T; ++i)
        softmax_backward_row_ref(want.data() + i * T, want_ds.data() + i * T,
                                 visible(T, causal, i), T, scale);
      Vec got_ds = datt;
      cpu_attention::softmax_backward_rows(plan(T, causal), want.data(), got_ds.data(), 0, T,
                                           scale);
      CHECK(same_bits(got_ds, want_ds));
    }
  }
}
