#include "nn/residual.h"

#include <cassert>

namespace noeira {

Shape Residual::plan(PlanContext& pc, const Shape& in) {
  PlanContext c = pc.child("f", pc.input_needs_grad, pc.in_dtype);
  const Shape out = f_->plan(c, in);
  assert(out == in && "Residual: f must preserve the shape");
  assert(f_->out_dtype() == pc.in_dtype && "Residual: f must preserve the dtype");
  out_dtype_ = pc.in_dtype;
  y_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), out_dtype_);
  if (pc.input_needs_grad)
    dx_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), out_dtype_);
  return out;
}

Tensor Residual::forward(Context& ctx, const Tensor& x) {
  x_ = x;
  const Tensor fx = f_->forward(ctx, x);
  Tensor y = ctx.view(y_, x.rows());
  ctx.ops().add(x, fx, y);
  return y;
}

Tensor Residual::backward(Context& ctx, const Tensor& dy) {
  const Tensor dfx = f_->backward(ctx, dy);
  if (!dx_.valid()) return Tensor{};
  Tensor dx = ctx.view(dx_, x_.rows());
  ctx.ops().add(dy, dfx, dx);
  return dx;
}

}  // namespace noeira
