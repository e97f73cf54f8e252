// Our activations are nchw; oneDNN's direct convolutions run on nChw16c (its aBcd16b:
// channels in blocks of 16, the 16 of a pixel adjacent). Every slab of every pass moves
// its activations between the two, and oneDNN's own reorders did it at 16-29 GB/s on
// AVX-512 (a fifth of resnet20's convolution time). These are plain bit copies, one
// thread, tiles of 16 channels x 16 pixels (x 32 pixels for 2-byte elements with AVX-512
// BW) transposed in registers.
#pragma once
#include <cstddef>
#include <cstdint>

namespace noeira {

// The layout pair the copies below serve: C a positive multiple of 16, elements of 2 or 4
// bytes (bf16, fp32).
bool channel_blocks_apply(int64_t C, size_t elem_bytes);

// dst (N, C / 16, HW, 16) <- src (N, C, HW): dst[n][c / 16][s][c % 16] = src[n][c][s].
void nchw_to_channel_blocks(const void* src, void* dst, int64_t N, int64_t C, int64_t HW,
                            size_t elem_bytes);
// The inverse: dst (N, C, HW) <- src (N, C / 16, HW, 16).
void channel_blocks_to_nchw(const void* src, void* dst, int64_t N, int64_t C, int64_t HW,
                            size_t elem_bytes);

}  // namespace noeira
