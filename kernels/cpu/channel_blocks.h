// Our activations are nchw; oneDNN's direct convolutions run on nChw16c (its aBcd16b:
// channels in blocks of 16, the 16 of a pixel adjacent), its AMX bf16 ones and the fp32
// stride-1 16 -> 16-channel ones we ask for on nhwc (acdb; onednn_conv_pass.cpp).
// Every slab of every pass moves its activations between the two, and oneDNN's own
// reorders did it at 16-29 GB/s into nChw16c on AVX-512 (a fifth of resnet20's
// convolution time) and at ~4 GB/s into nhwc on AMX (a quarter of its bf16 step). These
// are plain bit copies, one thread, tiles of 16 channels x 16 pixels (x 32 pixels for
// 2-byte elements with AVX-512 BW) transposed in registers.
#pragma once
#include <cstddef>
#include <cstdint>

namespace noeira {

// The layout pair the copies below serve: C a positive multiple of 16, elements of 2 or 4
// bytes (bf16, fp32).
bool channel_blocks_apply(int64_t C, size_t elem_bytes);

// Where a pixel's channels go: kBlocks16 nChw16c, kChannelsLast nhwc.
enum class ChannelLayout { kBlocks16, kChannelsLast };

// kBlocks16: dst (N, C / 16, HW, 16) <- src (N, C, HW), dst[n][c / 16][s][c % 16] =
// src[n][c][s]; kChannelsLast: dst (N, HW, C) <- src (N, C, HW), dst[n][s][c] = src[n][c][s].
void nchw_to_channel_blocks(const void* src, void* dst, int64_t N, int64_t C, int64_t HW,
                            size_t elem_bytes,
                            ChannelLayout layout = ChannelLayout::kBlocks16);
// A gradient's way out through a ReLU (kernels/ops.h ConvDxEpilogue): each value v of dst
// written as add_relu_grad(v, residual, relu_post) at its element (kernels/common/math.h),
// residual and relu_post nchw like dst (N, C, HW) and of its element type.
struct ReluGradOut {
  const void* residual;
  const void* relu_post;
};

// The inverse: dst (N, C, HW) <- src in `layout`. `stream`: dst written with streaming
// stores (streaming_store.h; an output far larger than the caches) where the build has
// them (plain copies: where dst is 64-byte aligned and HW * elem_bytes a multiple of 64).
// `out`, when not null, applied as the values are written (the bits of the copy then
// add_relu_backward): 256 pixels of a block of 16 channels at a time transposed into a
// buffer on the stack, then each channel's run written from it.
void channel_blocks_to_nchw(const void* src, void* dst, int64_t N, int64_t C, int64_t HW,
                            size_t elem_bytes,
                            ChannelLayout layout = ChannelLayout::kBlocks16,
                            bool stream = false, const ReluGradOut* out = nullptr);
// out[j * ld_out + i] = in[i * ld_in + j] for i, j < 16: one tile of 4-byte elements
// transposed in registers (the copies above, for callers with a layout of their own).
void transpose_16x16(const uint32_t* in, int64_t ld_in, uint32_t* out, int64_t ld_out);

// dst[i] = add_relu_grad(dst[i], residual[i], relu_post[i]) for i < n, in place (where an
// output leaves without our copies).
void relu_grad_in_place(void* dst, int64_t n, size_t elem_bytes, const ReluGradOut& out);

}  // namespace noeira
