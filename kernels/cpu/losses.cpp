// CpuOps' losses, softmax_xent and mse (contracts and summation orders: kernels/op_list.inc).
// Each dispatches once on its views' dtype to a loop written once for fp32 and bf16
// storage; the batch sums are double, in row (element) order.
#include <cmath>
#include <string>

#include "kernels/common/bf16.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

// Classes per row whose exps softmax_xent keeps on the stack (4 KiB).
constexpr int64_t kKeptExps = 1024;

// Stable softmax + cross-entropy; the batch loss is summed in double, in row order.
template <class T>
void softmax_xent_impl(const T* logits, const int32_t* labels, int64_t B, int64_t C, float eps,
                       T* dlogits, LossStats* stats, float* loss_history,
                       const StepCounters* counters) {
  double loss_sum = 0.0;
  int64_t correct = 0;
  const float inv_b = 1.0f / static_cast<float>(B);
  for (int64_t i = 0; i < B; ++i) {
    const T* z = logits + i * C;
    int64_t argmax = 0;
    float zmax = load_f32(z[0]);
    for (int64_t j = 1; j < C; ++j)
      if (load_f32(z[j]) > zmax) zmax = load_f32(z[j]), argmax = j;
    // The row's exps, kept for the gradient below where they fit (computed twice, they were
    // most of gpt-tiny's loss: 768 rows of 65 classes, 0.38 ms at one thread).
    float e[kKeptExps];
    const bool kept = C <= kKeptExps;
    float sum = 0.0f;
    for (int64_t j = 0; j < C; ++j) {
      const float ej = std::exp(load_f32(z[j]) - zmax);
      if (kept) e[j] = ej;
      sum += ej;
    }
    float zsum = 0.0f;  // only label smoothing reads it
    if (eps != 0.0f)
      for (int64_t j = 0; j < C; ++j) zsum += load_f32(z[j]);
    const int32_t y = labels[i];
    const bool valid = y >= 0 && y < C;  // a bad label gives a NaN loss, never a stray read
    loss_sum += valid ? xent_row_loss(std::log(sum), zmax, load_f32(z[y]), zsum, eps, C)
                      : static_cast<double>(NAN);
    correct += (argmax == y);
    if (dlogits) {
      const float inv_sum = 1.0f / sum;
      T* d = dlogits + i * C;
      for (int64_t j = 0; j < C; ++j)
        store_f32(d[j], ((kept ? e[j] : std::exp(load_f32(z[j]) - zmax)) * inv_sum -
                         smoothed_target(j, y, eps, C)) *
                            inv_b);
    }
  }
  stats->loss_sum += loss_sum;
  stats->correct += correct;
  stats->count += B;
  if (loss_history) loss_history[counters->batch_in_epoch] = static_cast<float>(loss_sum / B);
}

template <class T>
void mse_impl(const T* pred, const float* target, int64_t B, int64_t D, T* dpred,
              LossStats* stats, float* loss_history, const StepCounters* counters) {
  const int64_t n = B * D;
  const float scale = 2.0f / static_cast<float>(n);
  double sq = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float d = load_f32(pred[i]) - target[i];
    sq += static_cast<double>(d) * d;
    if (dpred) store_f32(dpred[i], scale * d);
  }
  // Per-sample loss = mean over its D outputs, so loss_sum / count is the mean loss.
  stats->loss_sum += sq / static_cast<double>(D);
  stats->count += B;
  if (loss_history) loss_history[counters->batch_in_epoch] = static_cast<float>(sq / n);
}

}  // namespace

void CpuOps::softmax_xent(ConstView logits, const int32_t* labels, int64_t B, int64_t C,
                          float label_smoothing, View dlogits, LossStats* stats,
                          float* loss_history, const StepCounters* counters) {
  const char* op = "softmax_xent";
  if (!(label_smoothing >= 0.0f && label_smoothing < 1.0f))
    cpu_op_failed(op, make_error("label smoothing " + std::to_string(label_smoothing) +
                                 " is outside [0, 1)"));
  expect_elems(op, B * C, {logits, dlogits});
  dispatch_float(op, {logits, dlogits}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    softmax_xent_impl(logits.as<T>(), labels, B, C, label_smoothing, dlogits.as<T>(), stats,
                      loss_history, counters);
  });
}

void CpuOps::mse(ConstView pred, const float* target, int64_t B, int64_t D, View dpred,
                 LossStats* stats, float* loss_history, const StepCounters* counters) {
  const char* op = "mse";
  expect_elems(op, B * D, {pred, dpred});
  dispatch_float(op, {pred, dpred}, [&](auto storage) {
    using T = typename decltype(storage)::type;
    mse_impl(pred.as<T>(), target, B, D, dpred.as<T>(), stats, loss_history, counters);
  });
}

}  // namespace noeira
