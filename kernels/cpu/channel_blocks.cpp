#include "kernels/cpu/channel_blocks.h"

#include <cstdint>
#include <cstring>

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

// out[j * ld_out + i] = in[i * ld_in + j] for i, j < 16.
template <class U>
void transpose_tile(const U* in, int64_t ld_in, U* out, int64_t ld_out) {
  Row<U> a[kBlock], b[kBlock];
#pragma GCC unroll 16
  for (int i = 0; i < kBlock; ++i) std::memcpy(&a[i], in + i * ld_in, sizeof(Row<U>));
  shuffle_step<U>(a, b);
  shuffle_step<U>(b, a);
  shuffle_step<U>(a, b);
  shuffle_step<U>(b, a);
#pragma GCC unroll 16
  for (int i = 0; i < kBlock; ++i) std::memcpy(out + i * ld_out, &a[i], sizeof(Row<U>));
}

// A (16, HW) matrix at `rows` (row stride HW) and an (HW, 16) one at `pixels`: one is
// copied into the other, transposed.
template <class U, bool kToPixels>
void transpose_block(U* rows, U* pixels, int64_t HW) {
  int64_t s = 0;
  for (; s + kBlock <= HW; s += kBlock) {
    if constexpr (kToPixels) transpose_tile(rows + s, HW, pixels + s * kBlock, kBlock);
    else transpose_tile(pixels + s * kBlock, kBlock, rows + s, HW);
  }
  for (; s < HW; ++s)
    for (int64_t c = 0; c < kBlock; ++c) {
      if constexpr (kToPixels) pixels[s * kBlock + c] = rows[c * HW + s];
      else rows[c * HW + s] = pixels[s * kBlock + c];
    }
}

template <class U, bool kToPixels>
void copy_all(const void* src, void* dst, int64_t N, int64_t C, int64_t HW) {
  U* plain = static_cast<U*>(kToPixels ? const_cast<void*>(src) : dst);
  U* blocked = static_cast<U*>(kToPixels ? dst : const_cast<void*>(src));
  // The block of 16 channels at (n, cb) is 16 * HW contiguous elements in both layouts.
  for (int64_t nb = 0; nb < N * (C / kBlock); ++nb)
    transpose_block<U, kToPixels>(plain + nb * kBlock * HW, blocked + nb * kBlock * HW, HW);
}

}  // namespace

bool channel_blocks_apply(int64_t C, size_t elem_bytes) {
  return C > 0 && C % kBlock == 0 && (elem_bytes == 2 || elem_bytes == 4);
}

void nchw_to_channel_blocks(const void* src, void* dst, int64_t N, int64_t C, int64_t HW,
                            size_t elem_bytes) {
  if (elem_bytes == 2) copy_all<uint16_t, true>(src, dst, N, C, HW);
  else copy_all<uint32_t, true>(src, dst, N, C, HW);
}

void channel_blocks_to_nchw(const void* src, void* dst, int64_t N, int64_t C, int64_t HW,
                            size_t elem_bytes) {
  if (elem_bytes == 2) copy_all<uint16_t, false>(src, dst, N, C, HW);
  else copy_all<uint32_t, false>(src, dst, N, C, HW);
}

}  // namespace noeira
