// Host-side launchers for the image ops' own kernels (pooling.cu, batchnorm.cu,
// conv_kernels.cu, image_elementwise.cu); contracts in kernels/ops.h. Each enqueues on
// `stream` and returns cudaGetLastError(), dispatching once on its views' dtype (fp32 or
// bf16 storage, fp32 math). Nothing here allocates, synchronises or uses floating-point
// atomics; every reduction runs in an order fixed by the shape (DESIGN.md rule 3).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/ops.h"

namespace noeira::cuda {

// ---- Per-channel sums (BatchNorm statistics, convolution bias gradients) ----
// A channel's n = B * S values (b, s) are numbered j = b * S + s and cut into `chunks`
// consecutive chunks of `per_chunk` values (the last may be shorter). In a chunk, thread
// t of kChannelSumThreads sums j = begin + t, begin + t + kChannelSumThreads, ... in
// double, in ascending order; the thread sums are folded pairwise (t += t + h, h = 128,
// 64, ..., 1): the chunk's partial, written to the workspace. A finishing kernel adds a
// channel's partials in chunk order. The order depends on (B, C, S) only.
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

// ---- pooling.cu: Ops::maxpool2d_* and avgpool2d_* ----
// Forward: one thread per output element. Backward: one thread per input element, which
// gathers the windows that cover it in row-major order (no scatter, no atomics).
cudaError_t launch_maxpool2d_forward(cudaStream_t stream, const PoolShape& s, ConstView x,
                                     View y, int32_t* argmax);
cudaError_t launch_maxpool2d_backward(cudaStream_t stream, const PoolShape& s, ConstView dy,
                                      const int32_t* argmax, View dx);
cudaError_t launch_avgpool2d_forward(cudaStream_t stream, const PoolShape& s, ConstView x,
                                     View y);
cudaError_t launch_avgpool2d_backward(cudaStream_t stream, const PoolShape& s, ConstView dy,
                                      View dx);

// ---- batchnorm.cu: Ops::batchnorm_* ----
// Workspace: the channel partials (channel_partials_bytes), then two floats per channel
// (the forward's mean and invstd; the backward's mean of dy and of dy * xhat).
size_t batchnorm_workspace_bytes(const NormShape& s);
cudaError_t launch_batchnorm_forward_train(cudaStream_t stream, const NormShape& s, ConstView x,
                                           const float* gamma, const float* beta,
                                           const BatchNormHyper& h, View y, float* save_mean,
                                           float* save_invstd, float* running_mean,
                                           float* running_var, void* workspace);
cudaError_t launch_batchnorm_forward_eval(cudaStream_t stream, const NormShape& s, ConstView x,
                                          const float* gamma, const float* beta,
                                          const float* running_mean, const float* running_var,
                                          const BatchNormHyper& h, View y);
cudaError_t launch_batchnorm_backward(cudaStream_t stream, const NormShape& s, ConstView dy,
                                      ConstView x, const float* gamma, const float* save_mean,
                                      const float* save_invstd, View dx, float* dgamma,
                                      float* dbeta, void* workspace);

// ---- conv_kernels.cu: the convolution's own kernels around cuDNN ----
// y (B, C, S) = in + bias[c], rounded once to y's dtype. `in` is fp32 (B, C, S); it may
// be y's own memory when y is fp32.
cudaError_t launch_channel_bias_add(cudaStream_t stream, const float* in, const float* bias,
                                    View y, int64_t B, int64_t C, int64_t S);
// db[c] += sum of dy (B, C, S) over (B, S), in double in the channel-sum order above;
// `partials` holds channel_partials_bytes(C, B * S) bytes.
cudaError_t launch_channel_bias_grad(cudaStream_t stream, ConstView dy, int64_t B, int64_t C,
                                     int64_t S, float* db, void* partials);

// ---- image_elementwise.cu: one thread per output element (unpatchify: per input) ----
cudaError_t launch_shortcut_forward(cudaStream_t stream, const ShortcutShape& s, ConstView x,
                                    View y);
cudaError_t launch_shortcut_backward(cudaStream_t stream, const ShortcutShape& s, ConstView dy,
                                     View dx);
// The step is read from counters->step on the device.
cudaError_t launch_dropout(cudaStream_t stream, ConstView x, View y, float p, uint64_t seed,
                           uint32_t layer, const StepCounters* counters);
// Ops::patchify (a gather, one thread per element of y) and Ops::unpatchify (the inverse
// permutation as a scatter, one thread per element of dy: each element of dx is written
// once); fp32 or bf16, the stored bits copied. The caller (CudaOps) checks the shape.
cudaError_t launch_patchify(cudaStream_t stream, const PatchShape& s, ConstView x, View y);
cudaError_t launch_unpatchify(cudaStream_t stream, const PatchShape& s, ConstView dy, View dx);
cudaError_t launch_augment_crop_flip(cudaStream_t stream, const AugmentSpec& spec,
                                     const float* src, float* dst, uint64_t seed,
                                     uint32_t epoch);

}  // namespace noeira::cuda
