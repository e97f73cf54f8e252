// CpuOps::augment_crop_flip (contract: kernels/op_list.inc): each sample's crop and flip
// are drawn from Philox by its index (kernels/common/augment.h), so the thread count
// changes nothing.
#include <string>

#include "kernels/common/augment.h"
#include "kernels/cpu/cpu_ops.h"

namespace noeira {

void CpuOps::augment_crop_flip(const AugmentSpec& spec, const float* src, float* dst,
                               uint64_t seed, uint32_t epoch) {
  if (spec.channels > AugmentSpec::kMaxChannels)
    cpu_op_failed("augment_crop_flip",
                  make_error(std::to_string(spec.channels) + " channels; fill holds " +
                             std::to_string(AugmentSpec::kMaxChannels)));
  const int64_t C = spec.channels, H = spec.height, W = spec.width;
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (int64_t n = 0; n < spec.count; ++n) {
    const AugmentDraw d = augment_draw(seed, epoch, static_cast<uint32_t>(n), spec.pad, spec.flip);
    for (int64_t c = 0; c < C; ++c) {
      const float* sp = src + (n * C + c) * H * W;
      float* dp = dst + (n * C + c) * H * W;
      for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x) {
          const int64_t from = augment_source(d, spec.pad, H, W, y, x);
          dp[y * W + x] = from < 0 ? spec.fill[c] : sp[from];
        }
    }
  }
}

}  // namespace noeira
