// The checks every backend's convolution makes of a shape before planning it, with one
// wording (host code: the CPU's onednn_conv_shape.cpp, CUDA's cudnn_conv_plan.cpp). Each
// backend then adds its own library's limits.
#pragma once
#include <cstdint>
#include <string>

#include "kernels/common/error.h"
#include "kernels/common/image_shapes.h"

namespace noeira {

// An Error naming the first bad field of s: a size or the stride not positive, a negative
// padding, a kernel larger than the padded input. `what` names the shape in the message.
inline Status check_conv_geometry(const ConvShape& s, const std::string& what) {
  const auto positive = [&](int64_t v, const char* name) -> Status {
    if (v > 0) return {};
    return make_error(std::string(name) + " must be positive in " + what);
  };
  NOEIRA_TRY(positive(s.batch, "the batch"));
  NOEIRA_TRY(positive(s.in_channels, "the input channels"));
  NOEIRA_TRY(positive(s.height, "the height"));
  NOEIRA_TRY(positive(s.width, "the width"));
  NOEIRA_TRY(positive(s.out_channels, "the output channels"));
  NOEIRA_TRY(positive(s.kernel_h, "the kernel height"));
  NOEIRA_TRY(positive(s.kernel_w, "the kernel width"));
  NOEIRA_TRY(positive(s.stride, "the stride"));
  if (s.pad < 0) return make_error("the padding must not be negative in " + what);
  if (s.height + 2 * s.pad < s.kernel_h || s.width + 2 * s.pad < s.kernel_w)
    return make_error("the kernel is larger than the padded input in " + what);
  return {};
}

}  // namespace noeira
