#include "nn/activation.h"

namespace noeira {

Shape Activation::plan(PlanContext& pc, const Shape& in) {
  out_dtype_ = pc.in_dtype;  // element-wise: computes in fp32, stores in its input's dtype
  y_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), out_dtype_);
  if (pc.input_needs_grad)
    dx_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), out_dtype_);
  return in;
}

Tensor Activation::forward(Context& ctx, const Tensor& x) {
  x_ = x;
  Tensor y = ctx.view(y_, x.rows());
  ctx.ops().act_forward(x, y, act_);
  return y;
}

Tensor Activation::backward(Context& ctx, const Tensor& dy) {
  if (!dx_.valid()) return Tensor{};
  Tensor dx = ctx.view(dx_, x_.rows());
  ctx.ops().act_backward(dy, x_, ctx.view(y_, x_.rows()), dx, act_);
  return dx;
}

}  // namespace noeira
