#include "kernels/cpu/bf16_conv3x3_wgrad.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "kernels/cpu/bf16_conv3x3_wgrad_amx.h"
#include "kernels/cpu/channel_blocks.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/onednn_engine.h"

#if defined(__AVX512BW__)
#include <immintrin.h>
#define NOEIRA_BF16_WGRAD_BUILT 1
#endif

namespace noeira {

namespace {

constexpr int64_t kLanes = 16;  // output channels per register
using onednn::align_up;           // the conv workspace's cache-line rounding

// Images per chunk: the slab is walked a chunk at a time, each chunk's bordered x and
// paired dy (about kChunkBytes) staying in L2 while every channel block reads them. Whole
// slabs (up to 1.3 MiB at ResNet-20's 8x8 shape) went to L3 once per block: 20% slower.
constexpr size_t kChunkBytes = 160 * 1024;

// The area: the chunk's bordered x (chunk, Cin, H + 2, W + 2) and paired dy (chunk, Cout / 16,
// H * W / 2, 16), then the accumulators between chunks (Cout / 16, Cin, 9, 16) fp32.
struct Area {
  int64_t Hp, Wp, chunk;
  size_t x_bytes, dy_bytes, acc_bytes;
  Area(const ConvShape& s, int64_t images) : Hp(s.height + 2), Wp(s.width + 2) {
    const size_t x_image = static_cast<size_t>(s.in_channels * Hp * Wp) * sizeof(bf16_t);
    const size_t dy_image =
        static_cast<size_t>(s.out_channels * s.height * s.width) * sizeof(bf16_t);
    chunk = std::clamp<int64_t>(static_cast<int64_t>(kChunkBytes / (x_image + dy_image)), 1,
                                std::max<int64_t>(images, 1));
    x_bytes = align_up(x_image * static_cast<size_t>(chunk));
    dy_bytes = align_up(dy_image * static_cast<size_t>(chunk));
    acc_bytes = static_cast<size_t>(s.out_channels * s.in_channels * 9) * sizeof(float);
  }
  size_t bytes() const { return x_bytes + dy_bytes + acc_bytes; }
};

#if defined(NOEIRA_BF16_WGRAD_BUILT)

// x (images, Cin, H, W) -> xp (images, Cin, H + 2, W + 2) with a zero border, so every tap
// of every output column reads memory, the padding as zeros.
void bordered_copy(const ConvShape& s, int64_t images, const bf16_t* x, bf16_t* xp,
                   const Area& a) {
  const int64_t H = s.height, W = s.width;
  for (int64_t m = 0; m < images * s.in_channels; ++m) {
    const bf16_t* src = x + m * H * W;
    bf16_t* dst = xp + m * a.Hp * a.Wp;
    std::memset(dst, 0, static_cast<size_t>(a.Wp) * sizeof(bf16_t));
    for (int64_t i = 0; i < H; ++i) {
      bf16_t* row = dst + (i + 1) * a.Wp;
      row[0] = 0;
      std::memcpy(row + 1, src + i * W, static_cast<size_t>(W) * sizeof(bf16_t));
      row[W + 1] = 0;
    }
    std::memset(dst + (H + 1) * a.Wp, 0, static_cast<size_t>(a.Wp) * sizeof(bf16_t));
  }
}

// The sums of kCi input channels from c0 (9 taps each) for the 16 output channels of block
// ob, over a chunk of images: one accumulator per (channel, tap), in registers for the
// chunk, continued from `acc` (first chunk: from zero) and stored back there. Each step reads
// one register of dy, columns j and j + 1 of the 16 channels interleaved, and for every
// accumulator the pair x[c][i + p - 1][j + q - 1 .. j + q] broadcast: vdpbf16ps adds both
// products to the lane.
// GCC 12 warns that _mm512_broadcastd_epi32's "undefined" pass-through vector may be used
// uninitialised: it is not (no mask), and the warning is the header's.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
template <int kCi>
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void channel_block_sums(
    const ConvShape& s, int64_t images, const bf16_t* xp, const uint32_t* dy_pairs,
    const Area& a, int64_t ob, int64_t c0, bool first, float* acc_store) {
  const int64_t H = s.height, half_w = s.width / 2, Cin = s.in_channels;
  const int64_t blocks = s.out_channels / kLanes;
  float* store = acc_store + (ob * Cin + c0) * 9 * kLanes;
  __m512 acc[kCi * 9];
  for (int k = 0; k < kCi * 9; ++k)
    acc[k] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(store + k * kLanes);
  for (int64_t b = 0; b < images; ++b)
    for (int64_t i = 0; i < H; ++i) {
      const uint32_t* d = dy_pairs + ((b * blocks + ob) * H + i) * half_w * kLanes;
      const bf16_t* rows[kCi];  // x row i - 1 of each channel (bordered row i)
      for (int c = 0; c < kCi; ++c) rows[c] = xp + ((b * Cin + c0 + c) * a.Hp + i) * a.Wp;
      for (int64_t j = 0; j < half_w; ++j) {
        const __m512bh dv = (__m512bh)_mm512_loadu_si512(d + j * kLanes);
#pragma GCC unroll 18
        for (int k = 0; k < kCi * 9; ++k) {
          const int c = k / 9, p = (k % 9) / 3, q = k % 3;
          // A vector load: from a scalar one GCC kept the pair of tap q = 2 in a general
          // register for the next column's q = 0, and broadcasting from there ran the loop
          // at 0.87x of this speed on Zen 4.
          const __m512i pair =
              _mm512_broadcastd_epi32(_mm_loadu_si32(rows[c] + p * a.Wp + 2 * j + q));
          acc[k] = _mm512_dpbf16_ps(acc[k], dv, (__m512bh)pair);
        }
      }
    }
  for (int k = 0; k < kCi * 9; ++k) _mm512_storeu_ps(store + k * kLanes, acc[k]);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif  // NOEIRA_BF16_WGRAD_BUILT

// NOEIRA_BF16_WGRAD: "0" off (oneDNN's kernel: A/B timing, bits of older builds), "1" the
// AVX512-BF16 kernel on every shape ours takes, "noamx" that kernel on Cin < 16 only and
// oneDNN's on the rest (the split of builds before the AMX kernel), anything else (or
// unset) our kernels where they are the faster ones.
std::string_view wgrad_env() {
  const char* v = std::getenv("NOEIRA_BF16_WGRAD");
  return v != nullptr ? std::string_view(v) : std::string_view();
}

}  // namespace

bool bf16_wgrad_available() {
#if defined(NOEIRA_BF16_WGRAD_BUILT)
  if (wgrad_env() == "0") return false;
  return cpu_has_avx512_bf16();
#else
  return false;
#endif
}

Bf16WgradScope bf16_wgrad_scope() {
  if (!bf16_wgrad_available()) return Bf16WgradScope::kNone;
  if (wgrad_env() == "1") return Bf16WgradScope::kAll;
  if (!onednn::runs_amx()) return Bf16WgradScope::kAll;
  if (wgrad_env() == "noamx" || !amx_wgrad_available())
    return Bf16WgradScope::kFewInputChannels;
  return Bf16WgradScope::kAmxTiles;
}

const char* bf16_wgrad_scope_name(Bf16WgradScope scope) {
  switch (scope) {
    case Bf16WgradScope::kNone: return "none";
    case Bf16WgradScope::kAll: return "all";
    case Bf16WgradScope::kFewInputChannels: return "cin<16";
    case Bf16WgradScope::kAmxTiles: return "amx";
  }
  return "none";
}

bool bf16_wgrad_applies(const ConvShape& s, DType dtype) {
  const Bf16WgradScope scope = bf16_wgrad_scope();
  if (scope == Bf16WgradScope::kNone) return false;
  if (scope == Bf16WgradScope::kFewInputChannels && s.in_channels >= kLanes) return false;
  if (scope == Bf16WgradScope::kAmxTiles && s.in_channels >= kLanes && !amx_wgrad_takes(s))
    return false;
  return dtype == DType::kBF16 && s.kernel_h == 3 && s.kernel_w == 3 && s.stride == 1 &&
         s.pad == 1 && !s.has_bias && s.out_channels % kLanes == 0 && s.width % 2 == 0;
}

bool bf16_wgrad_on_tiles(const ConvShape& s) {
  return bf16_wgrad_scope() == Bf16WgradScope::kAmxTiles && amx_wgrad_takes(s);
}

size_t bf16_wgrad_area_bytes(const ConvShape& s, int64_t images, bool on_tiles) {
  return on_tiles ? amx_wgrad_area_bytes(s, images) : Area(s, images).bytes();
}

void bf16_wgrad_slab(const ConvShape& s, int64_t images, const bf16_t* x, const bf16_t* dy,
                     float* dw, std::byte* area, bool on_tiles) {
#if defined(NOEIRA_BF16_WGRAD_BUILT)
  if (on_tiles) return amx_wgrad_slab(s, images, x, dy, dw, area);
  const Area a(s, images);
  auto* xp = reinterpret_cast<bf16_t*>(area);
  auto* dy_pairs = reinterpret_cast<uint32_t*>(area + a.x_bytes);
  auto* acc = reinterpret_cast<float*>(area + a.x_bytes + a.dy_bytes);  // (Cout/16, Cin, 9, 16)
  const int64_t Cin = s.in_channels, Cout = s.out_channels, HW = s.height * s.width;
  for (int64_t b0 = 0; b0 < images; b0 += a.chunk) {
    const int64_t n = std::min(a.chunk, images - b0);
    bordered_copy(s, n, x + b0 * Cin * HW, xp, a);
    // dy (n, Cout, H * W) as 32-bit column pairs (n, Cout, H * W / 2) -> blocks of 16
    // channels with a pair's 16 channels adjacent: the channel-block copy of 4-byte elements.
    nchw_to_channel_blocks(dy + b0 * Cout * HW, dy_pairs, n, Cout, HW / 2, sizeof(uint32_t));
    for (int64_t ob = 0; ob < Cout / kLanes; ++ob) {
      int64_t c = 0;
      for (; c + 2 <= Cin; c += 2)
        channel_block_sums<2>(s, n, xp, dy_pairs, a, ob, c, b0 == 0, acc);
      if (c < Cin) channel_block_sums<1>(s, n, xp, dy_pairs, a, ob, c, b0 == 0, acc);
    }
  }
  // (Cout / 16, Cin, 9, 16 lanes) -> dw (Cout, Cin, 3, 3).
  for (int64_t ob = 0; ob < Cout / kLanes; ++ob)
    for (int64_t c = 0; c < Cin; ++c)
      for (int64_t tap = 0; tap < 9; ++tap)
        for (int64_t l = 0; l < kLanes; ++l)
          dw[((ob * kLanes + l) * Cin + c) * 9 + tap] =
              acc[((ob * Cin + c) * 9 + tap) * kLanes + l];
#else
  (void)s, (void)images, (void)x, (void)dy, (void)dw, (void)area, (void)on_tiles;
#endif
}

}  // namespace noeira
