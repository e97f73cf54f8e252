// CudaOps' losses, softmax_xent and mse (contracts: kernels/op_list.inc). No
// floating-point atomics (DESIGN.md rule 3): every sum runs in an order fixed by the
// problem size and compile-time block shapes, never by scheduling, so a run repeats bit
// for bit (eager or captured). Each kernel is written once for fp32 and bf16 storage
// (load_f32 / store_f32 of kernels/common/bf16.h): the bf16 variant sums and normalises in
// fp32 in the same order, then rounds its output.
//
// Per-block partial sums go to the backend-owned LossPartials (kMaxLossBlocks, cuda_ops.h)
// and a second, single-block kernel adds them in a fixed tree. softmax_xent: one warp per
// row; with label_smoothing > 0 the row's logit sum is taken lane-strided (lane l: z[l],
// z[l + 32], ... in order) and folded by a butterfly, like the sum of exponentials.
#include <cmath>
#include <string>

#include "kernels/common/bf16.h"
#include "kernels/common/math.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/dispatch.h"

namespace noeira {

namespace cuda {

namespace {

constexpr unsigned kFullMask = 0xffffffffu;

// ---- softmax cross-entropy ----
constexpr int kLossWarps = kBlock / 32;  // rows in flight per block

// Butterfly sums: every lane ends with the same value (each pairwise add is commutative).
__device__ float warp_sum(float v) {
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(kFullMask, v, off);
  return v;
}

// Max with the lowest index among equal values, like the CPU's first-max scan.
__device__ void warp_argmax(float& v, int64_t& idx) {
  for (int off = 16; off > 0; off /= 2) {
    const float ov = __shfl_xor_sync(kFullMask, v, off);
    const int64_t oi = __shfl_xor_sync(kFullMask, idx, off);
    if (ov > v || (ov == v && oi < idx)) v = ov, idx = oi;
  }
}

// One warp per row: max, sum of exponentials, loss, dlogits. Each block writes the sum
// of its rows' losses (in warp order) to partials[blockIdx.x]; loss_finish adds those.
// T is the logits' and dlogits' storage (fp32 or bf16); the math is fp32. Label smoothing
// eps > 0 (uniform over the grid, so every lane takes the same branch) also sums the
// row's logits: lane l adds z[l], z[l + 32], ... in order, the lanes folded by warp_sum;
// eps = 0 skips that sum and gives the plain one-hot bits (kernels/common/math.h).
template <class T>
__global__ void softmax_xent_kernel(const T* logits, const int32_t* labels, int64_t B,
                                    int64_t C, float eps, T* dlogits, LossPartial* partials) {
  __shared__ double warp_loss[kLossWarps];
  __shared__ long long warp_correct[kLossWarps];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const float inv_b = 1.0f / static_cast<float>(B);
  double loss = 0.0;
  long long correct = 0;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kLossWarps + warp; row < B;
       row += static_cast<int64_t>(gridDim.x) * kLossWarps) {
    const T* z = logits + row * C;  // (C)
    float zmax = -INFINITY;
    int64_t arg = INT64_MAX;
    if (lane < C) zmax = load_f32(z[lane]), arg = lane;
    for (int64_t j = lane + 32; j < C; j += 32)
      if (load_f32(z[j]) > zmax) zmax = load_f32(z[j]), arg = j;
    warp_argmax(zmax, arg);
    float sum = 0.0f;
    for (int64_t j = lane; j < C; j += 32) sum += expf(load_f32(z[j]) - zmax);
    sum = warp_sum(sum);
    float zsum = 0.0f;
    if (eps > 0.0f) {
      for (int64_t j = lane; j < C; j += 32) zsum += load_f32(z[j]);
      zsum = warp_sum(zsum);
    }
    const int32_t y = labels[row];
    const bool valid = y >= 0 && y < C;  // a bad label gives a NaN loss, never a stray read
    if (lane == 0) {
      loss += valid ? xent_row_loss(logf(sum), zmax, load_f32(z[y]), zsum, eps, C)
                    : static_cast<double>(NAN);
      correct += (arg == y);
    }
    if (dlogits) {
      const float inv_sum = 1.0f / sum;
      T* d = dlogits + row * C;  // (C)
      for (int64_t j = lane; j < C; j += 32) {
        const float target = smoothed_target(j, y, eps, C);  // 1 / 0 when eps = 0
        store_f32(d[j], (expf(load_f32(z[j]) - zmax) * inv_sum - target) * inv_b);
      }
    }
  }
  if (lane == 0) warp_loss[warp] = loss, warp_correct[warp] = correct;
  __syncthreads();
  if (threadIdx.x == 0) {
    double l = 0.0;
    long long c = 0;
    for (int w = 0; w < kLossWarps; ++w) l += warp_loss[w], c += warp_correct[w];
    partials[blockIdx.x] = LossPartial{l, c};
  }
}

// ---- mean squared error ----
// T is the predictions' and dpred's storage (fp32 or bf16); targets and math are fp32.
template <class T>
__global__ void mse_kernel(const T* pred, const float* target, int64_t n, T* dpred,
                           LossPartial* partials) {
  __shared__ double block_sq[kBlock];
  const float scale = 2.0f / static_cast<float>(n);
  double sq = 0.0;
  for (int64_t i = global_thread(); i < n; i += grid_stride()) {
    const float d = load_f32(pred[i]) - target[i];
    sq += static_cast<double>(d) * d;
    if (dpred) store_f32(dpred[i], scale * d);
  }
  block_sq[threadIdx.x] = sq;
  __syncthreads();
  for (int half = kBlock / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) block_sq[threadIdx.x] += block_sq[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = LossPartial{block_sq[0], 0};
}

// One block adds the per-block partials in a fixed order and updates the device-resident
// accumulators: loss_sum += total / loss_divisor, history[batch] = total / history_divisor.
__global__ void loss_finish_kernel(const LossPartial* partials, int count, LossStats* stats,
                                   float* history, const StepCounters* counters,
                                   int64_t samples, double loss_divisor, double history_divisor,
                                   bool add_correct) {
  __shared__ double loss[kBlock];
  __shared__ long long correct[kBlock];
  double l = 0.0;
  long long c = 0;
  for (int i = threadIdx.x; i < count; i += kBlock) l += partials[i].loss, c += partials[i].correct;
  loss[threadIdx.x] = l;
  correct[threadIdx.x] = c;
  __syncthreads();
  for (int half = kBlock / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      loss[threadIdx.x] += loss[threadIdx.x + half];
      correct[threadIdx.x] += correct[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const double total = loss[0];
    stats->loss_sum += total / loss_divisor;
    if (add_correct) stats->correct += correct[0];
    stats->count += samples;
    if (history) history[counters->batch_in_epoch] = static_cast<float>(total / history_divisor);
  }
}

int loss_blocks(int64_t work_per_block_units) {
  return static_cast<int>(work_per_block_units < 1 ? 1
                          : work_per_block_units > kMaxLossBlocks ? kMaxLossBlocks
                                                                  : work_per_block_units);
}

template <class T>
cudaError_t softmax_xent_launch(cudaStream_t stream, const T* logits, const int32_t* labels,
                                int64_t B, int64_t C, float eps, T* dlogits, LossStats* stats,
                                float* loss_history, const StepCounters* counters,
                                LossPartial* partials) {
  if (B == 0 || C == 0) return cudaSuccess;
  const int blocks = loss_blocks((B + kLossWarps - 1) / kLossWarps);
  softmax_xent_kernel<<<blocks, kBlock, 0, stream>>>(logits, labels, B, C, eps, dlogits,
                                                     partials);
  loss_finish_kernel<<<1, kBlock, 0, stream>>>(partials, blocks, stats, loss_history, counters,
                                               B, 1.0, static_cast<double>(B), true);
  return cudaGetLastError();
}

template <class T>
cudaError_t mse_launch(cudaStream_t stream, const T* pred, const float* target, int64_t B,
                       int64_t D, T* dpred, LossStats* stats, float* loss_history,
                       const StepCounters* counters, LossPartial* partials) {
  const int64_t n = B * D;
  if (n == 0) return cudaSuccess;
  const int blocks = loss_blocks((n + kBlock - 1) / kBlock);
  mse_kernel<<<blocks, kBlock, 0, stream>>>(pred, target, n, dpred, partials);
  loss_finish_kernel<<<1, kBlock, 0, stream>>>(partials, blocks, stats, loss_history, counters,
                                               B, static_cast<double>(D),
                                               static_cast<double>(n), false);
  return cudaGetLastError();
}

cudaError_t launch_softmax_xent(cudaStream_t stream, ConstView logits, const int32_t* labels,
                                int64_t B, int64_t C, float label_smoothing, View dlogits,
                                LossStats* stats,
                                float* loss_history, const StepCounters* counters,
                                LossPartial* partials) {
  const char* op = "softmax_xent";
  expect_elems(op, B * C, {logits, dlogits});
  return dispatch_float(op, {logits, dlogits}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    return softmax_xent_launch(stream, logits.as<T>(), labels, B, C, label_smoothing,
                               dlogits.as<T>(), stats, loss_history, counters, partials);
  });
}

cudaError_t launch_mse(cudaStream_t stream, ConstView pred, const float* target, int64_t B,
                       int64_t D, View dpred, LossStats* stats, float* loss_history,
                       const StepCounters* counters, LossPartial* partials) {
  const char* op = "mse";
  expect_elems(op, B * D, {pred, dpred});
  return dispatch_float(op, {pred, dpred}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    return mse_launch(stream, pred.as<T>(), target, B, D, dpred.as<T>(), stats, loss_history,
                      counters, partials);
  });
}

}  // namespace

}  // namespace cuda

void CudaOps::softmax_xent(ConstView logits, const int32_t* labels, int64_t B, int64_t C,
                           float label_smoothing, View dlogits, LossStats* stats,
                           float* loss_history, const StepCounters* counters) {
  OpScope scope(*state_, "softmax_xent");
  if (!(label_smoothing >= 0.0f && label_smoothing < 1.0f))
    return fail("the label smoothing " + std::to_string(label_smoothing) +
                " is outside [0, 1)");
  check(cuda::launch_softmax_xent(stream_, logits, labels, B, C, label_smoothing, dlogits, stats,
                                  loss_history, counters, loss_partials_),
        "softmax_xent_kernel");
}

void CudaOps::mse(ConstView pred, const float* target, int64_t B, int64_t D, View dpred,
                  LossStats* stats, float* loss_history, const StepCounters* counters) {
  OpScope scope(*state_, "mse");
  check(cuda::launch_mse(stream_, pred, target, B, D, dpred, stats, loss_history, counters,
                         loss_partials_),
        "mse_kernel");
}

}  // namespace noeira
