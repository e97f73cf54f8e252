#include "kernels/cpu/batchnorm_bf16.h"

#include "kernels/cpu/batchnorm_sums.h"
#include "kernels/cpu/bf16_avx512.h"
#include "kernels/cpu/cpu_features.h"

namespace noeira::cpu_batchnorm {

static_assert(kSpanLanes == 32 && kStage == 256,
              "the loops hold a run's 32 span lanes in two registers, 8 per block");

// The loops' lane order: a[0..15] the even lanes 0, 2, .., 30 (value 2j of a 32-value step
// in lane j of the even register), a[16..31] the odd lanes 1, 3, .., 31.
ChannelSums Bf16Lanes::total() const {
  ChannelSums r{0.0, 0.0};
  for (int l = 0; l < 32; ++l) {
    const int k = (l % 2 != 0 ? 16 : 0) + l / 2;
    r.a += a[k];
    r.b += b[k];
  }
  return r;
}

#if defined(NOEIRA_BF16_AVX512)

bool bf16_loops_available() { return cpu_has_avx512_bf16(); }

// GCC 12 warns that an unmasked intrinsic's undefined pass-through vector (__Y) may be used
// uninitialised: without a mask it is never read, and the warning is the header's.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace {

using namespace bf16x32;

// A run's double lanes in registers, in Bf16Lanes' order.
struct Acc {
  __m512d a0, a1, a2, a3, b0, b1, b2, b3;
};
NOEIRA_BF16_INLINE Acc load_acc(const Bf16Lanes& l) {
  return {_mm512_load_pd(l.a),      _mm512_load_pd(l.a + 8), _mm512_load_pd(l.a + 16),
          _mm512_load_pd(l.a + 24), _mm512_load_pd(l.b),     _mm512_load_pd(l.b + 8),
          _mm512_load_pd(l.b + 16), _mm512_load_pd(l.b + 24)};
}
NOEIRA_BF16_INLINE void store_acc(const Acc& c, Bf16Lanes& l) {
  _mm512_store_pd(l.a, c.a0);
  _mm512_store_pd(l.a + 8, c.a1);
  _mm512_store_pd(l.a + 16, c.a2);
  _mm512_store_pd(l.a + 24, c.a3);
  _mm512_store_pd(l.b, c.b0);
  _mm512_store_pd(l.b + 8, c.b1);
  _mm512_store_pd(l.b + 16, c.b2);
  _mm512_store_pd(l.b + 24, c.b3);
}
NOEIRA_BF16_INLINE __m512d low_pd(__m512 f) { return _mm512_cvtps_pd(_mm512_castps512_ps256(f)); }
NOEIRA_BF16_INLINE __m512d high_pd(__m512 f) {
  return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f), 1)));
}

// One span block's fp32 lanes: sums a and b, even and odd lanes.
struct Span {
  __m512 ae = _mm512_setzero_ps(), ao = _mm512_setzero_ps();
  __m512 be = _mm512_setzero_ps(), bo = _mm512_setzero_ps();
};
// A block's 32 terms (a, b) of one step added into its span.
NOEIRA_BF16_INLINE void add_terms(Span& s, const Pair& a, const Pair& b) {
  s.ae = _mm512_add_ps(s.ae, a.even);
  s.ao = _mm512_add_ps(s.ao, a.odd);
  s.be = _mm512_add_ps(s.be, b.even);
  s.bo = _mm512_add_ps(s.bo, b.odd);
}
// The block's span into the double lanes (chunk_sums: lu[l] += double(fu[l])).
NOEIRA_BF16_INLINE void flush(Acc& c, const Span& s) {
  c.a0 = _mm512_add_pd(c.a0, low_pd(s.ae));
  c.a1 = _mm512_add_pd(c.a1, high_pd(s.ae));
  c.a2 = _mm512_add_pd(c.a2, low_pd(s.ao));
  c.a3 = _mm512_add_pd(c.a3, high_pd(s.ao));
  c.b0 = _mm512_add_pd(c.b0, low_pd(s.be));
  c.b1 = _mm512_add_pd(c.b1, high_pd(s.be));
  c.b2 = _mm512_add_pd(c.b2, low_pd(s.bo));
  c.b3 = _mm512_add_pd(c.b3, high_pd(s.bo));
}

// The run's blocks of kStage values, two side by side (a span starts at zero each block,
// so the second's chain need not wait for the first's; flushed in block order), then the
// last one or two. add_step(span, i) adds the terms of values i .. i + 31 into the span
// (into it, not returned: GCC kept returned registers on the stack).
template <class AddStep>
NOEIRA_BF16_INLINE void run_spans(int64_t S, Acc& c, const AddStep& add_step) {
  int64_t i0 = 0;
  for (; i0 + 2 * kStage <= S; i0 += 2 * kStage) {
    Span s0, s1;
    for (int64_t i = 0; i < kStage; i += 32) {
      add_step(s0, i0 + i);
      add_step(s1, i0 + kStage + i);
    }
    flush(c, s0);
    flush(c, s1);
  }
  for (; i0 < S; i0 += kStage) {
    const int64_t n = S - i0 < kStage ? S - i0 : kStage;
    Span s;
    for (int64_t i = 0; i < n; i += 32) add_step(s, i0 + i);
    flush(c, s);
  }
}

NOEIRA_BF16_INLINE Pair mul(const Pair& p, const Pair& q) {
  return {_mm512_mul_ps(p.even, q.even), _mm512_mul_ps(p.odd, q.odd)};
}

// The channel's constants in registers.
struct Coeffs {
  __m512 mean, invstd, gamma, beta;
  NOEIRA_BF16_INLINE explicit Coeffs(const Bf16Norm& n)
      : mean(_mm512_set1_ps(n.mean)),
        invstd(_mm512_set1_ps(n.invstd)),
        gamma(_mm512_set1_ps(n.gamma)),
        beta(_mm512_set1_ps(n.beta)) {}
  // batchnorm_xhat: (x - mean) * invstd
  NOEIRA_BF16_INLINE __m512 xhat(__m512 x) const {
    return _mm512_mul_ps(_mm512_sub_ps(x, mean), invstd);
  }
  // batchnorm_apply from xhat: xhat * gamma + beta (two roundings, as the scalar form)
  NOEIRA_BF16_INLINE __m512 apply(__m512 xh) const {
    return _mm512_add_ps(_mm512_mul_ps(xh, gamma), beta);
  }
  // dy times batchnorm_relu_grad<bf16_t>: 1 where the forward's output stored positive
  // (stores_positive: v > 2^-134; false for a NaN), else 0; a multiply, as grad_at, so a
  // NaN or infinite dy behind a zero factor gives NaN there too.
  NOEIRA_BF16_INLINE __m512 relu_masked(__m512 dy, __m512 xh) const {
    const __mmask16 pos =
        _mm512_cmp_ps_mask(apply(xh), _mm512_set1_ps(0x1p-134f), _CMP_GT_OQ);
    return _mm512_mul_ps(dy, _mm512_maskz_mov_ps(pos, _mm512_set1_ps(1.0f)));
  }
};

template <bool kResidual, bool kRelu>
NOEIRA_BF16_TARGET void forward_impl(const bf16_t* x, const bf16_t* residual, int64_t S,
                                   const Bf16Norm& n, bf16_t* y) {
  const Coeffs k(n);
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t i = 0; i < S; i += 32) {
    const Pair v = load_pair(x + i);
    __m512 e = k.apply(k.xhat(v.even)), o = k.apply(k.xhat(v.odd));
    if constexpr (kResidual) {  // batchnorm_epilogue: stored_as<bf16>(y) + r
      const Pair r = load_pair(residual + i);
      e = _mm512_add_ps(stored(e), r.even);
      o = _mm512_add_ps(stored(o), r.odd);
    }
    if constexpr (kRelu) {  // max(v, 0) is v > 0 ? v : 0 (0 for a NaN)
      e = _mm512_max_ps(e, zero);
      o = _mm512_max_ps(o, zero);
    }
    store_pair(y + i, e, o);
  }
}

template <bool kRelu>
NOEIRA_BF16_TARGET void grad_sums_impl(const bf16_t* dy, const bf16_t* x, int64_t S,
                                     const Bf16Norm& n, Bf16Lanes& lanes) {
  const Coeffs k(n);
  Acc c = load_acc(lanes);
  run_spans(S, c, [&](Span& s, int64_t i) NOEIRA_BF16_LAMBDA {
    const Pair d = load_pair(dy + i), v = load_pair(x + i);
    const Pair xh{k.xhat(v.even), k.xhat(v.odd)};
    Pair g = d;
    if constexpr (kRelu) g = Pair{k.relu_masked(d.even, xh.even), k.relu_masked(d.odd, xh.odd)};
    add_terms(s, g, mul(g, xh));
  });
  store_acc(c, lanes);
}

template <bool kRelu>
NOEIRA_BF16_TARGET void dx_impl(const bf16_t* dy, const bf16_t* x, int64_t S, const Bf16Norm& n,
                              float gamma_invstd, GradMeans m, bf16_t* dx) {
  const Coeffs k(n);
  const __m512 scale = _mm512_set1_ps(gamma_invstd), mdy = _mm512_set1_ps(m.dy),
               mdx = _mm512_set1_ps(m.dy_xhat);
  // batchnorm_dx: gamma * invstd * (dy - mean_dy - xhat * mean_dy_xhat)
  const auto dx_of = [&](__m512 d, __m512 xh) NOEIRA_BF16_LAMBDA {
    if constexpr (kRelu) d = k.relu_masked(d, xh);
    return _mm512_mul_ps(scale, _mm512_sub_ps(_mm512_sub_ps(d, mdy), _mm512_mul_ps(xh, mdx)));
  };
  for (int64_t i = 0; i < S; i += 32) {
    const Pair d = load_pair(dy + i), v = load_pair(x + i);
    store_pair(dx + i, dx_of(d.even, k.xhat(v.even)), dx_of(d.odd, k.xhat(v.odd)));
  }
}

}  // namespace

NOEIRA_BF16_TARGET void bf16_run_sums(const bf16_t* x, int64_t S, Bf16Lanes& lanes) {
  Acc c = load_acc(lanes);
  run_spans(S, c, [&](Span& s, int64_t i) NOEIRA_BF16_LAMBDA {
    const Pair v = load_pair(x + i);
    add_terms(s, v, mul(v, v));
  });
  store_acc(c, lanes);
}

void bf16_run_forward(const bf16_t* x, const bf16_t* residual, bool relu, int64_t S,
                      const Bf16Norm& n, bf16_t* y) {
  if (residual != nullptr) {
    if (relu) forward_impl<true, true>(x, residual, S, n, y);
    else forward_impl<true, false>(x, residual, S, n, y);
  } else {
    if (relu) forward_impl<false, true>(x, residual, S, n, y);
    else forward_impl<false, false>(x, residual, S, n, y);
  }
}

void bf16_run_grad_sums(const bf16_t* dy, const bf16_t* x, bool relu, int64_t S,
                        const Bf16Norm& n, Bf16Lanes& lanes) {
  if (relu) grad_sums_impl<true>(dy, x, S, n, lanes);
  else grad_sums_impl<false>(dy, x, S, n, lanes);
}

void bf16_run_dx(const bf16_t* dy, const bf16_t* x, bool relu, int64_t S, const Bf16Norm& n,
                 float gamma_invstd, GradMeans m, bf16_t* dx) {
  if (relu) dx_impl<true>(dy, x, S, n, gamma_invstd, m, dx);
  else dx_impl<false>(dy, x, S, n, gamma_invstd, m, dx);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#else  // no AVX-512 in this build: batchnorm.cpp keeps its generic loops

bool bf16_loops_available() { return false; }
void bf16_run_sums(const bf16_t*, int64_t, Bf16Lanes&) {}
void bf16_run_forward(const bf16_t*, const bf16_t*, bool, int64_t, const Bf16Norm&, bf16_t*) {}
void bf16_run_grad_sums(const bf16_t*, const bf16_t*, bool, int64_t, const Bf16Norm&,
                        Bf16Lanes&) {}
void bf16_run_dx(const bf16_t*, const bf16_t*, bool, int64_t, const Bf16Norm&, float, GradMeans,
                 bf16_t*) {}

#endif

}  // namespace noeira::cpu_batchnorm
