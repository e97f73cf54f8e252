#include "nn/layernorm.h"

#include "kernels/common/saturating.h"

namespace noeira {

Shape LayerNorm::plan(PlanContext& pc, const Shape& in) {
  const std::string name = pc.where("LayerNorm");
  if (in.rank < 1) throw PlanError(name + ": needs an input with at least one dimension");
  if (!(eps_ > 0.0f)) throw PlanError(name + ": needs eps > 0");
  if (pc.in_dtype != DType::kF32 && pc.in_dtype != DType::kBF16)
    throw PlanError(name + ": input must be fp32 or bf16");
  c_ = in[in.rank - 1];
  out_dtype_ = pc.in_dtype;
  gamma_ = pc.params.add(pc.plan, pc.prefix + "weight", Shape{c_}, ParamRole::kScale, c_, c_);
  if (has_bias_)
    beta_ = pc.params.add(pc.plan, pc.prefix + "bias", Shape{c_}, ParamRole::kShift, c_, c_);
  const int64_t per_sample = in.numel() / c_;
  const int64_t rows = sat_mul({pc.batch, per_sample});  // normalised rows of a batch
  mean_ = pc.plan.reserve(MemCategory::kActivations, Shape{rows}, DType::kF32);
  rstd_ = pc.plan.reserve(MemCategory::kActivations, Shape{rows}, DType::kF32);
  if (pc.ops) {
    pc.need_workspace(pc.ops->layernorm_workspace_bytes(rows, c_));
    if (pc.tail_rows > 0)
      pc.need_workspace(pc.ops->layernorm_workspace_bytes(sat_mul({pc.tail_rows, per_sample}), c_));
  }
  y_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), out_dtype_);
  if (pc.input_needs_grad)
    dx_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), pc.in_dtype);
  return in;
}

Tensor LayerNorm::forward(Context& ctx, const Tensor& x) {
  x_ = x;
  Tensor y = ctx.view(y_, x.rows());
  ctx.ops().layernorm_forward(x, ctx.f32(gamma_.value), has_bias_ ? ctx.f32(beta_.value) : nullptr,
                              y, ctx.f32(mean_), ctx.f32(rstd_), rows(x), c_, eps_);
  return y;
}

// dgamma, dbeta (C) accumulate; dx (plus the residual) only when planned.
Tensor LayerNorm::backward(Context& ctx, const Tensor& dy, const Tensor& residual) {
  Tensor dx = dx_.valid() ? ctx.view(dx_, x_.rows()) : Tensor{};
  const Tensor dres = dx_.valid() ? residual : Tensor{};
  ctx.ops().layernorm_backward(dy, x_, ctx.f32(gamma_.value), ctx.f32(mean_), ctx.f32(rstd_), dx,
                               dres, ctx.f32(gamma_.grad),
                               has_bias_ ? ctx.f32(beta_.grad) : nullptr, rows(x_), c_,
                               ctx.workspace());
  return dx;
}

}  // namespace noeira
