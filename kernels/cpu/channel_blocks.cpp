#include "kernels/cpu/channel_blocks.h"

#include "kernels/common/bf16.h"
#include "kernels/common/math.h"
#include "kernels/cpu/streaming_store.h"

#include <cstdint>
#include <cstring>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace noeira {

namespace {

constexpr int64_t kBlock = 16;

// 16 elements in one vector (GCC's and Clang's vector extension; an attribute cannot
// follow a template parameter, so one typedef per element size).
typedef uint16_t Row2 __attribute__((vector_size(kBlock * 2)));
typedef uint32_t Row4 __attribute__((vector_size(kBlock * 4)));
template <class U>
struct RowOf;
template <>
struct RowOf<uint16_t> {
  using type = Row2;
};
template <>
struct RowOf<uint32_t> {
  using type = Row4;
};
template <class U>
using Row = typename RowOf<U>::type;

// One step of the perfect shuffle: out row 2i interleaves the first halves of rows i and
// i + 8, out row 2i + 1 their second halves. Element (r, c), as the 8 bits r3..r0 c3..c0,
// moves to (r2 r1 r0 c3, c2 c1 c0 r3): the bits rotate left by one, so four steps take
// (r, c) to (c, r), the transpose.
template <class U>
void shuffle_step(const Row<U> (&in)[kBlock], Row<U> (&out)[kBlock]) {
#pragma GCC unroll 8
  for (int i = 0; i < kBlock / 2; ++i) {
    const Row<U> a = in[i], b = in[i + kBlock / 2];
    out[2 * i] = __builtin_shufflevector(a, b, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22,
                                         7, 23);
    out[2 * i + 1] = __builtin_shufflevector(a, b, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29,
                                             14, 30, 15, 31);
  }
}

// A 64-byte row at `at` (64-byte aligned when kStream): streamed with kStream
// (streaming_store.h), a plain store otherwise.
template <bool kStream, class V>
inline void store_row(void* at, const V& v) {
#if defined(__AVX512F__)
  if constexpr (kStream && sizeof(V) == 64) {
    _mm512_stream_si512(static_cast<__m512i*>(at), _mm512_loadu_si512(&v));
    return;
  }
#endif
  std::memcpy(at, &v, sizeof(V));
}

// out[j * ld_out + i] = in[i * ld_in + j] for i, j < 16.
template <class U, bool kStream = false>
void transpose_tile(const U* in, int64_t ld_in, U* out, int64_t ld_out) {
  Row<U> a[kBlock], b[kBlock];
#pragma GCC unroll 16
  for (int i = 0; i < kBlock; ++i) std::memcpy(&a[i], in + i * ld_in, sizeof(Row<U>));
  shuffle_step<U>(a, b);
  shuffle_step<U>(b, a);
  shuffle_step<U>(a, b);
  shuffle_step<U>(b, a);
#pragma GCC unroll 16
  for (int i = 0; i < kBlock; ++i) store_row<kStream>(out + i * ld_out, a[i]);
}

#if defined(__AVX512BW__)
// GCC 12's AVX-512 headers give their unmasked unpacks, extracts and inserts an "undefined"
// pass-through vector that -Wuninitialized flags (GCC bug 105593): the header's, not ours.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// 2-byte elements, 32 pixels x 16 channels at a time in 16 zmm registers: an 8 x 8
// transpose inside each 128-bit lane (three rounds of unpacks, which stay in their lane and
// are cheap), then one two-source qword permute per pair of registers to move the lanes.
// Half the shuffles per byte of the 16-pixel tiles below, and cheaper ones (those are
// vpermt2w): on one Zen 4 core, 8-image slabs of (16, 32x32), 1.15x as fast into blocks
// and 1.3x back.

// In each 128-bit lane: out[j] word i = v[i] word j, for i, j < 8.
inline void transpose_8x8_in_lanes(const __m512i (&v)[8], __m512i (&out)[8]) {
  __m512i t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm512_unpacklo_epi16(v[2 * i], v[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi16(v[2 * i], v[2 * i + 1]);
  }
  // t[2i] holds words 0-3 of rows 2i, 2i + 1 interleaved; t[2i + 1] words 4-7.
  for (int h = 0; h < 2; ++h) {  // rows 0-3, then 4-7
    const __m512i* a = t + 4 * h;
    u[4 * h + 0] = _mm512_unpacklo_epi32(a[0], a[2]);  // words 0, 1 of four rows
    u[4 * h + 1] = _mm512_unpackhi_epi32(a[0], a[2]);  // words 2, 3
    u[4 * h + 2] = _mm512_unpacklo_epi32(a[1], a[3]);  // words 4, 5
    u[4 * h + 3] = _mm512_unpackhi_epi32(a[1], a[3]);  // words 6, 7
  }
  for (int k = 0; k < 4; ++k) {
    out[2 * k] = _mm512_unpacklo_epi64(u[k], u[4 + k]);
    out[2 * k + 1] = _mm512_unpackhi_epi64(u[k], u[4 + k]);
  }
}

// 32 pixels from `s` of a (16, HW) matrix at `rows` -> pixels [s, s + 32) of an (HW, 16)
// one at `pixels` (pixel stride ld).
inline void rows_to_pixels_32(const uint16_t* rows, int64_t HW, uint16_t* pixels, int64_t ld) {
  __m512i r[8], e0[8], e1[8];
  // e0[q] lane L = channels 0-7 of pixel 8L + q; e1[q] channels 8-15.
  for (int c = 0; c < 8; ++c) r[c] = _mm512_loadu_si512(rows + c * HW);
  transpose_8x8_in_lanes(r, e0);
  for (int c = 0; c < 8; ++c) r[c] = _mm512_loadu_si512(rows + (8 + c) * HW);
  transpose_8x8_in_lanes(r, e1);
  const __m512i lanes01 = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
  const __m512i lanes23 = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
  for (int q = 0; q < 8; ++q) {
    const __m512i x = _mm512_permutex2var_epi64(e0[q], lanes01, e1[q]);  // pixels q, 8 + q
    const __m512i y = _mm512_permutex2var_epi64(e0[q], lanes23, e1[q]);  // 16 + q, 24 + q
    uint16_t* p = pixels + q * ld;
    const auto store = [](uint16_t* at, __m256i v) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(at), v);
    };
    store(p, _mm512_castsi512_si256(x));
    store(p + 8 * ld, _mm512_extracti64x4_epi64(x, 1));
    store(p + 16 * ld, _mm512_castsi512_si256(y));
    store(p + 24 * ld, _mm512_extracti64x4_epi64(y, 1));
  }
}

// The inverse: pixels [s, s + 32) of the (HW, 16) matrix -> 32 pixels of the (16, HW) one.
template <bool kStream>
inline void pixels_to_rows_32(const uint16_t* pixels, int64_t ld, uint16_t* rows, int64_t HW) {
  __m512i e0[8], e1[8], r[8];
  const __m512i low_halves = _mm512_setr_epi64(0, 1, 4, 5, 8, 9, 12, 13);
  const __m512i high_halves = _mm512_setr_epi64(2, 3, 6, 7, 10, 11, 14, 15);
  for (int q = 0; q < 8; ++q) {
    const uint16_t* p = pixels + q * ld;
    auto pair = [](const uint16_t* a, const uint16_t* b) {
      return _mm512_inserti64x4(
          _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a))),
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)), 1);
    };
    const __m512i x = pair(p, p + 8 * ld), y = pair(p + 16 * ld, p + 24 * ld);
    e0[q] = _mm512_permutex2var_epi64(x, low_halves, y);   // lane L: channels 0-7, pixel 8L + q
    e1[q] = _mm512_permutex2var_epi64(x, high_halves, y);  // channels 8-15
  }
  transpose_8x8_in_lanes(e0, r);
  for (int c = 0; c < 8; ++c) store_row<kStream>(rows + c * HW, r[c]);
  transpose_8x8_in_lanes(e1, r);
  for (int c = 0; c < 8; ++c) store_row<kStream>(rows + (8 + c) * HW, r[c]);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

// A (16, HW) matrix at `rows` (row stride HW) and an (HW, 16) one at `pixels` (pixel
// stride ld: 16 in nChw16c, C in nhwc): one is copied into the other, transposed.
// kStream: the rows' whole 64-byte pieces streamed (rows and HW's bytes 64-byte aligned).
template <class U, bool kToPixels, bool kStream = false>
void transpose_block(U* rows, U* pixels, int64_t HW, int64_t ld) {
  int64_t s = 0;
#if defined(__AVX512BW__)
  if constexpr (sizeof(U) == 2)
    for (; s + 2 * kBlock <= HW; s += 2 * kBlock) {
      if constexpr (kToPixels) rows_to_pixels_32(rows + s, HW, pixels + s * ld, ld);
      else pixels_to_rows_32<kStream>(pixels + s * ld, ld, rows + s, HW);
    }
#endif
  for (; s + kBlock <= HW; s += kBlock) {
    if constexpr (kToPixels) transpose_tile(rows + s, HW, pixels + s * ld, ld);
    else transpose_tile<U, kStream && sizeof(U) == 4>(pixels + s * ld, ld, rows + s, HW);
  }
  // memcpy: the weight gradient reads bf16 memory as 4-byte pairs through these copies.
  for (; s < HW; ++s)
    for (int64_t c = 0; c < kBlock; ++c) {
      if constexpr (kToPixels) std::memcpy(pixels + s * ld + c, rows + c * HW + s, sizeof(U));
      else std::memcpy(rows + c * HW + s, pixels + s * ld + c, sizeof(U));
    }
}

template <class U, bool kToPixels, bool kStream = false>
void copy_all(const void* src, void* dst, int64_t N, int64_t C, int64_t HW,
              ChannelLayout layout) {
  U* plain = static_cast<U*>(kToPixels ? const_cast<void*>(src) : dst);
  U* pixels = static_cast<U*>(kToPixels ? dst : const_cast<void*>(src));
  const int64_t blocks = C / kBlock;
  // The block of 16 channels at (n, cb): 16 * HW contiguous elements in nchw and nChw16c;
  // in nhwc 16 adjacent channels of each of HW pixels C apart.
  const bool last = layout == ChannelLayout::kChannelsLast;
  const int64_t ld = last ? C : kBlock;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t cb = 0; cb < blocks; ++cb) {
      U* block = pixels + n * C * HW + (last ? cb * kBlock : cb * kBlock * HW);
      transpose_block<U, kToPixels, kStream>(plain + (n * blocks + cb) * kBlock * HW, block,
                                             HW, ld);
    }
  if constexpr (kStream) stream_fence();
}

// Pixels per piece of a block that the epilogue's copy transposes into its buffer: a
// multiple of the 32-pixel tiles, 16 KiB of fp32 rows.
constexpr int64_t kEpiloguePixels = 256;

// T: the element type (float, bf16_t); U: the bits the transposes move.
template <class T, class U>
void copy_all_relu_grad(const void* src, void* dst, int64_t N, int64_t C, int64_t HW,
                        ChannelLayout layout, bool stream, const ReluGradOut& out) {
  static_assert(sizeof(T) == sizeof(U));
  const U* pixels_all = static_cast<const U*>(src);
  T* plain = static_cast<T*>(dst);
  const T* res = static_cast<const T*>(out.residual);
  const T* post = static_cast<const T*>(out.relu_post);
  const int64_t blocks = C / kBlock;
  const bool last = layout == ChannelLayout::kChannelsLast;
  const int64_t ld = last ? C : kBlock;
  alignas(64) U rows[kBlock * kEpiloguePixels];  // (16, piece) of the block's channels
  for (int64_t n = 0; n < N; ++n)
    for (int64_t cb = 0; cb < blocks; ++cb) {
      const U* block = pixels_all + n * C * HW + (last ? cb * kBlock : cb * kBlock * HW);
      for (int64_t s0 = 0; s0 < HW; s0 += kEpiloguePixels) {
        const int64_t piece = HW - s0 < kEpiloguePixels ? HW - s0 : kEpiloguePixels;
        transpose_block<U, false>(rows, const_cast<U*>(block + s0 * ld), piece, ld);
        for (int64_t c = 0; c < kBlock; ++c) {
          const int64_t at = (n * C + cb * kBlock + c) * HW + s0;
          const U* r = rows + c * piece;
          write_staged(plain + at, piece, stream, [&](int64_t i0, int64_t k, T* __restrict o) {
            const T* __restrict rs = res + at + i0;
            const T* __restrict po = post + at + i0;
            for (int64_t i = 0; i < k; ++i) {
              T v;
              std::memcpy(&v, r + i0 + i, sizeof(T));
              store_exact(o[i], add_relu_grad<T>(load_f32(v), load_f32(rs[i]), load_f32(po[i])));
            }
          });
        }
      }
    }
  if (stream) stream_fence();
}

template <class T>
void relu_grad_in_place_impl(T* dst, int64_t n, const ReluGradOut& out) {
  const T* res = static_cast<const T*>(out.residual);
  const T* post = static_cast<const T*>(out.relu_post);
  for (int64_t i = 0; i < n; ++i)
    store_exact(dst[i], add_relu_grad<T>(load_f32(dst[i]), load_f32(res[i]), load_f32(post[i])));
}

// Whether the nchw rows at `plain` can take whole streamed 64-byte rows: aligned, with each
// 16-pixel (fp32) or 32-pixel (bf16) piece 64 bytes from the last, HW such pieces whole.
bool streamable(const void* plain, int64_t HW, size_t elem_bytes) {
  return streaming_stores_available() && reinterpret_cast<uintptr_t>(plain) % 64 == 0 &&
         (HW * static_cast<int64_t>(elem_bytes)) % 64 == 0;
}

}  // namespace

void transpose_16x16(const uint32_t* in, int64_t ld_in, uint32_t* out, int64_t ld_out) {
  transpose_tile<uint32_t>(in, ld_in, out, ld_out);
}

bool channel_blocks_apply(int64_t C, size_t elem_bytes) {
  return C > 0 && C % kBlock == 0 && (elem_bytes == 2 || elem_bytes == 4);
}

void nchw_to_channel_blocks(const void* src, void* dst, int64_t N, int64_t C, int64_t HW,
                            size_t elem_bytes, ChannelLayout layout) {
  if (elem_bytes == 2) copy_all<uint16_t, true>(src, dst, N, C, HW, layout);
  else copy_all<uint32_t, true>(src, dst, N, C, HW, layout);
}

void channel_blocks_to_nchw(const void* src, void* dst, int64_t N, int64_t C, int64_t HW,
                            size_t elem_bytes, ChannelLayout layout, bool stream,
                            const ReluGradOut* out) {
  if (out) {
    stream = stream && streaming_stores_available();
    if (elem_bytes == 2)
      copy_all_relu_grad<bf16_t, uint16_t>(src, dst, N, C, HW, layout, stream, *out);
    else
      copy_all_relu_grad<float, uint32_t>(src, dst, N, C, HW, layout, stream, *out);
    return;
  }
  if (stream && streamable(dst, HW, elem_bytes)) {
    if (elem_bytes == 2) copy_all<uint16_t, false, true>(src, dst, N, C, HW, layout);
    else copy_all<uint32_t, false, true>(src, dst, N, C, HW, layout);
    return;
  }
  if (elem_bytes == 2) copy_all<uint16_t, false>(src, dst, N, C, HW, layout);
  else copy_all<uint32_t, false>(src, dst, N, C, HW, layout);
}

void relu_grad_in_place(void* dst, int64_t n, size_t elem_bytes, const ReluGradOut& out) {
  if (elem_bytes == 2) relu_grad_in_place_impl(static_cast<bf16_t*>(dst), n, out);
  else relu_grad_in_place_impl(static_cast<float*>(dst), n, out);
}

}  // namespace noeira
