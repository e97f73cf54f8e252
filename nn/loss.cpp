#include "nn/loss.h"

namespace noeira {

void Loss::plan(PlanContext& pc, const Shape& out) {
  // d(output) flows back in the output's dtype; the loss math itself is fp32.
  dout_ = pc.plan.reserve(MemCategory::kActivations, out.with_batch(pc.batch), pc.in_dtype);
}

Tensor SoftmaxCrossEntropy::run(Context& ctx, const Tensor& out, const Tensor& target,
                                LossStats* stats, float* history, bool with_grad) {
  const int64_t classes = out.shape[out.shape.rank - 1];
  const int64_t rows = out.numel() / classes;
  Tensor d = with_grad ? ctx.view(dout_, out.rows()) : Tensor{};
  ctx.ops().softmax_xent(out, target.i32(), rows, classes, label_smoothing_, d, stats, history,
                         ctx.counters());
  return d;
}

Tensor MeanSquaredError::run(Context& ctx, const Tensor& out, const Tensor& target,
                             LossStats* stats, float* history, bool with_grad) {
  const int64_t rows = out.rows();
  const int64_t width = out.numel() / rows;
  Tensor d = with_grad ? ctx.view(dout_, rows) : Tensor{};
  ctx.ops().mse(out, target.f32(), rows, width, d, stats, history, ctx.counters());
  return d;
}

std::unique_ptr<Loss> make_loss(Task task, float label_smoothing) {
  if (task == Task::kRegression) return std::make_unique<MeanSquaredError>();
  return std::make_unique<SoftmaxCrossEntropy>(label_smoothing);
}

}  // namespace noeira
