// Host-side launchers for our own CUDA kernels (the .cu files). Each enqueues on
// `stream` and returns cudaGetLastError(), so CudaOps can name the op that failed.
// Nothing here allocates or synchronises.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/ops.h"

namespace noeira::cuda {

// ---- elementwise.cu ----
// The element-wise ops of kernels/ops.h (contracts there). Each launcher checks and
// dispatches once on its views' dtype (kernels/dispatch.h) to a kernel template over the
// storage type (vec8.cuh): fp32 launches keep scalar loops; bf16 ones move 16-byte groups
// when every buffer is 16-byte aligned (the same bits either way).
cudaError_t launch_bias_act(cudaStream_t stream, const float* acc, const float* bias, View y,
                            View pre, int64_t M, int64_t N, Act act);
cudaError_t launch_act_forward(cudaStream_t stream, ConstView x, View y, Act act);
cudaError_t launch_act_backward(cudaStream_t stream, ConstView dy, ConstView pre,
                                ConstView post, View dx, Act act);
cudaError_t launch_add(cudaStream_t stream, ConstView a, ConstView b, View y);
cudaError_t launch_cast(cudaStream_t stream, ConstView x, View y);
// C(M,N) with row stride ldc = beta * C (beta == 0 writes zeros): a GEMM with K == 0.
cudaError_t launch_scale_rows(cudaStream_t stream, float* C, int64_t M, int64_t N, int64_t ldc,
                              float beta);
// Ops::adam and Ops::sgd; float4 accesses when every buffer is 16-byte aligned.
cudaError_t launch_adam(cudaStream_t stream, float* p, const float* g, float* m, float* v,
                        int64_t n, const AdamHyper& h, const StepCounters* counters);
cudaError_t launch_sgd(cudaStream_t stream, float* p, const float* g, float* buf, int64_t n,
                       const SgdHyper& h, const StepCounters* counters);
// step += 1, batch_in_epoch += 1 (one thread).
cudaError_t launch_advance(cudaStream_t stream, StepCounters* counters);
// Fails with cudaErrorNoKernelImageForDevice when this build has no code for the device.
cudaError_t check_kernel_image();

// ---- reductions.cu ----
// Per-block partial sums of a loss, reduced in a second, single-block kernel.
struct LossPartial {
  double loss;
  long long correct;
};
// The most blocks a loss kernel uses; the backend owns this many LossPartials.
inline constexpr int kMaxLossBlocks = 1024;

// Ops::bias_grad, fp32 or bf16 dy, in the fixed order of kernels/common/column_sum.h.
// `partials` is the planned reduction workspace (kColumnSumWorkspaceBytes); null, or
// smaller, runs the sum as one chunk (parallel over columns only: slower for large M).
cudaError_t launch_bias_grad(cudaStream_t stream, ConstView dy, float* db, int64_t M, int64_t N,
                             float* partials, size_t partial_bytes);
// Ops::softmax_xent and Ops::mse, fp32 or bf16 logits / predictions. `partials` holds
// kMaxLossBlocks entries of backend-owned scratch. softmax_xent: one warp per row; with
// label_smoothing > 0 the row's logit sum is taken lane-strided (lane l: z[l], z[l + 32],
// ... in order) and folded by a butterfly, like the sum of exponentials; the caller
// (CudaOps) checks label_smoothing in [0, 1).
cudaError_t launch_softmax_xent(cudaStream_t stream, ConstView logits, const int32_t* labels,
                                int64_t B, int64_t C, float label_smoothing, View dlogits,
                                LossStats* stats, float* loss_history,
                                const StepCounters* counters, LossPartial* partials);
cudaError_t launch_mse(cudaStream_t stream, ConstView pred, const float* target, int64_t B,
                       int64_t D, View dpred, LossStats* stats, float* loss_history,
                       const StepCounters* counters, LossPartial* partials);

// ---- gather.cu ----
// Ops::gather_rows: fp32 -> fp32, fp32 -> bf16 (gather + boundary cast), int32 -> int32;
// 16-byte (or, for the cast, 8-element) accesses when the rows and buffers allow.
cudaError_t launch_gather_rows(cudaStream_t stream, ConstView src, const int32_t* perm,
                               int64_t rows, int64_t row_elems, const StepCounters* counters,
                               View dst);

// ---- batch_windows.cu ----
// Ops::batch_windows: one thread per (row, position), the step read from counters. The
// caller (CudaOps) checks the shape: B, T >= 0, n_tokens > T.
cudaError_t launch_batch_windows(cudaStream_t stream, const int32_t* corpus, int64_t n_tokens,
                                 uint64_t seed, const StepCounters* counters, int64_t B,
                                 int64_t T, int64_t first_row, int32_t* inputs, int32_t* targets);

// ---- shuffle.cu ----
// Bytes of workspace launch_shuffle needs for n elements (keys in/out, values in, cub's
// temporary storage, each 256-byte aligned, plus slack to align the base); an Error when
// n is negative or above INT_MAX (cub's offsets are int) or cub's size query fails.
Result<size_t> shuffle_workspace_bytes(int64_t n);
// perm(n) = stable sort of 0..n-1 by shuffle_key(seed, epoch, i).
cudaError_t launch_shuffle(cudaStream_t stream, uint64_t seed, uint32_t epoch, int64_t n,
                           int32_t* perm, void* workspace);

}  // namespace noeira::cuda
