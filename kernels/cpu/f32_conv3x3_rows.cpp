#include "kernels/cpu/f32_conv3x3_rows.h"

#include <cstdlib>
#include <string_view>

#include "kernels/cpu/onednn_conv.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#define NOEIRA_F32_CONV_ROWS_BUILT 1
#endif

namespace noeira {

namespace {

constexpr int64_t kWidth = 32;   // pixels per row: two registers
constexpr int64_t kBlock = 4;    // output channels per tile
constexpr int64_t kTaps = 9;

#if defined(NOEIRA_F32_CONV_ROWS_BUILT)

// A row of zeros for the rows above and below the image, with room for the loads one pixel
// before and after it.
alignas(64) const float kZeroRow[kWidth + 32] = {};
const float* const kZeros = kZeroRow + 16;

// out rows [r0, r0 + R) of output channels [o0, o0 + 4) of one image: in (Cin, H, 32),
// packed (Cin, 9, 4) for this block, out (Cout, H, 32).
template <int R>
void tile(const float* in, const float* packed, float* out, int64_t cin, int64_t H, int64_t r0,
          int64_t o0) {
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
  for (int64_t c = 0; c < cin; ++c) {
    const float* plane = in + c * H * kWidth;
    const float* w = packed + c * kTaps * kBlock;
    const float* row[R + 2];  // input rows r0 - 1 .. r0 + R
#pragma GCC unroll 4
    for (int j = 0; j < R + 2; ++j) row[j] = inside[j] ? plane + (r0 - 1 + j) * kWidth : kZeros;
#pragma GCC unroll 3
    for (int p = 0; p < 3; ++p)
#pragma GCC unroll 3
      for (int q = 0; q < 3; ++q) {
        const float* wt = w + (p * 3 + q) * kBlock;
        __m512 wv[kBlock];
#pragma GCC unroll 4
        for (int o = 0; o < kBlock; ++o) wv[o] = _mm512_set1_ps(wt[o]);
#pragma GCC unroll 2
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
          for (int v = 0; v < 2; ++v) {
            const float* at = row[r + p] + v * 16 + q - 1;
            __m512 xv;
            if (q == 0 && v == 0) xv = _mm512_maskz_loadu_ps(left, at);
            else if (q == 2 && v == 1) xv = _mm512_maskz_loadu_ps(right, at);
            else xv = _mm512_loadu_ps(at);
#pragma GCC unroll 4
            for (int o = 0; o < kBlock; ++o) acc[o][r][v] = _mm512_fmadd_ps(xv, wv[o], acc[o][r][v]);
          }
      }
  }
#pragma GCC unroll 4
  for (int o = 0; o < kBlock; ++o)
#pragma GCC unroll 2
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
      for (int v = 0; v < 2; ++v)
        _mm512_storeu_ps(out + ((o0 + o) * H + r0 + r) * kWidth + v * 16, acc[o][r][v]);
}

// Every image of a slab: rows two at a time (the last alone when H is odd), each pair for
// every block of output channels while its input rows are in L1.
void run_rows(int64_t images, int64_t cin, int64_t cout, int64_t H, const float* in,
              const float* packed, float* out, const ReluGradOut* epi) {
  const int64_t in_image = cin * H * kWidth, out_image = cout * H * kWidth;
  for (int64_t n = 0; n < images; ++n) {
    const float* x = in + n * in_image;
    float* y = out + n * out_image;
    for (int64_t r0 = 0; r0 < H; r0 += 2) {
      const int64_t rows = H - r0 >= 2 ? 2 : 1;
      for (int64_t o0 = 0; o0 < cout; o0 += kBlock) {
        const float* w = packed + o0 * cin * kTaps;
        if (rows == 2) tile<2>(x, w, y, cin, H, r0, o0);
        else tile<1>(x, w, y, cin, H, r0, o0);
      }
    }
    // The image's dx, in L2, in one sequential pass: per tile (8 runs of 64 values), the
    // residual and relu_post reads missed the prefetchers (1.6 ms a call at (16, 32x32)).
    if (epi) {
      const int64_t at = n * out_image;
      const ReluGradOut e{static_cast<const float*>(epi->residual) + at,
                          static_cast<const float*>(epi->relu_post) + at};
      relu_grad_in_place(y, out_image, sizeof(float), e);
    }
  }
}

#endif  // NOEIRA_F32_CONV_ROWS_BUILT

bool takes(const ConvShape& s, DType dtype) {
  return f32_conv_rows_available() && dtype == DType::kF32 && s.kernel_h == 3 &&
         s.kernel_w == 3 && s.stride == 1 && s.pad == 1 && !s.has_bias && s.width == kWidth &&
         s.height >= 1 && !winograd_applies(s, dtype);
}

}  // namespace

bool f32_conv_rows_available() {
#if defined(NOEIRA_F32_CONV_ROWS_BUILT)
  static const bool on = [] {
    const char* v = std::getenv("NOEIRA_F32_CONV_ROWS");
    return v == nullptr || std::string_view(v) != "0";
  }();
  return on;
#else
  return false;
#endif
}

bool f32_conv_rows_forward(const ConvShape& s, DType dtype) {
  return takes(s, dtype) && s.out_channels % kBlock == 0;
}

bool f32_conv_rows_backward_data(const ConvShape& s, DType dtype) {
  return takes(s, dtype) && s.in_channels % kBlock == 0;
}

// packed[o / 4][c][t][o % 4] = w[o][c][t]
void f32_conv_rows_pack_forward(const ConvShape& s, const float* w, float* packed) {
  const int64_t cin = s.in_channels;
  for (int64_t o = 0; o < s.out_channels; ++o)
    for (int64_t c = 0; c < cin; ++c)
      for (int64_t t = 0; t < kTaps; ++t)
        packed[((o / kBlock * cin + c) * kTaps + t) * kBlock + o % kBlock] = w[(o * cin + c) * kTaps + t];
}

// packed[c / 4][o][t][c % 4] = w[o][c][8 - t]: the transposed kernel turned by 180 degrees.
void f32_conv_rows_pack_backward_data(const ConvShape& s, const float* w, float* packed) {
  const int64_t cin = s.in_channels, cout = s.out_channels;
  for (int64_t c = 0; c < cin; ++c)
    for (int64_t o = 0; o < cout; ++o)
      for (int64_t t = 0; t < kTaps; ++t)
        packed[((c / kBlock * cout + o) * kTaps + t) * kBlock + c % kBlock] =
            w[(o * cin + c) * kTaps + (kTaps - 1 - t)];
}

void f32_conv_rows_forward_slab(const ConvShape& s, int64_t images, const float* x,
                                const float* packed, float* y) {
#if defined(NOEIRA_F32_CONV_ROWS_BUILT)
  run_rows(images, s.in_channels, s.out_channels, s.height, x, packed, y, nullptr);
#else
  (void)s, (void)images, (void)x, (void)packed, (void)y;
#endif
}

void f32_conv_rows_backward_data_slab(const ConvShape& s, int64_t images, const float* dy,
                                      const float* packed, float* dx, const ReluGradOut* out) {
#if defined(NOEIRA_F32_CONV_ROWS_BUILT)
  run_rows(images, s.out_channels, s.in_channels, s.height, dy, packed, dx, out);
#else
  (void)s, (void)images, (void)dy, (void)packed, (void)dx, (void)out;
#endif
}

}  // namespace noeira
