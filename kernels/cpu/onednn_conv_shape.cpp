// The CPU convolution's shape rules (onednn_conv.h): the images per slab, which shapes it
// takes, and the words its errors name a shape with.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "kernels/common/conv_shape_check.h"
#include "kernels/common/saturating.h"
#include "kernels/cpu/onednn_conv.h"

namespace noeira {

std::string describe_conv(const ConvShape& s) {
  return "convolution (B=" + std::to_string(s.batch) + ", Cin=" + std::to_string(s.in_channels) +
         ", H=" + std::to_string(s.height) + ", W=" + std::to_string(s.width) +
         ") -> Cout=" + std::to_string(s.out_channels) + ", kernel " + std::to_string(s.kernel_h) +
         "x" + std::to_string(s.kernel_w) + ", stride " + std::to_string(s.stride) + ", pad " +
         std::to_string(s.pad) + (s.has_bias ? ", bias" : ", no bias");
}

std::string describe_conv(const ConvShape& s, DType dtype) {
  return std::string(dtype_name(dtype)) + " " + describe_conv(s);
}

int64_t conv_slab_images(const ConvShape& s) {
  const int64_t pixels = sat_mul({s.height, s.width});
  // Growth also stops before a slab's largest activation tensor passes 2^24 elements, so
  // it never takes a shape past validate's oneDNN limit that 8-image slabs kept under it.
  const int64_t per_image = std::max(sat_mul({s.in_channels, pixels}),
                                     sat_mul({s.out_channels, s.out_height(), s.out_width()}));
  int64_t images = kConvSlabImages;
  while (sat_mul({images, pixels}) < kConvSlabPixels && images * 2 <= s.batch / 2 &&
         sat_mul({images * 2, per_image}) <= (int64_t{1} << 24))
    images *= 2;
  return std::min(s.batch, images);
}

Status validate(const ConvShape& s) {
  NOEIRA_TRY(check_conv_geometry(s, describe_conv(s)));
  // oneDNN 2.6 was seen to divide by zero creating a convolution over a 2^40-pixel input; a
  // slab's tensors stay below 2^31 elements (the CIFAR-10 models' largest hold about 2^18).
  const int64_t images = conv_slab_images(s);
  const int64_t largest = std::max({sat_mul({images, s.in_channels, s.height, s.width}),
                                    sat_mul({s.out_channels, s.in_channels, s.kernel_h, s.kernel_w}),
                                    sat_mul({images, s.out_channels, s.out_height(), s.out_width()})});
  if (largest > std::numeric_limits<int32_t>::max())
    return make_error("a tensor of " + describe_conv(s) + " holds " + std::to_string(largest) +
                      " elements per slab of " + std::to_string(images) +
                      " images; the CPU convolution (oneDNN) takes at most 2^31 - 1; reduce "
                      "the input size or the channels");
  return {};
}

}  // namespace noeira
