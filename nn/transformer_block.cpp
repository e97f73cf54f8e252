#include "nn/transformer_block.h"

namespace noeira {

TransformerBlock::TransformerBlock(int64_t heads, bool bias, bool causal, int64_t mlp_ratio)
    : bias_(bias),
      mlp_ratio_(mlp_ratio),
      ln_1_(1e-5f, bias),
      ln_2_(1e-5f, bias),
      attn_(heads, bias, causal) {}

Shape TransformerBlock::plan(PlanContext& pc, const Shape& in) {
  const std::string name = pc.where("TransformerBlock");
  if (in.rank != 2) throw PlanError(name + ": input " + in.str() + " is not a sequence (T, C)");
  const DType flow = flow_dtype(pc.amp);
  if (pc.in_dtype != flow)
    throw PlanError(name + ": input must be in the flow dtype (" +
                    std::string(dtype_name(flow)) + "); put an Embedding or a cast before it");
  const int64_t C = in[1];
  if (mlp_ratio_ <= 0) throw PlanError(name + ": the MLP ratio must be positive");
  mlp_ = std::make_unique<Sequential>();
  auto c_fc = std::make_unique<LinearAct>(mlp_ratio_ * C, Act::kGELU, bias_);
  auto c_proj = std::make_unique<Linear>(C, Act::kNone, bias_);
  // c_proj multiplies its d(input) by c_fc's saved GELU derivative as the GEMM writes it
  // (Linear::chain): one pass over the activations less.
  Linear::chain(*c_fc, *c_proj);
  mlp_->add("c_fc", std::move(c_fc));
  mlp_->add("c_proj", std::move(c_proj));
  // Registration order: ln_1, attn, ln_2, mlp (nanoGPT's state dict order).
  PlanContext c1 = pc.child("ln_1", pc.input_needs_grad, flow);
  ln_1_.plan(c1, in);
  PlanContext ca = pc.child("attn", true, ln_1_.out_dtype());
  attn_.plan(ca, in);
  PlanContext c2 = pc.child("ln_2", true, flow);
  ln_2_.plan(c2, in);
  PlanContext cm = pc.child("mlp", true, ln_2_.out_dtype());
  mlp_->plan(cm, in);
  if (attn_.out_dtype() != flow || mlp_->out_dtype() != flow)
    throw PlanError(name + ": attn and mlp must keep the flow dtype");
  out_dtype_ = flow;
  const Shape b = in.with_batch(pc.batch);
  y1_ = pc.plan.reserve(MemCategory::kActivations, b, flow);
  y_ = pc.plan.reserve(MemCategory::kActivations, b, flow);
  return in;
}

Tensor TransformerBlock::forward(Context& ctx, const Tensor& x) {
  Ops& ops = ctx.ops();
  x_ = x;
  const Tensor a = attn_.forward(ctx, ln_1_.forward(ctx, x));
  Tensor y1 = ctx.view(y1_, x.rows());
  ops.add(x, a, y1);
  const Tensor m = mlp_->forward(ctx, ln_2_.forward(ctx, y1));
  Tensor y = ctx.view(y_, x.rows());
  ops.add(y1, m, y);
  return y;
}

// Each residual add's backward runs in its LayerNorm's backward pass (no separate add):
// the same bits as layernorm_backward then add.
Tensor TransformerBlock::backward(Context& ctx, const Tensor& dy) {
  // dy1 = dy + d(mlp(ln_2(y1)))/dy1
  const Tensor dy1 = ln_2_.backward(ctx, mlp_->backward(ctx, dy), dy);
  // dx = dy1 + d(attn(ln_1(x)))/dx; empty when the block's input needs no gradient
  return ln_1_.backward(ctx, attn_.backward(ctx, dy1), dy1);
}

}  // namespace noeira
