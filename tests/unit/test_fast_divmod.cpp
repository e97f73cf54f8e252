// The CUDA kernels' 32-bit index math (kernels/common/fast_divmod.h) on the host, where its
// multiply-high is a 64-bit product: FastDivmod's quotients and remainders equal `/` and
// `%` exhaustively for the divisors and indices of real shapes, at the edges of its domain
// and on random pairs across it; Divider<I> decomposes indices as plain `/` and `%` do for
// both index types; use_index32 takes 32 bits exactly below 2^31 elements.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>

#include "kernels/common/fast_divmod.h"

using namespace noeira;

namespace {

constexpr uint32_t kMaxN = 0x7fffffffu;  // the domain: n, d < 2^31

// Counts the n in [lo, hi] (hi <= kMaxN) where d's FastDivmod is wrong (Catch per value is
// too slow for billions of checks).
int64_t wrong_in(const FastDivmod& f, uint32_t lo, uint32_t hi) {
  int64_t wrong = 0;
  for (uint64_t n = lo; n <= hi; ++n) {
    const uint32_t m = static_cast<uint32_t>(n);
    wrong += f.div(m) != m / f.divisor || f.mod(m) != m % f.divisor;
  }
  return wrong;
}

}  // namespace

TEST_CASE("FastDivmod equals / and % for every small divisor and index, and at the top",
          "[fast_divmod]") {
  // Shapes' divisors (C, T, S, heads, widths) up to 4096 over the first 2^14 indices and
  // the last 2^10 of the domain: 70 million quotients.
  int64_t wrong = 0;
  for (uint32_t d = 1; d <= 4096; ++d) {
    const FastDivmod f(d);
    wrong += wrong_in(f, 0, 1u << 14);
    wrong += wrong_in(f, kMaxN - (1u << 10), kMaxN);
  }
  CHECK(wrong == 0);
}

TEST_CASE("FastDivmod is exact at every multiple's edges and for divisors near 2^k",
          "[fast_divmod]") {
  int64_t wrong = 0;
  // Every divisor up to 2^16: n = kd - 1, kd, kd + 1 for k at the bottom and at the top.
  for (uint32_t d = 1; d <= (1u << 16); ++d) {
    const FastDivmod f(d);
    const uint64_t top = kMaxN / d;
    for (uint64_t k : {uint64_t{1}, uint64_t{2}, uint64_t{3}, top - 2, top - 1, top}) {
      if (k < 1 || k > top) continue;
      const uint64_t n = k * d;
      wrong += wrong_in(f, static_cast<uint32_t>(n - 1),
                        static_cast<uint32_t>(n + 1 <= kMaxN ? n + 1 : kMaxN));
    }
  }
  // Divisors 2^k - 1, 2^k, 2^k + 1 (where the shift and the magic change) and the largest.
  std::mt19937 g(1);
  std::uniform_int_distribution<uint32_t> any(0, kMaxN);
  for (int k = 0; k <= 31; ++k)
    for (int64_t delta : {-1, 0, 1}) {
      const int64_t d = (int64_t{1} << k) + delta;
      if (d < 1 || d > kMaxN) continue;
      const FastDivmod f(static_cast<uint32_t>(d));
      wrong += wrong_in(f, 0, 4096) + wrong_in(f, kMaxN - 4096, kMaxN);
      for (int i = 0; i < 20000; ++i) {
        const uint32_t n = any(g);
        wrong += wrong_in(f, n, n);
      }
    }
  // One divisor of each size class over a 2^24 stretch in the middle of the domain.
  for (uint32_t d : {3u, 7u, 384u, 641u, 50257u, 65521u, 1000003u, kMaxN}) {
    const FastDivmod f(d);
    wrong += wrong_in(f, (1u << 30) - (1u << 23), (1u << 30) + (1u << 23));
  }
  CHECK(wrong == 0);
}

TEST_CASE("FastDivmod equals / and % on random pairs across its domain", "[fast_divmod]") {
  std::mt19937 g(2);
  std::uniform_int_distribution<uint32_t> any(0, kMaxN);
  std::uniform_int_distribution<int> bits(0, 31);
  int64_t wrong = 0;
  for (int i = 0; i < 2000000; ++i) {
    // Divisors log-uniform in [1, 2^31): every magnitude gets its share.
    const uint32_t wide = 1u + (any(g) >> (31 - bits(g)));
    const uint32_t d = wide < kMaxN ? wide : kMaxN;
    const FastDivmod f(d);
    const uint32_t n = any(g);
    wrong += wrong_in(f, n, n);
  }
  CHECK(wrong == 0);
  CHECK(FastDivmod(0).div(12345) == 12345);  // 0 stands for 1 (never divided by)
}

TEST_CASE("Divider<I> decomposes flat indices as / and % do, for both index types",
          "[fast_divmod]") {
  // (B, T, nh, hd) = (3, 50, 6, 64): the attention head reshape's decomposition.
  const int64_t T = 50, nh = 6, hd = 64, n = 3 * T * nh * hd;
  const Divider<uint32_t> dh32(hd), dt32(T), dn32(nh);
  const Divider<int64_t> dh64(hd), dt64(T), dn64(nh);
  int64_t wrong = 0;
  for (int64_t e = 0; e < n; ++e) {
    const int64_t d = e % hd, t = (e / hd) % T, h = (e / hd / T) % nh, b = e / hd / T / nh;
    const uint32_t r32 = dh32.div(static_cast<uint32_t>(e));
    wrong += dh32.mod(static_cast<uint32_t>(e)) != d || dt32.mod(r32) != t ||
             dn32.mod(dt32.div(r32)) != h || dn32.div(dt32.div(r32)) != b;
    const int64_t r64 = dh64.div(e);
    wrong += dh64.mod(e) != d || dt64.mod(r64) != t || dn64.mod(dt64.div(r64)) != h ||
             dn64.div(dt64.div(r64)) != b;
  }
  CHECK(wrong == 0);
  CHECK(dh32.value() == 64u);
  CHECK(dh64.value() == 64);
}

TEST_CASE("Divider<uint32_t> with a divisor above every index: quotient 0, remainder n",
          "[fast_divmod]") {
  // A dimension not bounded by the loop's n (a stride, or T with fewer rows): divisors past
  // 2^31 are held as 2^31, where FastDivmod is still exact over the whole 31-bit domain.
  for (const int64_t d : {int64_t{1} << 31, (int64_t{1} << 31) + 1, int64_t{1} << 32,
                          (int64_t{1} << 32) - 2, int64_t{1} << 40}) {
    INFO("d = " << d);
    const Divider<uint32_t> div(d);
    CHECK(div.value() == (uint32_t{1} << 31));
    for (const uint32_t n : {0u, 1u, 12345u, (1u << 30) + 7u, uint32_t{INT32_MAX}}) {
      uint32_t rem = 0;
      CHECK(div.divmod(n, rem) == 0u);
      CHECK(rem == n);
      CHECK(div.mod(n) == n);
    }
  }
}

TEST_CASE("use_index32 takes 32-bit indices exactly below 2^31 elements", "[fast_divmod]") {
  CHECK(use_index32(0));
  CHECK(use_index32(1));
  CHECK(use_index32(INT32_MAX));
  CHECK_FALSE(use_index32(int64_t{INT32_MAX} + 1));
  CHECK_FALSE(use_index32(int64_t{1} << 40));
  CHECK_FALSE(use_index32(-1));
}
