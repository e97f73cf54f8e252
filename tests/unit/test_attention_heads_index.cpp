// The head layout's index math of CUDA's GEMM-path attention (kernels/common/attention.h,
// run by attention_heads.cu's to_heads / from_heads kernels in the index type with_index
// picks from parts * part_stride) against plain int64 arithmetic: for every element of
// small shapes (T and hd tails, hd 1, one and three parts, packed parts and the bf16 /
// fp32 paths' 256-byte part gaps) in both index types, and at sampled elements of shapes
// whose indices reach the top of the 32-bit domain.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/common/attention.h"
#include "kernels/common/fast_divmod.h"

using namespace noeira;

namespace {

struct Shape {
  int64_t B, T, C, nh;
};

// Element e of the packed (parts, B, nh, T, hd) order, decomposed with plain `/` and `%`:
// its index in (B, T, parts * C) and where a heads buffer with parts `ps` apart holds it.
struct Ref {
  int64_t seq, stored;
};
Ref ref_of(const Shape& s, int parts, int64_t ps, int64_t e) {
  const int64_t hd = s.C / s.nh;
  const int64_t d = e % hd, t = e / hd % s.T, h = e / hd / s.T % s.nh,
                b = e / hd / s.T / s.nh % s.B, part = e / hd / s.T / s.nh / s.B;
  return {(b * s.T + t) * parts * s.C + part * s.C + h * hd + d,
          part * ps + ((b * s.nh + h) * s.T + t) * hd + d};
}

// Mismatches of both directions of the index math at element e, in index type I.
template <class I>
int64_t wrong_at(const attention::HeadsGeom<I>& g, const Ref& want, int64_t e) {
  I stored = 0;
  const I seq = attention::seq_index_of_head(g, static_cast<I>(e), stored);
  return (static_cast<int64_t>(seq) != want.seq) + (static_cast<int64_t>(stored) != want.stored) +
         (static_cast<int64_t>(attention::head_index_of_seq(g, static_cast<I>(want.seq))) !=
          want.stored);
}

}  // namespace

TEST_CASE("attention heads: the layout's index math is a bijection part by part, both index "
          "types, packed and with aligned part gaps",
          "[seq-ops]") {
  // T under and over a warp and not a multiple of 8, hd 12 and 1, a vit-like shape.
  const Shape shapes[] = {{2, 37, 48, 4}, {3, 5, 3, 3}, {1, 65, 128, 4}, {2, 8, 12, 3}};
  for (const Shape& s : shapes)
    for (const int parts : {1, 3}) {
      const int64_t btc = s.B * s.T * s.C, n = parts * btc;
      // Packed (to_heads' fp32 heads, the dout heads), bf16 parts on 256 bytes (qkv), fp32
      // parts on 256 bytes (the output heads).
      for (const int64_t ps : {btc, attention::aligned_part_stride(btc, 2, 256),
                               attention::aligned_part_stride(btc, 4, 256)}) {
        INFO("B " << s.B << " T " << s.T << " C " << s.C << " nh " << s.nh << " parts "
                  << parts << " part stride " << ps);
        REQUIRE(ps >= btc);
        const auto g32 = attention::heads_geom<uint32_t>(parts, s.B, s.T, s.C, s.nh, ps);
        const auto g64 = attention::heads_geom<int64_t>(parts, s.B, s.T, s.C, s.nh, ps);
        CHECK(static_cast<int64_t>(g32.n) == n);
        std::vector<int> seq_hits(static_cast<size_t>(n), 0);
        std::vector<int> stored_hits(static_cast<size_t>(parts * ps), 0);
        int64_t wrong = 0, outside = 0;
        for (int64_t e = 0; e < n; ++e) {
          const Ref r = ref_of(s, parts, ps, e);
          wrong += wrong_at(g32, r, e) + wrong_at(g64, r, e);
          ++seq_hits[static_cast<size_t>(r.seq)];
          ++stored_hits[static_cast<size_t>(r.stored)];
          // Inside its own part, never in the gap after it.
          const int64_t part = e / btc;
          outside += r.stored < part * ps || r.stored >= part * ps + btc;
        }
        CHECK(wrong == 0);
        CHECK(outside == 0);
        bool each_once = true;
        for (const int h : seq_hits) each_once &= h == 1;
        for (int64_t i = 0; i < parts * ps; ++i)
          each_once &= stored_hits[static_cast<size_t>(i)] == (i % ps < btc ? 1 : 0);
        CHECK(each_once);
      }
    }
}

TEST_CASE("attention heads: 32-bit index math at the top of its domain; the launchers' "
          "choice counts the part gaps",
          "[seq-ops]") {
  // gpt-2-small-like heads at T 2048: 3 parts of 715,653,120 elements, the largest index
  // 2^31 - 524,288 (bf16 parts need no gap: B T C is a multiple of 128).
  {
    const Shape s{455, 2048, 768, 12};
    const int parts = 3;
    const int64_t btc = s.B * s.T * s.C;
    const int64_t ps = attention::aligned_part_stride(btc, 2, 256);
    REQUIRE(use_index32(parts * ps));
    const auto g32 = attention::heads_geom<uint32_t>(parts, s.B, s.T, s.C, s.nh, ps);
    const auto g64 = attention::heads_geom<int64_t>(parts, s.B, s.T, s.C, s.nh, ps);
    const int64_t n = parts * btc;
    std::vector<int64_t> es;
    // Both ends of every part and of the last sequence of each, and random elements.
    for (int64_t part = 0; part < parts; ++part)
      for (const int64_t e : {part * btc, part * btc + 1, (part + 1) * btc - 1,
                              (part + 1) * btc - s.T * s.C, (part + 1) * btc - s.T * s.C - 1})
        es.push_back(e);
    std::mt19937_64 gen(11);
    std::uniform_int_distribution<int64_t> any(0, n - 1);
    for (int i = 0; i < 200000; ++i) es.push_back(any(gen));
    int64_t wrong = 0;
    for (const int64_t e : es) {
      const Ref r = ref_of(s, parts, ps, e);
      wrong += wrong_at(g32, r, e) + wrong_at(g64, r, e);
    }
    CHECK(wrong == 0);
  }
  // Where the packed elements fit 31 bits but the gapped parts do not: the launchers pick
  // the index type from parts * part_stride (every stored index lies below it), not from
  // the element count, so this shape takes int64_t, whose math is checked here.
  {
    const Shape s{1, 1, 715827842, 2};  // B T C = 715,827,842; the bf16 stride rounds up
    const int parts = 3;
    const int64_t btc = s.B * s.T * s.C;
    const int64_t ps = attention::aligned_part_stride(btc, 2, 256);
    CHECK(use_index32(parts * btc));
    CHECK_FALSE(use_index32(parts * ps));
    const auto g64 = attention::heads_geom<int64_t>(parts, s.B, s.T, s.C, s.nh, ps);
    int64_t wrong = 0;
    for (const int64_t e : {int64_t{0}, btc - 1, btc, 2 * btc - 1, 2 * btc, 3 * btc - 1})
      wrong += wrong_at(g64, ref_of(s, parts, ps, e), e);
    CHECK(wrong == 0);
    CHECK(ref_of(s, parts, ps, 3 * btc - 1).stored > INT32_MAX);
  }
}
