#include "nn/batchnorm.h"

#include <stdexcept>

namespace noeira {

Shape BatchNorm2d::plan(PlanContext& pc, const Shape& in) {
  const std::string name = pc.where("BatchNorm2d");
  if (in.rank != 3) throw PlanError(name + ": input " + in.str() + " is not an image (C, H, W)");
  if (!(hyper_.eps > 0.0f) || !(hyper_.momentum >= 0.0f && hyper_.momentum <= 1.0f))
    throw PlanError(name + ": needs eps > 0 and momentum in [0, 1]");
  // x (B, C, H, W) seen as (B, C, S = H * W); statistics per channel.
  const int64_t c = in[0];
  shape_ = NormShape{pc.batch, c, in[1] * in[2]};
  out_dtype_ = pc.in_dtype;
  gamma_ = pc.params.add(pc.plan, pc.prefix + "weight", Shape{c}, ParamRole::kScale, c, c);
  beta_ = pc.params.add(pc.plan, pc.prefix + "bias", Shape{c}, ParamRole::kShift, c, c);
  running_mean_ = pc.params.add_buffer(pc.plan, pc.prefix + "running_mean", Shape{c}, 0.0f);
  running_var_ = pc.params.add_buffer(pc.plan, pc.prefix + "running_var", Shape{c}, 1.0f);
  save_mean_ = pc.plan.reserve(MemCategory::kActivations, Shape{c}, DType::kF32);
  save_invstd_ = pc.plan.reserve(MemCategory::kActivations, Shape{c}, DType::kF32);
  pc.need_cross_rank_doubles(4 * c);  // this rank's (C, 2) sums, then the ranks' total
  if (pc.ops) {
    pc.need_workspace(pc.ops->batchnorm_workspace_bytes(shape(pc.batch)));
    if (pc.tail_rows > 0) pc.need_workspace(pc.ops->batchnorm_workspace_bytes(shape(pc.tail_rows)));
  }
  y_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), out_dtype_);
  if (pc.input_needs_grad)
    dx_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), pc.in_dtype);
  if (relu_)
    drelu_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), out_dtype_);
  planned_ = true;
  return in;
}

void BatchNorm2d::with_relu() {
  if (planned_)
    throw std::logic_error("BatchNorm2d::with_relu: called after plan(), which did not plan "
                           "the ReLU's buffer");
  relu_ = true;
}

Tensor BatchNorm2d::forward(Context& ctx, const Tensor& x) {
  return forward(ctx, x, Tensor{}, relu_ ? Act::kReLU : Act::kNone);
}

Tensor BatchNorm2d::forward(Context& ctx, const Tensor& x, const Tensor& residual, Act act) {
  x_ = x;
  const NormShape s = shape(x.rows());
  Tensor y = ctx.view(y_, x.rows());  // (B, C, H, W)
  const BatchNormEpilogue epi{residual, act};
  if (ctx.training() && ctx.cross_rank_sum())
    forward_synced(ctx, *ctx.cross_rank_sum(), x, y, epi);
  else if (ctx.training())
    ctx.ops().batchnorm_forward_train(s, x, ctx.f32(gamma_.value), ctx.f32(beta_.value), hyper_,
                                      y, epi, ctx.f32(save_mean_), ctx.f32(save_invstd_),
                                      ctx.f32(running_mean_), ctx.f32(running_var_),
                                      ctx.workspace());
  else
    ctx.ops().batchnorm_forward_eval(s, x, ctx.f32(gamma_.value), ctx.f32(beta_.value),
                                     ctx.f32(running_mean_), ctx.f32(running_var_), hyper_, y,
                                     epi);
  return y;
}

// Follows a training forward: dgamma, dbeta (C) accumulate; dx only when planned. With a
// fused ReLU, dy is the gradient at the ReLU's output.
Tensor BatchNorm2d::backward(Context& ctx, const Tensor& dy) {
  if (relu_ && fuses_relu_backward(ctx))
    return backward_through_relu(ctx, dy, ctx.view(y_, x_.rows()));
  Tensor dx = dx_.valid() ? ctx.view(dx_, x_.rows()) : Tensor{};
  Tensor g = dy;
  if (relu_) {  // synchronised: ReLU's gradient first, as the separate layer took it
    g = ctx.view(drelu_, x_.rows());
    ctx.ops().act_backward(dy, Tensor{}, ctx.view(y_, x_.rows()), g, Act::kReLU);
  }
  if (ctx.cross_rank_sum()) {
    backward_synced(ctx, *ctx.cross_rank_sum(), g, dx);
    return dx;
  }
  ctx.ops().batchnorm_backward(shape(x_.rows()), g, x_, ctx.f32(gamma_.value),
                               ctx.f32(save_mean_), ctx.f32(save_invstd_), dx,
                               ctx.f32(gamma_.grad), ctx.f32(beta_.grad), ctx.workspace());
  return dx;
}

Tensor BatchNorm2d::backward_through_relu(Context& ctx, const Tensor& dy,
                                          const Tensor& relu_post) {
  if (!fuses_relu_backward(ctx))
    throw std::logic_error("BatchNorm2d::backward_through_relu: synchronised BatchNorm takes "
                           "act_backward, then backward()");
  Tensor dx = dx_.valid() ? ctx.view(dx_, x_.rows()) : Tensor{};
  ctx.ops().batchnorm_relu_backward(shape(x_.rows()), dy, relu_post, x_, ctx.f32(gamma_.value),
                                    ctx.f32(beta_.value), ctx.f32(save_mean_),
                                    ctx.f32(save_invstd_), dx, ctx.f32(gamma_.grad),
                                    ctx.f32(beta_.grad), ctx.workspace());
  return dx;
}

// The cross-rank buffer: this rank's sums (C, 2), then their sum over the ranks (C, 2);
// every rank has x_.rows() rows, so a channel's total covers ranks times this rank's values.
void BatchNorm2d::forward_synced(Context& ctx, CrossRankSum& ranks, const Tensor& x,
                                 const Tensor& y, const BatchNormEpilogue& epi) {
  const NormShape s = shape(x.rows());
  double* local = ctx.cross_rank_doubles();
  double* total = local + 2 * s.channels;
  ctx.ops().batchnorm_stats(s, x, local, ctx.workspace());
  ranks.sum(local, total, 2 * s.channels);
  ctx.ops().batchnorm_forward_from_stats(s, x, total, s.per_channel() * ranks.ranks(),
                                         ctx.f32(gamma_.value), ctx.f32(beta_.value), hyper_, y,
                                         epi, ctx.f32(save_mean_), ctx.f32(save_invstd_),
                                         ctx.f32(running_mean_), ctx.f32(running_var_),
                                         ctx.workspace());
}

void BatchNorm2d::backward_synced(Context& ctx, CrossRankSum& ranks, const Tensor& dy,
                                  const Tensor& dx) {
  const NormShape s = shape(x_.rows());
  double* local = ctx.cross_rank_doubles();
  double* total = local + 2 * s.channels;
  ctx.ops().batchnorm_backward_stats(s, dy, x_, ctx.f32(save_mean_), ctx.f32(save_invstd_), local,
                                     ctx.workspace());
  ranks.sum(local, total, 2 * s.channels);
  ctx.ops().batchnorm_backward_from_stats(s, dy, x_, ctx.f32(gamma_.value), ctx.f32(save_mean_),
                                          ctx.f32(save_invstd_), local, total,
                                          s.per_channel() * ranks.ranks(), dx,
                                          ctx.f32(gamma_.grad), ctx.f32(beta_.grad),
                                          ctx.workspace());
}

}  // namespace noeira
