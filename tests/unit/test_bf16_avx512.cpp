// The AVX-512 bf16 register helpers (kernels/cpu/bf16_avx512.h) round as f32_to_bf16 does,
// bit for bit: every sign, exponent and top mantissa bits (all 2^16 bf16 patterns) with low
// halves that hit each rounding case (exact, below, at and above the tie, odd and even
// kept bits), registers mixing subnormals, normals, infinities and NaNs (quiet and
// signalling), in order and shuffled. On a CPU without AVX512-BF16 (or a build without
// AVX-512) the case says SKIP.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "kernels/common/bf16.h"
#include "kernels/cpu/bf16_avx512.h"
#include "kernels/cpu/cpu_features.h"

using namespace noeira;

namespace {

#if defined(NOEIRA_BF16_AVX512)
// GCC 12 warns that an unmasked intrinsic's undefined pass-through vector (__Y) may be used
// uninitialised: without a mask it is never read, and the warning is the header's.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// out_pair, out_order: v rounded by store_pair (values 2j and 2j + 1 of each 32 from the
// even and odd registers) and by store_in_order; out_stored: stored(v). n a multiple of 32.
NOEIRA_BF16_TARGET void round_with_helpers(const float* v, size_t n, bf16_t* out_pair,
                                           bf16_t* out_order, float* out_stored) {
  for (size_t i = 0; i < n; i += 32) {
    alignas(64) float even[16], odd[16];
    for (int j = 0; j < 16; ++j) even[j] = v[i + 2 * j], odd[j] = v[i + 2 * j + 1];
    bf16x32::store_pair(out_pair + i, _mm512_load_ps(even), _mm512_load_ps(odd));
    const __m512 lo = _mm512_loadu_ps(v + i), hi = _mm512_loadu_ps(v + i + 16);
    bf16x32::store_in_order(out_order + i, lo, hi);
    _mm512_storeu_ps(out_stored + i, bf16x32::stored(lo));
    _mm512_storeu_ps(out_stored + i + 16, bf16x32::stored(hi));
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

}  // namespace

TEST_CASE("bf16 AVX-512 helpers: store_pair, store_in_order and stored round as f32_to_bf16, "
          "NaNs, infinities, zeros and subnormals included", "[image-ops]") {
#if defined(NOEIRA_BF16_AVX512)
  if (!cpu_has_avx512_bf16()) {
    WARN("SKIP: no AVX512-BF16 on this CPU");
    return;
  }
  const uint32_t lows[] = {0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff, 0x1234, 0xc000};
  std::vector<float> v;
  for (uint32_t hi = 0; hi < 0x10000; ++hi)
    for (uint32_t lo : lows) v.push_back(from_bits(hi << 16 | lo));
  // Also shuffled (a fixed stride), so registers mix every class.
  const size_t n = v.size();
  for (size_t i = 0; i < n; ++i) v.push_back(v[(i * 40503) % n]);
  std::vector<bf16_t> pair(v.size()), order(v.size());
  std::vector<float> stored(v.size());
  round_with_helpers(v.data(), v.size(), pair.data(), order.data(), stored.data());
  size_t bad_pair = 0, bad_order = 0, bad_stored = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const bf16_t want = f32_to_bf16(v[i]);
    bad_pair += pair[i] != want;
    bad_order += order[i] != want;
    bad_stored += bits_of(stored[i]) != bits_of(bf16_to_f32(want));
  }
  CHECK(bad_pair == 0);
  CHECK(bad_order == 0);
  CHECK(bad_stored == 0);
#else
  WARN("SKIP: no AVX-512 in this build");
#endif
}
