// CudaOps::batch_windows (contract: kernels/op_list.inc): the autoregressive batch of the
// current step, built inside the captured graph (DESIGN.md section 2,
// AutoregressiveTrainer). One thread per (row, position): it reads the 0-based step from
// the device counters, draws its row's window start with kernels/common/batch_window.h's
// batch_window_start (the function the CPU op, the host-batch baseline and the twin use)
// and copies one input and one target token. Recomputing the row's Philox block per
// element costs less than a pass to share it.
#include <string>

#include "kernels/common/batch_window.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/launch.cuh"

namespace noeira {

namespace cuda {

namespace {

__global__ void batch_windows_kernel(const int32_t* corpus, int64_t n_tokens, uint64_t seed,
                                     const StepCounters* counters, int64_t B, int64_t T,
                                     int64_t first_row, int32_t* inputs, int32_t* targets) {
  const uint32_t step = static_cast<uint32_t>(counters->step);
  const int64_t n = B * T;
  for (int64_t i = global_thread(); i < n; i += grid_stride()) {
    const int64_t r = i / T, t = i - r * T;
    const int64_t start = batch_window_start(seed, step, static_cast<uint32_t>(first_row + r), n_tokens,
                                             T);
    inputs[i] = corpus[start + t];
    targets[i] = corpus[start + t + 1];
  }
}

cudaError_t launch_batch_windows(cudaStream_t stream, const int32_t* corpus, int64_t n_tokens,
                                 uint64_t seed, const StepCounters* counters, int64_t B,
                                 int64_t T, int64_t first_row, int32_t* inputs, int32_t* targets) {
  if (B * T == 0) return cudaSuccess;
  batch_windows_kernel<<<grid_for(B * T), kBlock, 0, stream>>>(corpus, n_tokens, seed, counters,
                                                               B, T, first_row, inputs, targets);
  return cudaGetLastError();
}

}  // namespace

}  // namespace cuda

void CudaOps::batch_windows(const int32_t* corpus, int64_t n_tokens, uint64_t seed,
                            const StepCounters* counters, int64_t B, int64_t T,
                            int64_t first_row, int32_t* inputs, int32_t* targets) {
  OpScope scope(*state_, "batch_windows");
  if (B < 0 || T < 0 || first_row < 0 || n_tokens <= T) {
    fail("invalid shape B " + std::to_string(B) + ", T " + std::to_string(T) + ", first row " +
         std::to_string(first_row) +
         " over a corpus of " + std::to_string(n_tokens) + " tokens (needs n_tokens > T >= 0)");
    return;
  }
  check(cuda::launch_batch_windows(stream_, corpus, n_tokens, seed, counters, B, T, first_row,
                                   inputs, targets),
        "batch_windows_kernel");
}

}  // namespace noeira
