#include "nn/activation.h"

namespace noeira {

Shape Activation::plan(PlanContext& pc, const Shape& in) {
  y_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), DType::kF32);
  if (pc.input_needs_grad)
    dx_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), DType::kF32);
  return in;
}

Tensor Activation::forward(Context& ctx, const Tensor& x) {
  x_ = x;
  Tensor y = ctx.view(y_, x.rows());
  ctx.ops().act_forward(x.f32(), y.f32(), x.numel(), act_);
  return y;
}

Tensor Activation::backward(Context& ctx, const Tensor& dy) {
  if (!dx_.valid()) return Tensor{};
  Tensor dx = ctx.view(dx_, x_.rows());
  ctx.ops().act_backward(dy.f32(), x_.f32(), ctx.f32(y_), dx.f32(), x_.numel(), act_);
  return dx;
}

}  // namespace noeira
