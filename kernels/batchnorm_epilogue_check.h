// The one check of a BatchNorm epilogue's operands (kernels/ops.h BatchNormEpilogue), for
// both backends: its residual, when there is one, has x's elements and dtype.
#pragma once
#include <string>

#include "kernels/common/image_shapes.h"
#include "kernels/ops.h"

namespace noeira {

// "" when the epilogue fits x (B, C, S); else what is wrong, for the op's error.
inline std::string batchnorm_epilogue_problem(const NormShape& s, ConstView x,
                                              const BatchNormEpilogue& epi) {
  if (epi.residual.empty()) return {};
  if (epi.residual.n == s.elems() && epi.residual.dtype == x.dtype) return {};
  return std::string("the epilogue's residual has ") + std::to_string(epi.residual.n) + " " +
         dtype_name(epi.residual.dtype) + " elements; x has " + std::to_string(s.elems()) + " " +
         dtype_name(x.dtype);
}

}  // namespace noeira
