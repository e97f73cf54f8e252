#include "nn/residual.h"

#include <cassert>

namespace noeira {

Shape Residual::plan(PlanContext& pc, const Shape& in) {
  PlanContext c = pc.child("f", pc.input_needs_grad);
  const Shape out = f_->plan(c, in);
  assert(out == in && "Residual: f must preserve the shape");
  y_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), DType::kF32);
  if (pc.input_needs_grad)
    dx_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), DType::kF32);
  return out;
}

Tensor Residual::forward(Context& ctx, const Tensor& x) {
  x_ = x;
  const Tensor fx = f_->forward(ctx, x);
  Tensor y = ctx.view(y_, x.rows());
  ctx.ops().add(x.f32(), fx.f32(), y.f32(), x.numel());
  return y;
}

Tensor Residual::backward(Context& ctx, const Tensor& dy) {
  const Tensor dfx = f_->backward(ctx, dy);
  if (!dx_.valid()) return Tensor{};
  Tensor dx = ctx.view(dx_, x_.rows());
  ctx.ops().add(dy.f32(), dfx.f32(), dx.f32(), x_.numel());
  return dx;
}

}  // namespace noeira
