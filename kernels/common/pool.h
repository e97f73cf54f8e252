// Pooling's index and comparison rules, written once for the CPU loops and the CUDA
// kernels (DESIGN.md rule 5).
#pragma once
#include <cstdint>

#include "kernels/common/hd.h"

namespace noeira {

// Whether v replaces a max-pooling window's maximum so far, scanning in row-major order:
// larger, or NaN — torch's `(val > maxval) || isnan(val)`, so ties keep the first maximum
// and the last NaN of a window wins. (v != v is NaN's test on host and device alike.)
// `|`, not `||`: no short-circuit branch (the CPU loops select without branches).
NOEIRA_HD bool pool_takes_max(float v, float best) { return (v > best) | (v != v); }

// The windows (outputs) that cover input index i along one axis of `out` outputs: o in
// [lo, hi] (empty when lo > hi), window o spanning o * stride - pad .. o * stride - pad + k - 1.
struct PoolCover {
  int64_t lo, hi;
};

NOEIRA_HD PoolCover pool_covering(int64_t i, int64_t k, int64_t stride, int64_t pad,
                                  int64_t out) {
  const int64_t first = i + pad - k + 1;  // smallest o * stride that still reaches i
  const int64_t lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  int64_t hi = (i + pad) / stride;
  if (hi > out - 1) hi = out - 1;
  return PoolCover{lo, hi};
}

}  // namespace noeira
