// fp32 3x3 convolutions (stride 1, padding 1) straight on NCHW rows of 32 pixels, for the
// forward and backward-data passes of such shapes that oneDNN's Winograd kernels do not take
// (winograd_applies): where oneDNN runs AMX, ResNet-20's (16, 32x32) stage (Winograd takes
// only images of 256 pixels or fewer there; onednn_conv.h) and its 3-channel stem's forward;
// on other AVX-512 CPUs, where Winograd takes every stage, the stem's forward alone (not
// measured there). oneDNN's direct passes copied x to nhwc or nChw16c, ran, and copied y back;
// those copies were a sixth of resnet20's fp32 step at one thread. Here no copy: one Xeon
// model-167 core, 128 images, operands out of cache (`micro`): (16 -> 16, 32x32) forward
// 5.0 -> 3.9 ms, backward-data 4.9 -> 3.9; the stem's forward 1.33 -> 0.79.
//
// y[o][i][j] = sum over c, p, q of w[o][c][p][q] * x[c][i + p - 1][j + q - 1] (x zero
// outside the image), summed in the order (c, p, q) with one fp32 FMA per term: a function
// of the shape alone, so the bits do not depend on the thread count or on the slab an image
// is in. They differ from oneDNN's direct kernels' (another order); fp32 resnet20 bits on
// the CPUs that run it changed with it. Backward-data is the same kernel over dy with the
// weights transposed and turned by 180 degrees: dx[c] = sum over o, p, q of
// w[o][c][2 - p][2 - q] * dy[o][i + p - 1][j + q - 1].
//
// Registers: 4 output channels x 2 rows x 2 vectors of 16 pixels accumulate (16 zmm); per
// input channel and tap, 4 weight broadcasts and 4 row loads (masked at the left and right
// edges) feed 16 FMAs. Rows above and below the image read a zero row. The padding's terms
// are real FMAs with zero (an infinite weight makes a border output NaN where a kernel that
// skips the padding gives an infinity).
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/common/dtype.h"
#include "kernels/common/image_shapes.h"
#include "kernels/cpu/channel_blocks.h"

namespace noeira {

// Whether the kernel runs here: a build with AVX-512, and NOEIRA_F32_CONV_ROWS not "0" in
// the environment (that sends these passes back to oneDNN: A/B timing, the bits of older
// builds). Read once.
bool f32_conv_rows_available();

// Whether the kernel takes a shape's forward (and, with Cin a multiple of 4, its
// backward-data) pass: available, fp32, 3x3, stride 1, padding 1, no bias, width 32, Cout
// a multiple of 4, and not a shape oneDNN's Winograd kernels take (winograd_applies, faster
// where they run). Read when a shape is planned.
bool f32_conv_rows_forward(const ConvShape& shape, DType dtype);
bool f32_conv_rows_backward_data(const ConvShape& shape, DType dtype);

// Floats of the weights in the kernel's order, for one pass: (Cout / 4, Cin, 9, 4) forward,
// (Cin / 4, Cout, 9, 4) backward-data.
inline int64_t f32_conv_rows_packed_floats(const ConvShape& s) {
  return s.out_channels * s.in_channels * 9;
}
// w (Cout, Cin, 3, 3) into `packed` for the forward pass, or for backward-data.
void f32_conv_rows_pack_forward(const ConvShape& shape, const float* w, float* packed);
void f32_conv_rows_pack_backward_data(const ConvShape& shape, const float* w, float* packed);

// One slab of `images` images. forward: y (images, Cout, H, 32) from x (images, Cin, H, 32);
// backward-data: dx (images, Cin, H, 32) from dy (images, Cout, H, 32), then with `out`
// dx = add_relu_grad(dx, residual, relu_post) over each image once its tiles are written,
// while it is in L2 (pointers at the slab's first image). Both overwrite their output.
void f32_conv_rows_forward_slab(const ConvShape& shape, int64_t images, const float* x,
                                const float* packed, float* y);
void f32_conv_rows_backward_data_slab(const ConvShape& shape, int64_t images, const float* dy,
                                      const float* packed, float* dx, const ReluGradOut* out);

}  // namespace noeira
