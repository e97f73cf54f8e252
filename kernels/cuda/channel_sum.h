// The fixed order of the per-channel sums that reduce (B, C, S) tensors over (B, S):
// BatchNorm's statistics and gradients (batchnorm.cu), the convolution's bias gradient
// (conv2d.cu); their kernels are channel_sum.cuh's. Plain C++, so that cuDNN's plan
// (cudnn_conv_plan.cpp) can size its workspace from it.
//
// A channel's n = B * S values (b, s) are numbered j = b * S + s and cut into `chunks`
// consecutive chunks of `per_chunk` values (the last may be shorter). In a chunk, thread
// t of kChannelSumThreads sums j = begin + t, begin + t + kChannelSumThreads, ... in
// double, in ascending order; the thread sums are folded pairwise (t += t + h, h = 128,
// 64, ..., 1): the chunk's partial, written to the workspace. A finishing kernel adds a
// channel's partials in chunk order. The order depends on (B, C, S) only.
#pragma once
#include <cstddef>
#include <cstdint>

namespace noeira::cuda {

inline constexpr int kChannelSumThreads = 256;
inline constexpr int64_t kChannelSumMaxChunks = 64;
inline constexpr int64_t kChannelSumMinChunk = 2048;  // values; a smaller chunk is not worth it

struct ChannelSumPlan {
  int64_t chunks = 1;     // >= 1
  int64_t per_chunk = 0;  // every chunk but the last has exactly this many values
};

inline ChannelSumPlan channel_sum_plan(int64_t per_channel) {
  ChannelSumPlan p;
  if (per_channel <= 0) return p;
  int64_t chunks = per_channel / kChannelSumMinChunk;
  chunks = chunks < 1 ? 1 : (chunks > kChannelSumMaxChunks ? kChannelSumMaxChunks : chunks);
  p.per_chunk = (per_channel + chunks - 1) / chunks;
  p.chunks = (per_channel + p.per_chunk - 1) / p.per_chunk;
  return p;
}

// Bytes of the partials of C channels of n values each: two doubles per (channel, chunk),
// rounded up to 256.
inline size_t channel_partials_bytes(int64_t channels, int64_t per_channel) {
  const size_t b = static_cast<size_t>(channels * channel_sum_plan(per_channel).chunks) * 16u;
  return (b + 255u) / 256u * 256u;
}

}  // namespace noeira::cuda
