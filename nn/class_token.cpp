#include "nn/class_token.h"

namespace noeira {

Shape ClassToken::plan(PlanContext& pc, const Shape& in) {
  const std::string name = pc.where("ClassToken");
  if (in.rank != 2) throw PlanError(name + ": input " + in.str() + " is not a sequence (N, C)");
  N_ = in[0];
  C_ = in[1];
  out_dtype_ = pc.in_dtype;
  cls_ = pc.params.add(pc.plan, pc.prefix + "cls_token", Shape{C_}, ParamRole::kBias, C_, C_);
  pos_ = pc.params.add(pc.plan, pc.prefix + "pos_embed", Shape{N_ + 1, C_}, ParamRole::kWeight,
                       C_, N_ + 1);
  const Shape out{N_ + 1, C_};
  y_ = pc.plan.reserve(MemCategory::kActivations, out.with_batch(pc.batch), out_dtype_);
  dcls_ = pc.plan.reserve(MemCategory::kActivations, Shape{pc.batch, 1, C_}, out_dtype_);
  if (pc.input_needs_grad)
    dx_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), out_dtype_);
  return out;
}

Tensor ClassToken::forward(Context& ctx, const Tensor& x) {
  Tensor y = ctx.view(y_, x.rows());  // (B, N + 1, C)
  ctx.ops().class_token_forward(x, ctx.f32(cls_.value), ctx.f32(pos_.value), y, x.rows(), N_,
                                C_);
  return y;
}

Tensor ClassToken::backward(Context& ctx, const Tensor& dy) {
  Ops& ops = ctx.ops();
  const int64_t B = dy.rows();
  // dpos (N + 1, C) += the batch sum of dy (B, (N + 1) C).
  ops.bias_grad(dy, ctx.f32(pos_.grad), B, (N_ + 1) * C_);
  // dcls (C) += the batch sum of dy's token 0.
  Tensor d0 = ctx.view(dcls_, B);  // (B, 1, C)
  ops.copy_token_rows(dy, N_ + 1, 0, d0, 1, 0, 1, B, C_);
  ops.bias_grad(d0, ctx.f32(cls_.grad), B, C_);
  if (!dx_.valid()) return Tensor{};
  Tensor dx = ctx.view(dx_, B);  // (B, N, C) = dy's tokens 1..N
  ops.copy_token_rows(dy, N_ + 1, 1, dx, N_, 0, N_, B, C_);
  return dx;
}

Shape ClassTokenPool::plan(PlanContext& pc, const Shape& in) {
  const std::string name = pc.where("ClassTokenPool");
  if (in.rank != 2 || in[0] < 1)
    throw PlanError(name + ": input " + in.str() + " is not a sequence of tokens (T, C)");
  T_ = in[0];
  C_ = in[1];
  out_dtype_ = pc.in_dtype;
  y_ = pc.plan.reserve(MemCategory::kActivations, Shape{pc.batch, C_}, out_dtype_);
  if (pc.input_needs_grad)
    dx_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), out_dtype_);
  return Shape{C_};
}

Tensor ClassTokenPool::forward(Context& ctx, const Tensor& x) {
  Tensor y = ctx.view(y_, x.rows());  // (B, C) = x[:, 0, :]
  ctx.ops().copy_token_rows(x, T_, 0, y, 1, 0, 1, x.rows(), C_);
  return y;
}

Tensor ClassTokenPool::backward(Context& ctx, const Tensor& dy) {
  if (!dx_.valid()) return Tensor{};
  Tensor dx = ctx.view(dx_, dy.rows());  // (B, T, C): dy in row 0, zeros elsewhere
  ctx.stream().fill_zero(dx.data, dx.nbytes());
  ctx.ops().copy_token_rows(dy, 1, 0, dx, T_, 0, 1, dy.rows(), C_);
  return dx;
}

}  // namespace noeira
