// Two double sums over `runs` runs of n values each, in kLaneSumLanes independent partials:
// value i of every run goes into lane i % kLaneSumLanes, runs in order; the lanes are added
// in lane order at the end. The order is a function of the shape alone, so results do not
// depend on the thread count; kernels/op_list.inc states it. LayerNorm sums a row (one run
// of C), gradient clipping a parameter's squares.
//
// One serial chain of double adds per sum (4 cycles each) was the cost of the CPU's
// normalisation loops; independent lanes vectorise (the partials are this function's
// locals, so they stay in registers), once `omp simd` says so: inside the OpenMP row loops
// GCC kept them as 8 scalar chains (a LayerNorm row of 128 values, 512 scalar operations;
// vit-tiny's forward 0.66 -> 0.39 ms, backward 1.34 -> 0.70). Same adds, same order.
// (BatchNorm keeps its own copy of the loop: through a nested lambda GCC vectorised it less
// well, 0.39 -> 0.52 ms per 2M bf16 values.)
#pragma once
#include <cstdint>

namespace noeira {

inline constexpr int kLaneSumLanes = 8;

struct LanePair {
  double a, b;
};

// term(r, i) -> LanePair for run r in [0, runs), value i in [0, n).
template <class Term>
inline LanePair lane_sums(int64_t runs, int64_t n, const Term& term) {
  double u[kLaneSumLanes] = {}, v[kLaneSumLanes] = {};
  for (int64_t r = 0; r < runs; ++r) {
    int64_t i = 0;
    for (; i + kLaneSumLanes <= n; i += kLaneSumLanes)
#pragma omp simd
      for (int l = 0; l < kLaneSumLanes; ++l) {
        const LanePair t = term(r, i + l);
        u[l] += t.a;
        v[l] += t.b;
      }
    for (; i < n; ++i) {
      const LanePair t = term(r, i);
      u[i % kLaneSumLanes] += t.a;
      v[i % kLaneSumLanes] += t.b;
    }
  }
  LanePair total{0.0, 0.0};
  for (int l = 0; l < kLaneSumLanes; ++l) {
    total.a += u[l];
    total.b += v[l];
  }
  return total;
}

// The squares of x[0, n) summed in double in lane_sums' order: gradient clipping's
// per-parameter sums (in element order they were one chain of dependent double adds:
// gpt-tiny's 804,096 gradients, 0.7 ms of a 49 ms step at one thread).
inline double lane_sum_squares(const float* x, int64_t n) {
  return lane_sums(1, n, [x](int64_t, int64_t i) {
           const double v = x[i];
           return LanePair{v * v, 0.0};
         }).a;
}

}  // namespace noeira
