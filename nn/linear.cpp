#include "nn/linear.h"

namespace noeira {

std::string Linear::kind() const {
  switch (act_) {
    case Act::kReLU: return "LinearAct(relu)";
    case Act::kGELU: return "LinearAct(gelu)";
    default: return "Linear";
  }
}

Shape Linear::plan(PlanContext& pc, const Shape& in) {
  // Applies to the last dimension; leading dimensions (e.g. sequence) are rows.
  in_ = in[in.rank - 1];
  Shape out = in;
  out[out.rank - 1] = out_;
  weight_ = pc.params.add(pc.plan, pc.prefix + "weight", Shape{out_, in_}, ParamRole::kWeight,
                          in_, out_);
  if (has_bias_)
    bias_ = pc.params.add(pc.plan, pc.prefix + "bias", Shape{out_}, ParamRole::kBias, in_, out_);
  const Shape y = out.with_batch(pc.batch);
  y_ = pc.plan.reserve(MemCategory::kActivations, y, DType::kF32);
  if (act_ == Act::kGELU) pre_ = pc.plan.reserve(MemCategory::kActivations, y, DType::kF32);
  if (act_ != Act::kNone) dz_ = pc.plan.reserve(MemCategory::kActivations, y, DType::kF32);
  if (pc.input_needs_grad)
    dx_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), DType::kF32);
  return out;
}

Tensor Linear::forward(Context& ctx, const Tensor& x) {
  x_ = x;
  const int64_t M = x.numel() / in_;  // (M, in) rows
  Tensor y = ctx.view(y_, x.rows());  // (M, out)
  ctx.ops().linear_forward(x.f32(), ctx.f32(weight_.value),
                           has_bias_ ? ctx.f32(bias_.value) : nullptr, y.f32(),
                           pre_.valid() ? ctx.f32(pre_) : nullptr, M, out_, in_, act_);
  return y;
}

Tensor Linear::backward(Context& ctx, const Tensor& dy) {
  const int64_t M = x_.numel() / in_;
  const float* dz = dy.f32();  // (M, out): gradient before the activation
  if (act_ != Act::kNone) {
    float* buf = ctx.f32(dz_);
    ctx.ops().act_backward(dy.f32(), pre_.valid() ? ctx.f32(pre_) : nullptr, ctx.f32(y_), buf,
                           M * out_, act_);
    dz = buf;
  }
  // dW(out, in) += dz^T (out, M) . x (M, in);  db(out) += sum over rows of dz
  ctx.ops().linear_backward_params(dz, x_.f32(), ctx.f32(weight_.grad),
                                   has_bias_ ? ctx.f32(bias_.grad) : nullptr, M, out_, in_);
  if (!dx_.valid()) return Tensor{};
  // dx(M, in) = dz (M, out) . W (out, in)
  Tensor dx = ctx.view(dx_, x_.rows());
  ctx.ops().gemm(false, false, M, in_, out_, 1.0f, dz, out_, ctx.f32(weight_.value), in_, 0.0f,
                 dx.f32(), in_);
  return dx;
}

}  // namespace noeira
