// The per-channel partial sums of channel_sum.h, for kernels that reduce (B, C, S) tensors
// over (B, S): BatchNorm's statistics and gradients, the convolution's bias gradient. Two
// double sums per channel, in the order stated there.
#pragma once
#include <cstdint>

#include "kernels/cuda/channel_sum.h"
#include "kernels/cuda/index.cuh"

namespace noeira::cuda {

// Grid (chunks, min(C, 65535)); block kChannelSumThreads. Block (k, y) writes chunk k's
// partial of channels y, y + gridDim.y, ... to partials[c * chunks + k]. f(i, c) returns
// the two terms of element i (a flat (B, C, S) index) of channel c. I: the index type of
// j < n = B * S (index.cuh).
template <class F, class I>
__global__ void channel_partials_kernel(F f, int64_t C, Divider<I> S, I n, ChannelSumPlan plan,
                                        double2* partials) {
  __shared__ double sum_a[kChannelSumThreads];
  __shared__ double sum_b[kChannelSumThreads];
  const int t = threadIdx.x;
  const int64_t k = blockIdx.x;
  const int64_t first = k * plan.per_chunk;
  const I begin = static_cast<I>(first);
  const I end = first + plan.per_chunk < static_cast<int64_t>(n)
                    ? static_cast<I>(first + plan.per_chunk) : n;
  for (int64_t c = blockIdx.y; c < C; c += gridDim.y) {
    double a = 0.0, b = 0.0;
    for (I j = begin + t; j < end; j += kChannelSumThreads) {
      const I bi = S.div(j), si = j - bi * S.value();
      const double2 v = f((static_cast<int64_t>(bi) * C + c) * S.value() + si, c);
      a += v.x;
      b += v.y;
    }
    sum_a[t] = a;
    sum_b[t] = b;
    __syncthreads();
    for (int h = kChannelSumThreads / 2; h > 0; h /= 2) {
      if (t < h) {
        sum_a[t] += sum_a[t + h];
        sum_b[t] += sum_b[t + h];
      }
      __syncthreads();
    }
    if (t == 0) partials[c * plan.chunks + k] = make_double2(sum_a[0], sum_b[0]);
    __syncthreads();  // the next channel reuses the shared sums
  }
}

template <class F>
void launch_channel_partials(cudaStream_t stream, F f, int64_t B, int64_t C, int64_t S,
                             double2* partials) {
  const int64_t n = B * S;
  const ChannelSumPlan plan = channel_sum_plan(n);
  const dim3 grid(static_cast<unsigned>(plan.chunks),
                  static_cast<unsigned>(C < 65535 ? C : 65535));
  with_index(n, [&](auto index) {
    using I = typename decltype(index)::type;
    channel_partials_kernel<<<grid, kChannelSumThreads, 0, stream>>>(
        f, C, Divider<I>(S), static_cast<I>(n), plan, partials);
  });
}

// Channel c's total: its partials added in chunk order.
__device__ __forceinline__ double2 channel_total(const double2* partials, int64_t c,
                                                 int64_t chunks) {
  double2 s = partials[c * chunks];
  for (int64_t k = 1; k < chunks; ++k) {
    const double2 p = partials[c * chunks + k];
    s.x += p.x;
    s.y += p.y;
  }
  return s;
}

}  // namespace noeira::cuda
