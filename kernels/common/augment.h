// The Augmenter's draws and pixel mapping (random crop with padding, then horizontal
// flip), written once for the CPU loop, the CUDA kernel and the twin (reference/), which
// must agree bit for bit (docs/rng.md, "Augmentation").
#pragma once
#include <cstdint>

#include "kernels/common/hd.h"
#include "kernels/common/image_shapes.h"
#include "kernels/common/philox.h"

namespace noeira {

// Sample i of epoch e: block i of stream e, purpose kAugment. Crop offsets in
// [0, 2 pad] (in the padded image, as torchvision's RandomCrop(padding=pad) picks its top
// and left corner), and a flip when word 2 is odd.
struct AugmentDraw {
  int32_t top, left;
  bool flip;
};

NOEIRA_HD AugmentDraw augment_draw(uint64_t seed, uint32_t epoch, uint32_t sample, int pad,
                                   bool flip) {
  const Philox4x32Out b = philox_block(seed, RngPurpose::kAugment, epoch, sample);
  const uint32_t span = static_cast<uint32_t>(2 * pad + 1);
  return AugmentDraw{static_cast<int32_t>(b.v[0] % span), static_cast<int32_t>(b.v[1] % span),
                     flip && (b.v[2] & 1u) != 0u};
}

// Source pixel (row, col) of output pixel (y, x) of an H x W image, or -1 when it falls
// in the padding. The crop comes first, then the flip of the cropped image:
//   out(y, x) = padded(y + top, x' + left), x' = flip ? W - 1 - x : x,
//   padded(r, c) = src(r - pad, c - pad).
NOEIRA_HD int64_t augment_source(const AugmentDraw& d, int pad, int64_t H, int64_t W, int64_t y,
                                 int64_t x) {
  const int64_t xs = d.flip ? W - 1 - x : x;
  const int64_t r = y + d.top - pad;
  const int64_t c = xs + d.left - pad;
  if (r < 0 || r >= H || c < 0 || c >= W) return -1;
  return r * W + c;
}

}  // namespace noeira
