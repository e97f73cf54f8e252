#include "nn/dropout.h"

namespace noeira {

Shape Dropout::plan(PlanContext& pc, const Shape& in) {
  if (!(p_ >= 0.0f && p_ < 1.0f))
    throw PlanError(pc.where("Dropout") + ": p = " + std::to_string(p_) + " is not in [0, 1)");
  out_dtype_ = pc.in_dtype;  // element-wise: stores in its input's dtype
  y_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), out_dtype_);
  if (pc.input_needs_grad)
    dx_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), out_dtype_);
  return in;
}

Tensor Dropout::forward(Context& ctx, const Tensor& x) {
  if (!ctx.training()) return x;
  rows_ = x.rows();
  Tensor y = ctx.view(y_, rows_);
  ctx.ops().dropout(x, y, p_, ctx.seed(), layer_, ctx.counters());
  return y;
}

// The same mask: same seed, layer and step (the counter advances after backward).
Tensor Dropout::backward(Context& ctx, const Tensor& dy) {
  if (!dx_.valid()) return Tensor{};
  Tensor dx = ctx.view(dx_, rows_);
  ctx.ops().dropout(dy, dx, p_, ctx.seed(), layer_, ctx.counters());
  return dx;
}

}  // namespace noeira
