// CudaOps' ops that are our own kernels (cuda_kernels.h; contracts in kernels/ops.h): each
// names itself for error messages and enqueues its launcher, which dispatches on the
// views' dtype.
#include <cstdio>
#include <string>

#include "kernels/common/column_sum.h"
#include "kernels/cuda/op_scope.h"

namespace noeira {

// ---- Element-wise ----

void CudaOps::bias_act(const float* acc, const float* bias, View y, View pre, int64_t M,
                       int64_t N, Act act) {
  OpScope scope(*this, "bias_act");
  check(cuda::launch_bias_act(stream_, acc, bias, y, pre, M, N, act), "bias_act_kernel");
}

void CudaOps::act_forward(ConstView x, View y, Act act) {
  OpScope scope(*this, "act_forward");
  check(cuda::launch_act_forward(stream_, x, y, act), "act_forward_kernel");
}

void CudaOps::act_backward(ConstView dy, ConstView pre, ConstView post, View dx, Act act) {
  OpScope scope(*this, "act_backward");
  check(cuda::launch_act_backward(stream_, dy, pre, post, dx, act), "act_backward_kernel");
}

void CudaOps::add(ConstView a, ConstView b, View y) {
  OpScope scope(*this, "add");
  check(cuda::launch_add(stream_, a, b, y), "add_kernel");
}

void CudaOps::cast(ConstView x, View y) {
  OpScope scope(*this, "cast");
  check(cuda::launch_cast(stream_, x, y), "cast_kernel");
}

// ---- Reductions and losses ----

float* CudaOps::bias_grad_partials(int64_t M) {
  if (reduction_ws_) return reduction_ws_;
  // Say once that a caller did not plan the workspace, where it costs speed.
  if (!warned_unbound_ && column_sum_plan(M, kColumnSumMaxChunks).chunks > 1) {
    warned_unbound_ = true;
    std::fprintf(stderr,
                 "noeira: %s over %lld rows runs as one chunk: no reduction workspace is bound "
                 "(plan Ops::reduction_workspace_bytes() and call bind_reduction_workspace)\n",
                 op_ ? op_ : "bias_grad", static_cast<long long>(M));
  }
  return nullptr;
}

void CudaOps::bias_grad(ConstView dy, float* db, int64_t M, int64_t N) {
  OpScope scope(*this, "bias_grad");
  check(cuda::launch_bias_grad(stream_, dy, db, M, N, bias_grad_partials(M), reduction_ws_bytes_),
        "bias_grad kernels");
}

void CudaOps::softmax_xent(ConstView logits, const int32_t* labels, int64_t B, int64_t C,
                           float label_smoothing, View dlogits, LossStats* stats,
                           float* loss_history, const StepCounters* counters) {
  OpScope scope(*this, "softmax_xent");
  if (!(label_smoothing >= 0.0f && label_smoothing < 1.0f))
    return fail("the label smoothing " + std::to_string(label_smoothing) +
                " is outside [0, 1)");
  check(cuda::launch_softmax_xent(stream_, logits, labels, B, C, label_smoothing, dlogits, stats,
                                  loss_history, counters, loss_partials_),
        "softmax_xent_kernel");
}

void CudaOps::mse(ConstView pred, const float* target, int64_t B, int64_t D, View dpred,
                  LossStats* stats, float* loss_history, const StepCounters* counters) {
  OpScope scope(*this, "mse");
  check(cuda::launch_mse(stream_, pred, target, B, D, dpred, stats, loss_history, counters,
                         loss_partials_),
        "mse_kernel");
}

// ---- Optimizers ----

void CudaOps::adam(float* p, const float* g, float* m, float* v, int64_t n, const AdamHyper& h,
                   const StepCounters* counters) {
  OpScope scope(*this, "adam");
  check(cuda::launch_adam(stream_, p, g, m, v, n, h, counters), "adam_kernel");
}

void CudaOps::sgd(float* p, const float* g, float* buf, int64_t n, const SgdHyper& h,
                  const StepCounters* counters) {
  OpScope scope(*this, "sgd");
  check(cuda::launch_sgd(stream_, p, g, buf, n, h, counters), "sgd_kernel");
}

// ---- Data and the step counter ----

void CudaOps::gather_rows(ConstView src, const int32_t* perm, int64_t rows, int64_t row_elems,
                          const StepCounters* counters, View dst) {
  OpScope scope(*this, "gather_rows");
  check(cuda::launch_gather_rows(stream_, src, perm, rows, row_elems, counters, dst),
        "gather_rows_kernel");
}

Result<size_t> CudaOps::shuffle_workspace_bytes(int64_t n) const {
  return cuda::shuffle_workspace_bytes(n);
}

void CudaOps::shuffle(uint64_t seed, uint32_t epoch, int64_t n, int32_t* perm, void* workspace) {
  OpScope scope(*this, "shuffle");
  check(cuda::launch_shuffle(stream_, seed, epoch, n, perm, workspace),
        "shuffle (keys kernel + cub::DeviceRadixSort::SortPairs)");
}

void CudaOps::batch_windows(const int32_t* corpus, int64_t n_tokens, uint64_t seed,
                            const StepCounters* counters, int64_t B, int64_t T,
                            int64_t first_row, int32_t* inputs, int32_t* targets) {
  OpScope scope(*this, "batch_windows");
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

void CudaOps::advance(StepCounters* counters) {
  OpScope scope(*this, "advance");
  check(cuda::launch_advance(stream_, counters), "advance_kernel");
}

}  // namespace noeira
