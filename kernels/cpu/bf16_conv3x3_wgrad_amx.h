// The weight gradient of a bf16 3x3 convolution (stride 1, padding 1) over one slab of
// images on AMX tiles (tdpbf16ps), for input and output channels in blocks of 16. It takes
// those shapes from oneDNN 2.6's AMX backward-weights kernel, which ran ResNet-20's
// (16, 32x32), (32, 16x16) and (64, 8x8) shapes at 270-360 GFLOP/s on one core of an
// Intel AMX CPU (family 6 model 167, 128 images), against 780-850 for its forward pass.
//
// Per tap (p, q), dw[o][c][p][q] is a matrix product over the slab's pixels:
//   dw^T[c][o] += x[c][pixel shifted by (p - 1, q - 1)] * dy[o][pixel].
// The pixels run in a padded "virtual" order, rows of W + 2 values (two zeros closing each)
// and images of H + 1 rows (a zero row closing each), so that a tap's shift is one constant
// offset d and the zeros serve as the padding on every side. The A operand is x, copied
// channel-major in that order (16 channels x 32 values, 64-byte aligned: a tile row that
// straddles two cache lines loaded 6x slower); B is dy in that order as pairs of values
// with 16 channels adjacent (its VNNI layout), a tap's B starting d values earlier - whole
// 64-byte rows for even d; odd d (q = 0, 2) takes a second copy of x one value later. The
// zeros cost (H + 1)(W + 2) / HW more products: 10% at 32x32, 41% at 8x8.
//
// Sums: fp32 tile accumulators, one element per (c, o, tap), fed 32 pixels per tdpbf16ps
// in the virtual order, chunks of images in order - a function of the shape alone, so the
// bits do not depend on the thread count. They differ from oneDNN's kernel's and from the
// AVX512-BF16 kernel's (bf16_conv3x3_wgrad.h). Like tdpbf16ps everywhere, denormal inputs
// count as zero and denormal sums are flushed to zero.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/common/bf16.h"
#include "kernels/common/image_shapes.h"

namespace noeira {

// Whether AMX tiles can run here: an x86-64 Linux build, a CPU with AMX-TILE and AMX-BF16,
// and the kernel's grant of the tile data state to this process (requested once).
bool amx_wgrad_available();

// Whether the kernel takes a 3x3, stride-1, padding-1 bf16 shape: channels in blocks of 16,
// an even width.
bool amx_wgrad_takes(const ConvShape& shape);

// Bytes of one thread's area for a slab of `images` images.
size_t amx_wgrad_area_bytes(const ConvShape& shape, int64_t images);

// dw (Cout, Cin, 3, 3), overwritten, from a slab: x (images, Cin, H, W), dy (images, Cout,
// H, W). `area` holds amx_wgrad_area_bytes(shape, images) bytes, 64-byte aligned. Only
// where amx_wgrad_available() and for shapes amx_wgrad_takes.
void amx_wgrad_slab(const ConvShape& shape, int64_t images, const bf16_t* x, const bf16_t* dy,
                    float* dw, std::byte* area);

}  // namespace noeira
