#include "nn/attention.h"

#include "kernels/common/saturating.h"

namespace noeira {

Shape SelfAttention::plan(PlanContext& pc, const Shape& in) {
  const std::string name = pc.where("SelfAttention");
  if (in.rank != 2) throw PlanError(name + ": input " + in.str() + " is not a sequence (T, C)");
  T_ = in[0];
  C_ = in[1];
  if (heads_ <= 0 || C_ % heads_ != 0)
    throw PlanError(name + ": width " + std::to_string(C_) + " is not divisible by " +
                    std::to_string(heads_) + " heads; pick n_head dividing n_embd");
  if (pc.ops && pc.ops->attention_max_context() > 0 && T_ > pc.ops->attention_max_context())
    throw PlanError(name + ": a sequence of " + std::to_string(T_) +
                    " positions is longer than this backend's attention plans (" +
                    std::to_string(pc.ops->attention_max_context()) +
                    "); shorten the context (or the image's patches)");
  c_attn_ = std::make_unique<Linear>(3 * C_, Act::kNone, bias_);
  c_proj_ = std::make_unique<Linear>(C_, Act::kNone, bias_);
  PlanContext ca = pc.child("c_attn", pc.input_needs_grad, pc.in_dtype);
  const Shape qkv = c_attn_->plan(ca, in);  // (T, 3C)
  const DType flow = c_attn_->out_dtype();
  pc.add_flops(4.0 * static_cast<double>(T_) * static_cast<double>(T_) * static_cast<double>(C_));  // q k^T, att v
  y_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), flow);
  // What the backend's attention keeps for backward (Ops::attention_saved_floats): the
  // (B, nh, T, T) probabilities by default, less on backends that recompute them.
  const int64_t saved = pc.ops ? pc.ops->attention_saved_floats(pc.batch, T_, heads_, flow)
                               : sat_mul({pc.batch, heads_, T_, T_});
  const Shape probs{pc.batch, heads_, T_, T_}, rows{pc.batch, heads_, T_};
  att_ = pc.plan.reserve(MemCategory::kActivations,
                         saved == probs.numel() ? probs
                         : saved == rows.numel() ? rows
                                                 : Shape{saved},
                         DType::kF32);
  dqkv_ = pc.plan.reserve(MemCategory::kActivations, qkv.with_batch(pc.batch), flow);
  if (pc.ops) {
    pc.need_workspace(pc.ops->attention_workspace_bytes(pc.batch, T_, C_, heads_, flow));
    if (pc.tail_rows > 0)
      pc.need_workspace(pc.ops->attention_workspace_bytes(pc.tail_rows, T_, C_, heads_, flow));
  }
  PlanContext cp = pc.child("c_proj", true, flow);
  const Shape out = c_proj_->plan(cp, in);
  out_dtype_ = c_proj_->out_dtype();
  return out;
}

Tensor SelfAttention::forward(Context& ctx, const Tensor& x) {
  const int64_t B = x.rows();
  qkv_ = c_attn_->forward(ctx, x);  // (B, T, 3C)
  Tensor y = ctx.view(y_, B);      // (B, T, C)
  ctx.ops().attention_forward(qkv_, y, ctx.f32(att_), B, T_, C_, heads_, causal_,
                              ctx.workspace());
  return c_proj_->forward(ctx, y);
}

Tensor SelfAttention::backward(Context& ctx, const Tensor& dy) {
  const int64_t B = qkv_.rows();
  const Tensor dyy = c_proj_->backward(ctx, dy);  // d(attention output) (B, T, C)
  Tensor dqkv = ctx.view(dqkv_, B);
  ctx.ops().attention_backward(dyy, qkv_, ctx.f32(att_), dqkv, B, T_, C_, heads_, causal_,
                               ctx.workspace());
  return c_attn_->backward(ctx, dqkv);
}

}  // namespace noeira
