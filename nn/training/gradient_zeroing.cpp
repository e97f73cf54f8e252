#include "nn/training/gradient_zeroing.h"

#include <algorithm>

namespace noeira {

std::vector<ByteRange> gradient_zero_ranges(const ParamRegistry& params, size_t arena_bytes,
                                            bool in_place) {
  std::vector<ByteRange> skip;  // the overwritten gradients left out, by offset
  if (in_place)
    for (const ParamInfo& p : params.all())
      if (p.grad_overwritten && p.grad.bytes >= kSkipMinBytes)
        skip.push_back({p.grad.offset, p.grad.bytes});
  std::sort(skip.begin(), skip.end(),
            [](const ByteRange& a, const ByteRange& b) { return a.offset < b.offset; });
  std::vector<ByteRange> zero;
  size_t at = 0;
  for (const ByteRange& s : skip) {
    if (s.offset > at) zero.push_back({at, s.offset - at});
    at = std::max(at, s.offset + s.bytes);
  }
  if (arena_bytes > at) zero.push_back({at, arena_bytes - at});
  return zero;
}

}  // namespace noeira
