// The weight gradient of a bf16 3x3 convolution (stride 1, padding 1) over one slab of
// images, on AVX512-BF16 (vdpbf16ps), in place of oneDNN 2.6's backward-weights kernel for
// those shapes: on one Zen 4 core that kernel ran ResNet-20's three shapes at 63-78% of the
// vdpbf16ps peak with its operands in cache. This one's inner loop reached the peak in a
// standalone test (230-233 GFLOP/s, padding taps included); the whole pass, its two layout
// copies and the slab sums included, 191-197 GFLOP/s (82-85%) in `noeira-bench micro`.
//
// dw[o][c][p][q] = sum over the slab's images b, rows i, columns j of
//   dy[b][o][i][j] * x[b][c][i + p - 1][j + q - 1]   (x zero outside the image)
// as fp32 sums of exact bf16 products: a lane of one accumulator register per (o, c, p, q),
// o in the lanes, two columns (j, j + 1) per instruction, in the order (b, i, j) - a
// function of the shape alone (on a given CPU and build), so the bits do not depend on the
// thread count. They differ from oneDNN's kernel's (another order), so bf16 runs of
// ResNet-20 on AVX512-BF16 CPUs changed bits with it. Like every vdpbf16ps user (oneDNN's
// kernels too), denormal inputs and sums count as zero.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/common/bf16.h"
#include "kernels/common/dtype.h"
#include "kernels/common/image_shapes.h"

namespace noeira {

// Whether the kernel can run here: a build with AVX-512, a CPU with AVX512-BF16, and
// NOEIRA_BF16_WGRAD not "0" in the environment (that turns it off: oneDNN's kernel then,
// as before). Recorded in the results' build block.
bool bf16_wgrad_available();

// Which shapes it takes where it can run. Where oneDNN runs AMX (Sapphire and Emerald
// Rapids), oneDNN's AMX backward-weights kernel is the faster one from 16 input channels
// up: one core of an Emerald Rapids, 128 images, ResNet-20's (16,32x32), (32,16x16) and
// (64,8x8) shapes took 2.9, 2.4 and 2.2 ms there against 7.3-9.5 ms here; on the
// 3-channel stem ours took 1.6 ms against 2.5. So there ours takes Cin < 16 only
// (kFewInputChannels), unless NOEIRA_BF16_WGRAD=1 asks for every shape (tests, A/B).
// Where our AMX kernel can run as well (bf16_conv3x3_wgrad_amx.h), it takes the shapes
// whose channels come in blocks of 16 from oneDNN's, and this one the rest (kAmxTiles);
// NOEIRA_BF16_WGRAD=noamx asks for the split before it (A/B timing, older bits).
enum class Bf16WgradScope { kNone, kAll, kFewInputChannels, kAmxTiles };
Bf16WgradScope bf16_wgrad_scope();
// "none", "all", "cin<16", "amx"
const char* bf16_wgrad_scope_name(Bf16WgradScope scope);

// Whether the kernels take this shape's backward-weights pass: in their scope, bf16, 3x3,
// stride 1, padding 1, no bias, Cout a multiple of 16, an even width (in scope kAmxTiles,
// from 16 input channels up only what the AMX kernel takes: oneDNN's keeps the rest). Read
// when a shape is planned, like the two below.
bool bf16_wgrad_applies(const ConvShape& shape, DType dtype);

// Whether a shape bf16_wgrad_applies to runs on the AMX kernel (else on this one).
bool bf16_wgrad_on_tiles(const ConvShape& shape);

// Bytes of one thread's area for a slab of `images` images, on tiles or not (the planned
// bf16_wgrad_on_tiles). This kernel's: x with a zero border (images, Cin, H + 2, W + 2) and
// dy in column pairs (images, Cout / 16, H * W / 2, 16 pairs); the AMX kernel's:
// amx_wgrad_area_bytes.
size_t bf16_wgrad_area_bytes(const ConvShape& shape, int64_t images, bool on_tiles);

// dw (Cout, Cin, 3, 3), overwritten, from a slab: x (images, Cin, H, W), dy (images, Cout,
// H, W), on tiles or not as planned. `area` holds bf16_wgrad_area_bytes(shape, images,
// on_tiles) bytes, 64-byte aligned. Only for shapes bf16_wgrad_applies to.
void bf16_wgrad_slab(const ConvShape& shape, int64_t images, const bf16_t* x, const bf16_t* dy,
                     float* dw, std::byte* area, bool on_tiles);

}  // namespace noeira
