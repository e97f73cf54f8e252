// The one check of a convolution's dx epilogue (kernels/ops.h ConvDxEpilogue), for both
// backends: both operands or neither, each with x's elements and dx's dtype, and a dx to
// write.
#pragma once
#include <string>

#include "kernels/common/image_shapes.h"
#include "kernels/ops.h"

namespace noeira {

// "" when the epilogue fits dx (x's shape); else what is wrong, for the op's error.
inline std::string conv_dx_epilogue_problem(const ConvShape& s, ConstView dx,
                                            const ConvDxEpilogue& epi) {
  if (epi.residual.empty() && epi.relu_post.empty()) return {};
  if (epi.residual.empty() || epi.relu_post.empty())
    return "the dx epilogue needs both its residual and its relu_post, or neither";
  if (dx.empty()) return "a dx epilogue without a dx to write";
  for (const ConstView& v : {epi.residual, epi.relu_post})
    if (v.n != s.x_elems() || v.dtype != dx.dtype)
      return std::string("the dx epilogue's operands need ") + std::to_string(s.x_elems()) +
             " " + dtype_name(dx.dtype) + " elements (x's); one has " + std::to_string(v.n) +
             " " + dtype_name(v.dtype);
  return {};
}

}  // namespace noeira
