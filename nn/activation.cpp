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
  if (out_dtype_ == DType::kBF16)
    ctx.ops().act_forward_bf16(x.bf16(), y.bf16(), x.numel(), act_);
  else
    ctx.ops().act_forward(x.f32(), y.f32(), x.numel(), act_);
  return y;
}

Tensor Activation::backward(Context& ctx, const Tensor& dy) {
  if (!dx_.valid()) return Tensor{};
  Tensor dx = ctx.view(dx_, x_.rows());
  if (out_dtype_ == DType::kBF16)
    ctx.ops().act_backward_bf16(dy.bf16(), x_.bf16(), ctx.arenas().as<uint16_t>(y_), dx.bf16(),
                                x_.numel(), act_);
  else
    ctx.ops().act_backward(dy.f32(), x_.f32(), ctx.f32(y_), dx.f32(), x_.numel(), act_);
  return dx;
}

}  // namespace noeira
