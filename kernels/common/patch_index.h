// PatchShape::patch_source in an index type I (kernels/common/fast_divmod.h): the CUDA
// patch kernels divide with multiply-shifts below 2^31 elements instead of five 64-bit
// divides per element. Same result as patch_source for every i < elems()
// (tests/unit/test_patch_index.cpp).
#pragma once
#include <cstdint>

#include "kernels/common/fast_divmod.h"
#include "kernels/common/image_shapes.h"

namespace noeira {

template <class I>
struct PatchIndex {
  Divider<I> by_D, by_N, by_pp, by_patch, by_grid_w;  // patch_elems, patches, patch^2, ...
  int64_t channels, height, width, patch;

  explicit PatchIndex(const PatchShape& s)
      : by_D(s.patch_elems()), by_N(s.patches()), by_pp(s.patch * s.patch), by_patch(s.patch),
        by_grid_w(s.grid_w()), channels(s.channels), height(s.height), width(s.width),
        patch(s.patch) {}

  // The index in x of element i of y, as PatchShape::patch_source(i).
  NOEIRA_HD int64_t source(I i) const {
    I d, n, r, kx, px;
    const I b = by_N.divmod(by_D.divmod(i, d), n);  // i = (b, n, d) over (B, N, D)
    const I c = by_pp.divmod(d, r);                 // d = (c, ky, kx) over (C, p, p)
    const I ky = by_patch.divmod(r, kx);
    const I py = by_grid_w.divmod(n, px);           // n = (py, px) over the patch grid
    return ((static_cast<int64_t>(b) * channels + c) * height + static_cast<int64_t>(py) * patch +
            ky) * width + static_cast<int64_t>(px) * patch + kx;
  }
};

}  // namespace noeira
