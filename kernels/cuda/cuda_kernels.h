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
// y(M,N) = act(y + bias) in place; pre (may be null) = y + bias.
cudaError_t launch_bias_act(cudaStream_t stream, float* y, float* pre, const float* bias,
                            int64_t M, int64_t N, Act act);
cudaError_t launch_act_forward(cudaStream_t stream, const float* x, float* y, int64_t n, Act act);
cudaError_t launch_act_backward(cudaStream_t stream, const float* dy, const float* pre,
                                const float* post, float* dx, int64_t n, Act act);
cudaError_t launch_add(cudaStream_t stream, const float* a, const float* b, float* y, int64_t n);
// bf16 storage, fp32 math (Ops::bias_act_bf16 etc.): the same kernels as the fp32 ones,
// rounding with kernels/common/bf16.h; 16-byte vector accesses where the buffers allow.
cudaError_t launch_bias_act_bf16(cudaStream_t stream, const float* acc, const float* bias,
                                 bf16_t* y, bf16_t* pre, int64_t M, int64_t N, Act act);
cudaError_t launch_act_forward_bf16(cudaStream_t stream, const bf16_t* x, bf16_t* y, int64_t n,
                                    Act act);
cudaError_t launch_act_backward_bf16(cudaStream_t stream, const bf16_t* dy, const bf16_t* pre,
                                     const bf16_t* post, bf16_t* dx, int64_t n, Act act);
cudaError_t launch_add_bf16(cudaStream_t stream, const bf16_t* a, const bf16_t* b, bf16_t* y,
                            int64_t n);
cudaError_t launch_cast_to_bf16(cudaStream_t stream, const float* x, bf16_t* y, int64_t n);
cudaError_t launch_cast_to_f32(cudaStream_t stream, const bf16_t* x, float* y, int64_t n);
// C(M,N) with row stride ldc = beta * C (beta == 0 writes zeros): a GEMM with K == 0.
cudaError_t launch_scale_rows(cudaStream_t stream, float* C, int64_t M, int64_t N, int64_t ldc,
                              float beta);
// Adam over flat buffers; the 1-based step is counters->step + 1, read on the device.
cudaError_t launch_adam(cudaStream_t stream, float* p, const float* g, float* m, float* v,
                        int64_t n, const AdamHyper& h, const StepCounters* counters);
cudaError_t launch_sgd(cudaStream_t stream, float* p, const float* g, float* buf, int64_t n,
                       const SgdHyper& h);
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

// db(N) += column sums of dy(M,N) in the fixed order of kernels/common/column_sum.h.
// `partials` is the planned reduction workspace (kColumnSumWorkspaceBytes); null, or
// smaller, runs the sum as one chunk (parallel over columns only: slower for large M).
cudaError_t launch_bias_grad(cudaStream_t stream, const float* dy, float* db, int64_t M,
                             int64_t N, float* partials, size_t partial_bytes);
// Softmax cross-entropy over logits(B,C); see Ops::softmax_xent. `partials` holds
// kMaxLossBlocks entries of backend-owned scratch.
cudaError_t launch_softmax_xent(cudaStream_t stream, const float* logits, const int32_t* labels,
                                int64_t B, int64_t C, float* dlogits, LossStats* stats,
                                float* loss_history, const StepCounters* counters,
                                LossPartial* partials);
cudaError_t launch_mse(cudaStream_t stream, const float* pred, const float* target, int64_t B,
                       int64_t D, float* dpred, LossStats* stats, float* loss_history,
                       const StepCounters* counters, LossPartial* partials);
// bf16 inputs (and gradients out), the same kernels and reduction order as the fp32 ones.
cudaError_t launch_bias_grad_bf16(cudaStream_t stream, const bf16_t* dy, float* db, int64_t M,
                                  int64_t N, float* partials, size_t partial_bytes);
cudaError_t launch_softmax_xent_bf16(cudaStream_t stream, const bf16_t* logits,
                                     const int32_t* labels, int64_t B, int64_t C,
                                     bf16_t* dlogits, LossStats* stats, float* loss_history,
                                     const StepCounters* counters, LossPartial* partials);
cudaError_t launch_mse_bf16(cudaStream_t stream, const bf16_t* pred, const float* target,
                            int64_t B, int64_t D, bf16_t* dpred, LossStats* stats,
                            float* loss_history, const StepCounters* counters,
                            LossPartial* partials);

// ---- gather.cu ----
cudaError_t launch_gather_rows(cudaStream_t stream, const float* src, const int32_t* perm,
                               int64_t rows, int64_t row_elems, const StepCounters* counters,
                               float* dst);
// Gather + boundary cast: dst = bf16(src[perm[batch * rows + r]]).
cudaError_t launch_gather_rows_bf16(cudaStream_t stream, const float* src, const int32_t* perm,
                                    int64_t rows, int64_t row_elems,
                                    const StepCounters* counters, bf16_t* dst);
cudaError_t launch_gather_labels(cudaStream_t stream, const int32_t* src, const int32_t* perm,
                                 int64_t rows, const StepCounters* counters, int32_t* dst);

// ---- shuffle.cu ----
// Bytes of workspace launch_shuffle needs for n elements (keys in/out, values in, cub's
// temporary storage, each 256-byte aligned, plus slack to align the base); an Error when
// n is negative or above INT_MAX (cub's offsets are int) or cub's size query fails.
Result<size_t> shuffle_workspace_bytes(int64_t n);
// perm(n) = stable sort of 0..n-1 by shuffle_key(seed, epoch, i).
cudaError_t launch_shuffle(cudaStream_t stream, uint64_t seed, uint32_t epoch, int64_t n,
                           int32_t* perm, void* workspace);

}  // namespace noeira::cuda
