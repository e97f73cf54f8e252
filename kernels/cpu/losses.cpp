// CpuOps' losses, softmax_xent and mse (contracts and summation orders: kernels/op_list.inc).
// Each dispatches once on its views' dtype to a loop written once for fp32 and bf16
// storage; the batch sums are double, in row (element) order.
#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/common/bf16.h"
#include "kernels/common/exp_approx.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/dispatch.h"

namespace noeira {

namespace {

// Classes per row whose exps softmax_xent keeps on the stack (4 KiB).
constexpr int64_t kKeptExps = 1024;

// exp(z[j] - zmax) for j < n into e, by kernels/common/exp_approx.h in a loop that
// vectorises (libm's scalar expf was most of gpt-tiny's loss: 768 rows of 65 classes).
template <class T>
void row_exps(const T* __restrict z, float zmax, int64_t n, float* __restrict e) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) e[j] = exp_approx(load_f32(z[j]) - zmax);
}

// The largest of z[0..n), n >= 1, by `a > b ? a : b` from z[0]: NaNs past z[0] are passed
// over, a NaN z[0] is the result, as a scalar scan from z[0] gives. kLanes running maxima
// from z[0] (the same set's maximum: the comparisons are exact; among +0 and -0 the sign
// may differ, which no use of zmax below sees), so the loop vectorises.
template <class T>
float row_max(const T* __restrict z, int64_t n) {
  constexpr int64_t kLanes = 16;
  const float first = load_f32(z[0]);
  if (n < 2 * kLanes) {  // a few classes: the lanes' set-up would cost more than they save
    float r = first;
    for (int64_t j = 1; j < n; ++j) r = load_f32(z[j]) > r ? load_f32(z[j]) : r;
    return r;
  }
  float m[kLanes];
  for (int64_t l = 0; l < kLanes; ++l) m[l] = first;
  int64_t j = 1;
  for (; j + kLanes <= n; j += kLanes)
#pragma omp simd
    for (int64_t l = 0; l < kLanes; ++l) {
      const float v = load_f32(z[j + l]);
      m[l] = v > m[l] ? v : m[l];
    }
  for (; j < n; ++j) {
    const float v = load_f32(z[j]);
    m[0] = v > m[0] ? v : m[0];
  }
  float r = m[0];
  for (int64_t l = 1; l < kLanes; ++l) r = m[l] > r ? m[l] : r;
  return r;
}

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
    const float zmax = row_max(z, C);
    int64_t argmax = 0;  // the lowest index holding zmax (0 where zmax, z[0], is NaN)
    if (zmax == zmax)
      while (!(load_f32(z[argmax]) == zmax)) ++argmax;
    // The row's exps, kept for the gradient below where the row fits in kKeptExps (a
    // second pass of exps would cost as much as the first); wider rows compute them again
    // block by block.
    float e[kKeptExps];
    const bool kept = C <= kKeptExps;
    float sum = 0.0f;  // in j order
    for (int64_t j0 = 0; j0 < C; j0 += kKeptExps) {
      const int64_t n = std::min(kKeptExps, C - j0);
      row_exps(z + j0, zmax, n, e);
      for (int64_t j = 0; j < n; ++j) sum += e[j];
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
      for (int64_t j0 = 0; j0 < C; j0 += kKeptExps) {
        const int64_t n = std::min(kKeptExps, C - j0);
        if (!kept) row_exps(z + j0, zmax, n, e);
#pragma omp simd
        for (int64_t j = 0; j < n; ++j)
          store_f32(d[j0 + j], (e[j] * inv_sum - smoothed_target(j0 + j, y, eps, C)) * inv_b);
      }
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
