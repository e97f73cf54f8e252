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
  if (out_dtype_ == DType::kBF16)
    ctx.ops().add_bf16(x.bf16(), fx.bf16(), y.bf16(), x.numel());
  else
    ctx.ops().add(x.f32(), fx.f32(), y.f32(), x.numel());
  return y;
}

Tensor Residual::backward(Context& ctx, const Tensor& dy) {
  const Tensor dfx = f_->backward(ctx, dy);
  if (!dx_.valid()) return Tensor{};
  Tensor dx = ctx.view(dx_, x_.rows());
  if (out_dtype_ == DType::kBF16)
    ctx.ops().add_bf16(dy.bf16(), dfx.bf16(), dx.bf16(), x_.numel());
  else
    ctx.ops().add(dy.f32(), dfx.f32(), dx.f32(), x_.numel());
  return dx;
}

}  // namespace noeira
