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
  bf16_ = pc.amp == BF16Policy;
  in_dtype_ = pc.in_dtype;
  out_dtype_ = flow_dtype(pc.amp);
  weight_ = pc.params.add(pc.plan, pc.prefix + "weight", Shape{out_, in_}, ParamRole::kWeight,
                          in_, out_);
  if (has_bias_)
    bias_ = pc.params.add(pc.plan, pc.prefix + "bias", Shape{out_}, ParamRole::kBias, in_, out_);
  const Shape y = out.with_batch(pc.batch);
  y_ = pc.plan.reserve(MemCategory::kActivations, y, out_dtype_);
  if (act_ == Act::kGELU) pre_ = pc.plan.reserve(MemCategory::kActivations, y, out_dtype_);
  if (act_ != Act::kNone) dz_ = pc.plan.reserve(MemCategory::kActivations, y, out_dtype_);
  if (pc.input_needs_grad)
    dx_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), in_dtype_);
  if (bf16_) {
    // The boundary cast of an fp32 input, and the fp32 GEMM results before rounding.
    if (in_dtype_ != DType::kBF16)
      x_cast_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), DType::kBF16);
    pc.need_scratch(pc.batch * (in.numel() / in_) * std::max(in_, out_));
  }
  return out;
}

Tensor Linear::forward(Context& ctx, const Tensor& x) {
  const int64_t M = x.numel() / in_;  // (M, in) rows
  Tensor y = ctx.view(y_, x.rows());  // (M, out)
  if (!bf16_) {
    x_ = x;
    ctx.ops().linear_forward(x.f32(), ctx.f32(weight_.value),
                             has_bias_ ? ctx.f32(bias_.value) : nullptr, y.f32(),
                             pre_.valid() ? ctx.f32(pre_) : nullptr, M, out_, in_, act_);
    return y;
  }
  x_ = x;
  if (x_cast_.valid()) {
    x_ = ctx.view(x_cast_, x.rows());
    ctx.ops().cast_to_bf16(x.f32(), x_.bf16(), x.numel());
  }
  // (M, out) fp32 = x (M, in) bf16 . W^T (in, out) bf16, then bias + act rounded to bf16
  float* acc = ctx.scratch_f32();
  ctx.ops().gemm_bf16(false, true, M, out_, in_, 1.0f, x_.bf16(), in_,
                      ctx.arenas().as<uint16_t>(weight_.copy), in_, 0.0f, acc, out_);
  ctx.ops().bias_act_bf16(acc, has_bias_ ? ctx.f32(bias_.value) : nullptr, y.bf16(),
                          pre_.valid() ? ctx.arenas().as<uint16_t>(pre_) : nullptr, M, out_, act_);
  return y;
}

Tensor Linear::backward(Context& ctx, const Tensor& dy) {
  const int64_t M = x_.numel() / in_;
  if (bf16_) return backward_bf16(ctx, dy, M);
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

// Under BF16Policy: bf16 activations and gradients, fp32 master-weight gradients.
Tensor Linear::backward_bf16(Context& ctx, const Tensor& dy, int64_t M) {
  Ops& ops = ctx.ops();
  const uint16_t* dz = dy.bf16();  // (M, out) bf16
  if (act_ != Act::kNone) {
    uint16_t* buf = ctx.arenas().as<uint16_t>(dz_);
    ops.act_backward_bf16(dy.bf16(), pre_.valid() ? ctx.arenas().as<uint16_t>(pre_) : nullptr,
                          ctx.arenas().as<uint16_t>(y_), buf, M * out_, act_);
    dz = buf;
  }
  // dW(out, in) fp32 += dz^T (out, M) . x (M, in), both bf16
  ops.gemm_bf16(true, false, out_, in_, M, 1.0f, dz, out_, x_.bf16(), in_, 1.0f,
                ctx.f32(weight_.grad), in_);
  if (has_bias_) ops.bias_grad_bf16(dz, ctx.f32(bias_.grad), M, out_);
  if (!dx_.valid()) return Tensor{};
  // dx(M, in) = dz (M, out) . W (out, in): fp32 result, stored in the input's dtype
  Tensor dx = ctx.view(dx_, x_.rows());
  float* acc = in_dtype_ == DType::kBF16 ? ctx.scratch_f32() : dx.f32();
  ops.gemm_bf16(false, false, M, in_, out_, 1.0f, dz, out_,
                ctx.arenas().as<uint16_t>(weight_.copy), in_, 0.0f, acc, in_);
  if (in_dtype_ == DType::kBF16) ops.cast_to_bf16(acc, dx.bf16(), M * in_);
  return dx;
}

}  // namespace noeira
