// Which bytes of the gradient arena the step zeroes before its backward. Every gradient op
// accumulates, except where a parameter's one writer overwrites it whole (ParamInfo::
// grad_overwritten: a Linear layer's own weight); those gradients need no zeroing. Left out
// only from kSkipMinBytes up, so the runs stay few (one fill each; on CUDA one memset node
// each in a captured step): mlp's fp32 step at one thread zeroed 2.7 MB in 0.096 ms.
#pragma once
#include <cstddef>
#include <vector>

#include "nn/params.h"

namespace noeira {

struct ByteRange {
  size_t offset = 0, bytes = 0;
  bool operator==(const ByteRange&) const = default;
};

inline constexpr size_t kSkipMinBytes = size_t{64} << 10;

// The runs of [0, arena_bytes) to zero, in order: all of it unless `in_place` (the sync
// keeps each gradient at its own offset: GradientSync::gradients_in_place), else all but
// the overwritten gradients of kSkipMinBytes or more.
std::vector<ByteRange> gradient_zero_ranges(const ParamRegistry& params, size_t arena_bytes,
                                            bool in_place);

}  // namespace noeira
