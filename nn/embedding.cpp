#include "nn/embedding.h"

namespace noeira {

Shape Embedding::plan(PlanContext& pc, const Shape& in) {
  const std::string name = pc.where("Embedding");
  if (vocab_ <= 0 || width_ <= 0 || context_ <= 0)
    throw PlanError(name + ": needs vocab, width and context > 0");
  if (in.rank != 1)
    throw PlanError(name + ": input " + in.str() + " is not a sequence of token ids (T)");
  if (pc.in_dtype != DType::kI32) throw PlanError(name + ": token ids must be int32");
  T_ = in[0];
  if (T_ > context_)
    throw PlanError(name + ": sequence length " + std::to_string(T_) + " exceeds the context " +
                    std::to_string(context_) + "; raise the model's context or shorten T");
  out_dtype_ = flow_dtype(pc.amp);
  wte_ = pc.params.add(pc.plan, pc.prefix + "wte.weight", Shape{vocab_, width_},
                       ParamRole::kWeight, width_, vocab_);
  wpe_ = pc.params.add(pc.plan, pc.prefix + "wpe.weight", Shape{context_, width_},
                       ParamRole::kWeight, width_, context_);
  const Shape out{T_, width_};
  y_ = pc.plan.reserve(MemCategory::kActivations, out.with_batch(pc.batch), out_dtype_);
  if (pc.ops) {
    pc.need_workspace(pc.ops->embedding_workspace_bytes(pc.batch * T_, vocab_, width_));
    if (pc.tail_rows > 0)
      pc.need_workspace(pc.ops->embedding_workspace_bytes(pc.tail_rows * T_, vocab_,
                                                            width_));
  }
  return out;
}

Tensor Embedding::forward(Context& ctx, const Tensor& ids) {
  ids_ = ids;
  Tensor y = ctx.view(y_, ids.rows());  // (B, T, C)
  ctx.ops().embedding_forward(ids.i32(), ctx.f32(wte_.value), ctx.f32(wpe_.value), y,
                              ids.rows() * T_, T_, width_);
  return y;
}

Tensor Embedding::backward(Context& ctx, const Tensor& dy) {
  ctx.ops().embedding_backward(ids_.i32(), dy, ctx.f32(wte_.grad), ctx.f32(wpe_.grad),
                               ids_.rows() * T_, T_, width_, vocab_, ctx.workspace());
  return Tensor{};
}

}  // namespace noeira
