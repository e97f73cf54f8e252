// CudaOps::augment_crop_flip (contract: kernels/op_list.inc): one thread per output
// element; each sample's crop and flip are drawn from Philox by its index
// (kernels/common/augment.h), so results depend on neither the launch shape nor
// scheduling.
#include <string>

#include "kernels/common/augment.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"

namespace noeira {

namespace cuda {

namespace {

// dst(i, c, y, x) = src(i, c, source pixel) or fill[c] in the padding.
__global__ void augment_kernel(AugmentSpec spec, const float* src, float* dst, uint64_t seed,
                               uint32_t epoch) {
  const int64_t H = spec.height, W = spec.width, C = spec.channels;
  const int64_t n = spec.count * C * H * W;
  for (int64_t i = global_thread(); i < n; i += grid_stride()) {
    const int64_t x = i % W, y = (i / W) % H, c = (i / (W * H)) % C, sample = i / (W * H * C);
    const AugmentDraw d =
        augment_draw(seed, epoch, static_cast<uint32_t>(sample), spec.pad, spec.flip);
    const int64_t from = augment_source(d, spec.pad, H, W, y, x);
    dst[i] = from < 0 ? spec.fill[c] : src[(sample * C + c) * H * W + from];
  }
}

cudaError_t launch_augment_crop_flip(cudaStream_t stream, const AugmentSpec& spec,
                                     const float* src, float* dst, uint64_t seed,
                                     uint32_t epoch) {
  const int64_t n = spec.count * spec.channels * spec.height * spec.width;
  if (n == 0) return cudaSuccess;
  augment_kernel<<<grid_for(n), kBlock, 0, stream>>>(spec, src, dst, seed, epoch);
  return cudaGetLastError();
}

}  // namespace

}  // namespace cuda

void CudaOps::augment_crop_flip(const AugmentSpec& spec, const float* src, float* dst,
                                uint64_t seed, uint32_t epoch) {
  OpScope scope(*state_, "augment_crop_flip");
  if (spec.channels < 0 || spec.channels > AugmentSpec::kMaxChannels || spec.count < 0 ||
      spec.height < 0 || spec.width < 0 || spec.pad < 0)
    return fail("invalid augmentation of " + std::to_string(spec.count) + "x" +
                std::to_string(spec.channels) + "x" + std::to_string(spec.height) + "x" +
                std::to_string(spec.width) + " images (pad " + std::to_string(spec.pad) +
                "; at most " + std::to_string(AugmentSpec::kMaxChannels) + " channels)");
  check(cuda::launch_augment_crop_flip(stream_, spec, src, dst, seed, epoch), "augment_kernel");
}

}  // namespace noeira
