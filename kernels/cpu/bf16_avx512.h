// bf16 in AVX-512 registers, for the CPU kernels that compute in fp32 and store bf16
// (batchnorm_bf16.cpp, bf16_conv3x3_rows.cpp): 32 values widened as even and odd elements,
// and 32 fp32 values rounded to bf16 with f32_to_bf16's bits (kernels/common/bf16.h). Only
// in a build with AVX-512 F/BW/DQ (x86-64-v4); a function that calls these carries
// NOEIRA_BF16_TARGET (they use AVX512-BF16) and runs where cpu_has_avx512_bf16().
#pragma once

#if defined(__AVX512BW__) && defined(__AVX512DQ__)
#include <immintrin.h>

#include <cstdint>

#include "kernels/common/bf16.h"

#define NOEIRA_BF16_AVX512 1
#define NOEIRA_BF16_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")))
#define NOEIRA_BF16_INLINE NOEIRA_BF16_TARGET inline __attribute__((always_inline))
// A lambda's attributes (a lambda does not inherit its enclosing function's target).
#define NOEIRA_BF16_LAMBDA \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16"), always_inline))

namespace noeira::bf16x32 {

// 32 bf16 values from p as fp32: values 2j in `even`, 2j + 1 in `odd`, lane j (a shift and
// a mask; widening in order takes cross-lane moves).
struct Pair {
  __m512 even, odd;
};
NOEIRA_BF16_INLINE Pair load_pair(const bf16_t* p) {
  const __m512i r = _mm512_loadu_si512(p);
  return {_mm512_castsi512_ps(_mm512_slli_epi32(r, 16)),
          _mm512_castsi512_ps(
              _mm512_and_si512(r, _mm512_set1_epi32(static_cast<int>(0xffff0000u))))};
}

// f32_to_bf16's steps on each lane before its shift: the bf16 in the top 16 bits.
NOEIRA_BF16_INLINE __m512i rounded_bits(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(
      _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
  return _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x00400000));
}

// stored_as<bf16_t>: v rounded to bf16 and widened back.
NOEIRA_BF16_INLINE __m512 stored(__m512 v) {
  return _mm512_castsi512_ps(
      _mm512_and_si512(rounded_bits(v), _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
}

// Whether neither register holds an fp32 subnormal. vcvtne2ps2bf16 rounds to nearest even
// and quiets NaNs as f32_to_bf16 does, but takes a subnormal input to a zero: registers with
// one take the integer steps instead.
NOEIRA_BF16_INLINE bool no_subnormal(__m512 a, __m512 b) {
  constexpr int kSubnormal = 0x20;  // vfpclassps category
  return _kortestz_mask16_u8(_mm512_fpclass_ps_mask(a, kSubnormal),
                             _mm512_fpclass_ps_mask(b, kSubnormal)) != 0;
}

// p[0..15] = lo, p[16..31] = hi, each rounded as f32_to_bf16. (vdpbf16ps sums, the row
// kernels' outputs, are never subnormal: there the integer steps are a safety net.)
NOEIRA_BF16_INLINE void store_in_order(bf16_t* p, __m512 lo, __m512 hi) {
  __m512i out;
  if (no_subnormal(lo, hi)) {
    out = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));  // lo's words, then hi's
  } else {
    const __m256i l = _mm512_cvtepi32_epi16(_mm512_srli_epi32(rounded_bits(lo), 16));
    const __m256i h = _mm512_cvtepi32_epi16(_mm512_srli_epi32(rounded_bits(hi), 16));
    out = _mm512_inserti64x4(_mm512_castsi256_si512(l), h, 1);
  }
  _mm512_storeu_si512(p, out);
}

// p[2j] = even[j], p[2j + 1] = odd[j], each rounded as f32_to_bf16 (load_pair's inverse).
NOEIRA_BF16_INLINE void store_pair(bf16_t* p, __m512 even, __m512 odd) {
  __m512i out;
  if (no_subnormal(even, odd)) {
    const __m512i words = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(odd, even));
    const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25,
                                           9, 24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2,
                                           17, 1, 16, 0);
    out = _mm512_permutexvar_epi16(order, words);
  } else {  // (odd's top half) | (even's top half >> 16)
    out = _mm512_ternarylogic_epi32(rounded_bits(odd), _mm512_srli_epi32(rounded_bits(even), 16),
                                    _mm512_set1_epi32(static_cast<int>(0xffff0000u)), 0xE4);
  }
  _mm512_storeu_si512(p, out);
}

}  // namespace noeira::bf16x32

#endif
