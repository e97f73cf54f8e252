#include "nn/tied_head.h"

#include <algorithm>

#include "kernels/common/saturating.h"

namespace noeira {

Shape TiedLmHead::plan(PlanContext& pc, const Shape& in) {
  const std::string name = pc.where("TiedLmHead");
  wte_ = embedding_.wte();
  if (!wte_.value.valid())
    throw PlanError(name + ": its Embedding is not planned yet; put the Embedding before the head");
  if (in.rank < 1) throw PlanError(name + ": needs an input with at least one dimension");
  C_ = in[in.rank - 1];
  V_ = embedding_.vocab();
  if (C_ != embedding_.width())
    throw PlanError(name + ": input width " + std::to_string(C_) + " is not the embedding's " +
                    std::to_string(embedding_.width()));
  bf16_ = pc.amp == BF16Policy;
  out_dtype_ = flow_dtype(pc.amp);
  Shape out = in;
  out[out.rank - 1] = V_;
  pc.add_flops(2.0 * static_cast<double>(in.numel()) * static_cast<double>(V_));
  y_ = pc.plan.reserve(MemCategory::kActivations, out.with_batch(pc.batch), out_dtype_);
  if (pc.input_needs_grad)
    dx_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), pc.in_dtype);
  if (pc.ops) pc.need_workspace(pc.ops->linear_params_workspace_bytes(V_, C_, out_dtype_));
  if (bf16_) {
    if (pc.in_dtype != DType::kBF16)
      x_cast_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), DType::kBF16);
    pc.need_scratch(sat_mul({pc.batch, in.numel() / C_, std::max(C_, V_)}));
  }
  return out;
}

ConstView TiedLmHead::weight(const Context& ctx) const {
  return bf16_ ? ctx.view(wte_.copy) : ctx.view(wte_.value);
}

Tensor TiedLmHead::forward(Context& ctx, const Tensor& x) {
  const int64_t M = x.numel() / C_;
  Tensor y = ctx.view(y_, x.rows());
  x_ = x;
  if (x_cast_.valid()) {
    x_ = ctx.view(x_cast_, x.rows());
    ctx.ops().cast(x, x_);
  }
  // y (M, V) = x (M, C) . wte^T (C, V)
  ctx.ops().linear_forward(x_, weight(ctx), nullptr, y, Tensor{},
                           bf16_ ? ctx.scratch_f32() : nullptr, M, V_, C_, Act::kNone);
  return y;
}

Tensor TiedLmHead::backward(Context& ctx, const Tensor& dy) {
  Ops& ops = ctx.ops();
  const int64_t M = x_.numel() / C_;
  // dwte (V, C) += dy^T (V, M) . x (M, C)
  // Accumulated: the embedding's backward adds its own gradient of wte.
  ops.linear_backward_params(dy, x_, ctx.f32(wte_.grad), nullptr, M, V_, C_, ctx.workspace(),
                             false);
  if (!dx_.valid()) return Tensor{};
  // dx (M, C) = dy (M, V) . wte (V, C), rounded once when dx is bf16
  Tensor dx = ctx.view(dx_, x_.rows());
  ops.linear_backward_data(dy, weight(ctx), dx,
                           dx.dtype != DType::kF32 ? ctx.scratch_f32() : nullptr, M, V_, C_,
                           ConstView{});
  return dx;
}

}  // namespace noeira
