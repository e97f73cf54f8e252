#include "kernels/cpu/bf16_conv3x3_rows.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "kernels/cpu/bf16_avx512.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/onednn_engine.h"

namespace noeira {

namespace {

constexpr int64_t kWidth = 32;  // pixels per row: two registers
constexpr int64_t kBlock = 4;   // output channels per tile
constexpr int64_t kTaps = 9;

#if defined(NOEIRA_BF16_AVX512)

// GCC 12 warns that an unmasked intrinsic's undefined pass-through vector (__Y) may be used
// uninitialised: without a mask it is never read, and the warning is the header's.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// A row of zero pairs for the rows above and below the image, with room for the loads one
// pixel before and after it.
alignas(64) const uint32_t kZeroRow[kWidth + 32] = {};
const uint32_t* const kZeros = kZeroRow + 16;

// in (C, H, 32) bf16 -> pairs (C / 2, H, 32) words: word j of row i of pair k holds
// in[2k][i][j] in its low half and in[2k + 1][i][j] in its high half.
NOEIRA_BF16_TARGET void channel_pairs(const bf16_t* in, int64_t C, int64_t H, uint32_t* pairs) {
  const __m512i lo = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40,
                                      8, 39, 7, 38, 6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
  const __m512i hi = _mm512_set_epi16(63, 31, 62, 30, 61, 29, 60, 28, 59, 27, 58, 26, 57, 25,
                                      56, 24, 55, 23, 54, 22, 53, 21, 52, 20, 51, 19, 50, 18,
                                      49, 17, 48, 16);
  for (int64_t k = 0; k < C / 2; ++k)
    for (int64_t i = 0; i < H; ++i) {
      const __m512i a = _mm512_loadu_si512(in + (2 * k * H + i) * kWidth);
      const __m512i b = _mm512_loadu_si512(in + ((2 * k + 1) * H + i) * kWidth);
      uint32_t* row = pairs + (k * H + i) * kWidth;
      _mm512_storeu_si512(row, _mm512_permutex2var_epi16(a, lo, b));
      _mm512_storeu_si512(row + 16, _mm512_permutex2var_epi16(a, hi, b));
    }
}

// Output rows [r0, r0 + R) of output channels [o0, o0 + 4) of one image: pairs (K, H, 32)
// words, packed (K, 9, 4) weight pairs for this block, out (Cout, H, 32).
template <int R>
NOEIRA_BF16_TARGET void tile(const uint32_t* pairs, const uint32_t* packed, bf16_t* out,
                             int64_t K, int64_t H, int64_t r0, int64_t o0) {
  __m512 acc[kBlock][R][2];
#pragma GCC unroll 4
  for (int o = 0; o < kBlock; ++o)
#pragma GCC unroll 2
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
      for (int v = 0; v < 2; ++v) acc[o][r][v] = _mm512_setzero_ps();
  // Lane 0 of the left-shifted first register and lane 15 of the right-shifted second are
  // outside the image: zero (masked loads do not touch those addresses).
  const __mmask16 left = 0xFFFE, right = 0x7FFF;
  bool inside[R + 2];
#pragma GCC unroll 4
  for (int j = 0; j < R + 2; ++j) inside[j] = r0 - 1 + j >= 0 && r0 - 1 + j < H;
  for (int64_t k = 0; k < K; ++k) {
    const uint32_t* plane = pairs + k * H * kWidth;
    const uint32_t* w = packed + k * kTaps * kBlock;
    const uint32_t* row[R + 2];  // input rows r0 - 1 .. r0 + R
#pragma GCC unroll 4
    for (int j = 0; j < R + 2; ++j) row[j] = inside[j] ? plane + (r0 - 1 + j) * kWidth : kZeros;
#pragma GCC unroll 3
    for (int p = 0; p < 3; ++p)
#pragma GCC unroll 3
      for (int q = 0; q < 3; ++q) {
        const uint32_t* wt = w + (p * 3 + q) * kBlock;
        __m512i wv[kBlock];
#pragma GCC unroll 4
        for (int o = 0; o < kBlock; ++o) wv[o] = _mm512_set1_epi32(static_cast<int>(wt[o]));
#pragma GCC unroll 2
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
          for (int v = 0; v < 2; ++v) {
            const uint32_t* at = row[r + p] + v * 16 + q - 1;
            __m512i xv;
            if (q == 0 && v == 0) xv = _mm512_maskz_loadu_epi32(left, at);
            else if (q == 2 && v == 1) xv = _mm512_maskz_loadu_epi32(right, at);
            else xv = _mm512_loadu_si512(at);
#pragma GCC unroll 4
            for (int o = 0; o < kBlock; ++o)
              acc[o][r][v] = _mm512_dpbf16_ps(acc[o][r][v], reinterpret_cast<__m512bh>(xv),
                                              reinterpret_cast<__m512bh>(wv[o]));
          }
      }
  }
#pragma GCC unroll 4
  for (int o = 0; o < kBlock; ++o)
#pragma GCC unroll 2
    for (int r = 0; r < R; ++r)
      bf16x32::store_in_order(out + ((o0 + o) * H + r0 + r) * kWidth, acc[o][r][0], acc[o][r][1]);
}

// Every image of a slab: its input to channel pairs, then rows two at a time (the last
// alone when H is odd), each pair of rows for every block of output channels while its
// input rows are in L1.
NOEIRA_BF16_TARGET void run_rows(int64_t images, int64_t cin, int64_t cout, int64_t H,
                                 const bf16_t* in, const uint32_t* packed, bf16_t* out,
                                 const ReluGradOut* epi, void* area) {
  const int64_t in_image = cin * H * kWidth, out_image = cout * H * kWidth;
  uint32_t* pairs = static_cast<uint32_t*>(area);
  for (int64_t n = 0; n < images; ++n) {
    channel_pairs(in + n * in_image, cin, H, pairs);
    bf16_t* y = out + n * out_image;
    // The next image's input into L2 while this one's tiles run, a share per row pair
    // (forward of 128 images at (16, 32x32), one Zen 4 core: 2.9-3.1 -> 2.8 ms).
    // Prefetching the epilogue's residual and relu_post the same way gained nothing.
    const int64_t pairs_of_rows = (H + 1) / 2;
    const int64_t lines = n + 1 < images ? in_image * 2 / 64 : 0;
    const char* next = reinterpret_cast<const char*>(in + (n + 1) * in_image);
    for (int64_t r0 = 0; r0 < H; r0 += 2) {
      const int64_t rows = H - r0 >= 2 ? 2 : 1, share = r0 / 2;
      for (int64_t l = share * lines / pairs_of_rows; l < (share + 1) * lines / pairs_of_rows; ++l)
        _mm_prefetch(next + l * 64, _MM_HINT_T1);
      for (int64_t o0 = 0; o0 < cout; o0 += kBlock) {
        const uint32_t* w = packed + o0 * (cin / 2) * kTaps;
        if (rows == 2) tile<2>(pairs, w, y, cin / 2, H, r0, o0);
        else tile<1>(pairs, w, y, cin / 2, H, r0, o0);
      }
    }
    if (epi) {  // the image's dx, in L2, in one sequential pass
      const int64_t at = n * out_image;
      const ReluGradOut e{static_cast<const bf16_t*>(epi->residual) + at,
                          static_cast<const bf16_t*>(epi->relu_post) + at};
      relu_grad_in_place(y, out_image, sizeof(bf16_t), e);
    }
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif  // NOEIRA_BF16_AVX512

bool takes(const ConvShape& s, DType dtype) {
  return dtype == DType::kBF16 && s.kernel_h == 3 && s.kernel_w == 3 && s.stride == 1 &&
         s.pad == 1 && !s.has_bias && s.width == kWidth && s.height >= 1 &&
         bf16_conv_rows_available();
}

// One bf16 weight pair: a in the low half, b in the high half.
uint32_t pair_of(bf16_t a, bf16_t b) {
  return static_cast<uint32_t>(a) | static_cast<uint32_t>(b) << 16;
}

}  // namespace

bool bf16_conv_rows_available() {
#if defined(NOEIRA_BF16_AVX512)
  static const bool on = [] {
    const char* v = std::getenv("NOEIRA_BF16_CONV_ROWS");
    if (v != nullptr && std::string_view(v) == "0") return false;
    return cpu_has_avx512_bf16() && !onednn::runs_amx();
  }();
  return on;
#else
  return false;
#endif
}

bool bf16_conv_rows_forward(const ConvShape& s, DType dtype) {
  return takes(s, dtype) && s.in_channels % 2 == 0 && s.out_channels % kBlock == 0;
}

bool bf16_conv_rows_backward_data(const ConvShape& s, DType dtype) {
  return takes(s, dtype) && s.out_channels % 2 == 0 && s.in_channels % kBlock == 0;
}

size_t bf16_conv_rows_area_bytes(const ConvShape& s) {
  return static_cast<size_t>(std::max(s.in_channels, s.out_channels) * s.height * kWidth) *
         sizeof(bf16_t);
}

// packed[o / 4][k][t][o % 4] = (w[o][2k][t], w[o][2k + 1][t])
void bf16_conv_rows_pack_forward(const ConvShape& s, const bf16_t* w, uint32_t* packed) {
  const int64_t cin = s.in_channels, K = cin / 2;
  for (int64_t o = 0; o < s.out_channels; ++o)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t t = 0; t < kTaps; ++t)
        packed[((o / kBlock * K + k) * kTaps + t) * kBlock + o % kBlock] =
            pair_of(w[(o * cin + 2 * k) * kTaps + t], w[(o * cin + 2 * k + 1) * kTaps + t]);
}

// packed[c / 4][k][t][c % 4] = (w[2k][c][8 - t], w[2k + 1][c][8 - t]): the transposed
// kernel turned by 180 degrees, paired over output channels.
void bf16_conv_rows_pack_backward_data(const ConvShape& s, const bf16_t* w, uint32_t* packed) {
  const int64_t cin = s.in_channels, K = s.out_channels / 2;
  for (int64_t c = 0; c < cin; ++c)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t t = 0; t < kTaps; ++t)
        packed[((c / kBlock * K + k) * kTaps + t) * kBlock + c % kBlock] =
            pair_of(w[(2 * k * cin + c) * kTaps + (kTaps - 1 - t)],
                    w[((2 * k + 1) * cin + c) * kTaps + (kTaps - 1 - t)]);
}

void bf16_conv_rows_forward_slab(const ConvShape& s, int64_t images, const bf16_t* x,
                                 const uint32_t* packed, bf16_t* y, void* area) {
#if defined(NOEIRA_BF16_AVX512)
  run_rows(images, s.in_channels, s.out_channels, s.height, x, packed, y, nullptr, area);
#else
  (void)s, (void)images, (void)x, (void)packed, (void)y, (void)area;
#endif
}

void bf16_conv_rows_backward_data_slab(const ConvShape& s, int64_t images, const bf16_t* dy,
                                       const uint32_t* packed, bf16_t* dx,
                                       const ReluGradOut* out, void* area) {
#if defined(NOEIRA_BF16_AVX512)
  run_rows(images, s.out_channels, s.in_channels, s.height, dy, packed, dx, out, area);
#else
  (void)s, (void)images, (void)dy, (void)packed, (void)dx, (void)out, (void)area;
#endif
}

}  // namespace noeira
