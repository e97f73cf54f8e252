// bf16 3x3 convolutions (stride 1, padding 1) on NCHW rows of 32 pixels with AVX512-BF16
// dot products, for the forward and backward-data passes where oneDNN does not run AMX: on
// Zen 4 (and other AVX512-BF16 CPUs without AMX) ResNet-20's (16, 32x32) stage, where
// oneDNN's bf16 passes copied x to nChw16c, ran at ~187 GFLOP/s and copied y back (3.75 ms a
// forward of 128 images on one Zen 4 core, its copies 14% of that). Here (standalone, same
// core): 3.0 ms, 199 GFLOP/s; 230 without the pair copy below.
//
// vdpbf16ps adds two products to each fp32 lane: here lane = pixel, the pair = two input
// channels. Each image's input is first copied to channel pairs, (C / 2, H, 32) 32-bit words
// of (channel 2k, channel 2k + 1), in the thread's area (in L2); a tile of 4 output channels
// x 2 rows x 2 registers of 16 pixels then takes, per channel pair and tap, 4 weight-pair
// broadcasts and 4 row loads (masked at the left and right edges; rows outside the image
// read a zero row) into 16 dot products, and rounds its rows to bf16 once (f32_to_bf16's
// bits: bf16_avx512.h).
//
// y[o][i][j] = sum over channel pairs k, then taps (p, q), of the pair's two products
// w[o][2k][p][q] * x[2k][..] + w[o][2k + 1][p][q] * x[2k + 1][..] (one vdpbf16ps), in fp32
// from zero: a function of the shape alone, so the bits do not depend on the thread count
// or on the slab an image is in; they differ from oneDNN's (another order). vdpbf16ps reads
// subnormal inputs as zero and flushes subnormal sums, as in oneDNN's kernels on these
// CPUs. Backward-data is the same
// kernel over dy's output-channel pairs with the weights transposed and turned by 180
// degrees, then with the dx epilogue (add + ReLU gradient) per image while it is in L2.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/common/bf16.h"
#include "kernels/common/dtype.h"
#include "kernels/common/image_shapes.h"
#include "kernels/cpu/channel_blocks.h"

namespace noeira {

// Whether the kernel runs here: an AVX-512 build on a CPU with AVX512-BF16 where oneDNN does
// not run AMX (onednn::runs_amx: its AMX kernels are faster), and NOEIRA_BF16_CONV_ROWS not
// "0" in the environment (that sends these passes back to oneDNN: A/B timing, the bits of
// older builds). Read once.
bool bf16_conv_rows_available();

// Whether the kernel takes a shape's forward pass (Cin even, Cout a multiple of 4) and its
// backward-data pass (Cout even, Cin a multiple of 4): available, bf16, 3x3, stride 1,
// padding 1, no bias, width 32.
bool bf16_conv_rows_forward(const ConvShape& shape, DType dtype);
bool bf16_conv_rows_backward_data(const ConvShape& shape, DType dtype);

// 32-bit weight pairs in the kernel's order, for one pass: (Cout / 4, Cin / 2, 9, 4)
// forward, (Cin / 4, Cout / 2, 9, 4) backward-data.
inline int64_t bf16_conv_rows_packed_words(const ConvShape& s) {
  return s.out_channels * s.in_channels * 9 / 2;
}
// w (Cout, Cin, 3, 3) into `packed` for the forward pass, or for backward-data.
void bf16_conv_rows_pack_forward(const ConvShape& shape, const bf16_t* w, uint32_t* packed);
void bf16_conv_rows_pack_backward_data(const ConvShape& shape, const bf16_t* w,
                                       uint32_t* packed);

// A thread's area: one image's input as channel pairs, for either pass.
size_t bf16_conv_rows_area_bytes(const ConvShape& shape);

// One slab of `images` images (pointers at its first image), `area` the running thread's.
// forward: y (images, Cout, H, 32) from x (images, Cin, H, 32); backward-data: dx (images,
// Cin, H, 32) from dy (images, Cout, H, 32), then with `out` dx = add_relu_grad(dx,
// residual, relu_post) per image. Both overwrite their output.
void bf16_conv_rows_forward_slab(const ConvShape& shape, int64_t images, const bf16_t* x,
                                 const uint32_t* packed, bf16_t* y, void* area);
void bf16_conv_rows_backward_data_slab(const ConvShape& shape, int64_t images,
                                       const bf16_t* dy, const uint32_t* packed, bf16_t* dx,
                                       const ReluGradOut* out, void* area);

}  // namespace noeira
