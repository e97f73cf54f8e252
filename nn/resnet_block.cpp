#include "nn/resnet_block.h"

#include <stdexcept>

namespace noeira {

BasicBlock::BasicBlock(int64_t out_channels, int64_t stride)
    : out_(out_channels), stride_(stride),
      conv1_(std::make_unique<Conv2d>(out_channels, 3, stride, 1, false)),
      conv2_(std::make_unique<Conv2d>(out_channels, 3, 1, 1, false)),
      bn1_(std::make_unique<BatchNorm2d>()), bn2_(std::make_unique<BatchNorm2d>()) {}

void BasicBlock::chain(BasicBlock& before, BasicBlock& after) {
  if (before.planned_ || after.planned_)
    throw std::logic_error("BasicBlock::chain: called after plan(), which planned the blocks "
                           "unchained");
  before.dy_through_relu_ = true;
  after.dx_through_in_relu_ = true;
}

Shape BasicBlock::plan(PlanContext& pc, const Shape& in) {
  const std::string name = pc.where("BasicBlock");
  if (in.rank != 3) throw PlanError(name + ": input " + in.str() + " is not an image (C, H, W)");
  // A chained block's input is the block before's output: the flow dtype, and a gradient
  // that block expects (a programming error otherwise).
  if (dx_through_in_relu_ && (pc.in_dtype != flow_dtype(pc.amp) || !pc.input_needs_grad))
    throw PlanError(name + ": chained after a BasicBlock, but its input is not that block's "
                    "output in the flow dtype, or needs no gradient");
  const int64_t cin = in[0];
  identity_ = stride_ == 1 && cin == out_;
  if (!identity_ && (out_ < cin || (out_ - cin) % 2 != 0))
    throw PlanError(name + ": the option-A shortcut pads (Cout - Cin) / 2 zero channels on each "
                    "side, so it needs Cout >= Cin with an even difference; got Cin " +
                    std::to_string(cin) + ", Cout " + std::to_string(out_));
  const DType flow = flow_dtype(pc.amp);
  const Shape x = in.with_batch(pc.batch);
  // An input in another dtype is cast once here; both paths then read the cast.
  if (pc.in_dtype != flow) x_cast_ = pc.plan.reserve(MemCategory::kActivations, x, flow);

  // The residual branch: conv1 -> bn1 + relu -> conv2 -> bn2 (+ shortcut, relu), every
  // input but the block's own needing its gradient.
  PlanContext c1 = pc.child("conv1", pc.input_needs_grad, flow);
  Shape s = conv1_->plan(c1, in);
  PlanContext n1 = pc.child("bn1", true, conv1_->out_dtype());
  s = bn1_->plan(n1, s);
  const Shape h1 = s.with_batch(pc.batch);  // (B, Cout, Ho, Wo)
  drelu_ = pc.plan.reserve(MemCategory::kActivations, h1, bn1_->out_dtype());
  PlanContext c2 = pc.child("conv2", true, bn1_->out_dtype());
  s = conv2_->plan(c2, s);
  PlanContext n2 = pc.child("bn2", true, conv2_->out_dtype());
  s = bn2_->plan(n2, s);
  out_dtype_ = bn2_->out_dtype();  // the flow dtype

  const Shape y = s.with_batch(pc.batch);  // (B, Cout, Ho, Wo)
  if (!identity_) {
    shortcut_ = ShortcutShape{pc.batch, cin, in[1], in[2], out_, stride_};
    if (shortcut_.out_height() != s[1] || shortcut_.out_width() != s[2])
      throw PlanError(name + ": the shortcut's output does not match the branch's " + s.str());
    sc_ = pc.plan.reserve(MemCategory::kActivations, y, out_dtype_);
    if (pc.input_needs_grad) dsc_ = pc.plan.reserve(MemCategory::kActivations, x, flow);
  }
  if (!dy_through_relu_) dsum_ = pc.plan.reserve(MemCategory::kActivations, y, out_dtype_);
  planned_ = true;
  // Chained, conv1 writes d(input) through the ReLU into its own buffer (backward()).
  if (pc.input_needs_grad && !dx_through_in_relu_) {
    dx_ = pc.plan.reserve(MemCategory::kActivations, x, pc.in_dtype);
    if (pc.in_dtype != flow) dxf_ = pc.plan.reserve(MemCategory::kActivations, x, flow);
  }
  return s;
}

Tensor BasicBlock::forward(Context& ctx, const Tensor& x) {
  Ops& ops = ctx.ops();
  rows_ = x.rows();
  xf_ = x;  // (B, Cin, H, W)
  if (x_cast_.valid()) {
    xf_ = ctx.view(x_cast_, rows_);
    ops.cast(x, xf_);
  }
  // The shortcut first, while x is still in cache from the op that wrote it.
  Tensor sc = xf_;
  if (!identity_) {
    sc = ctx.view(sc_, rows_);
    ShortcutShape s = shortcut_;
    s.batch = rows_;
    ops.shortcut_forward(s, xf_, sc);
  }
  // Each ReLU (and the shortcut's add) in its BatchNorm's pass: the same bits as the
  // separate ops, without their passes over the activations.
  Tensor h = conv1_->forward(ctx, xf_);
  h1_ = bn1_->forward(ctx, h, Tensor{}, Act::kReLU);
  h = conv2_->forward(ctx, h1_);
  y_ = bn2_->forward(ctx, h, sc, Act::kReLU);  // (B, Cout, Ho, Wo)
  return y_;
}

Tensor BasicBlock::backward(Context& ctx, const Tensor& dy) {
  Ops& ops = ctx.ops();
  // d(sum) reaches both paths unchanged. Chained (chain()): dy is d(sum) already.
  Tensor dsum = dy;
  if (!dy_through_relu_) {
    dsum = ctx.view(dsum_, rows_);
    ops.act_backward(dy, Tensor{}, y_, dsum, Act::kReLU);  // ReLU's gradient reads its output
  }
  Tensor g = bn2_->backward(ctx, dsum);
  g = conv2_->backward(ctx, g);
  // ReLU's gradient inside bn1's backward where it can (three passes over the activations
  // fewer on the CPU), else its own op into drelu.
  if (bn1_->fuses_relu_backward(ctx)) {
    g = bn1_->backward_through_relu(ctx, g, h1_);
  } else {
    Tensor drelu = ctx.view(drelu_, rows_);
    ops.act_backward(g, Tensor{}, h1_, drelu, Act::kReLU);
    g = bn1_->backward(ctx, drelu);
  }
  // d(input) through the shortcut: dsum itself, or option A's subsample of it.
  Tensor dshort = dsum;
  if (!identity_ && dsc_.valid()) {
    dshort = ctx.view(dsc_, rows_);
    ShortcutShape s = shortcut_;
    s.batch = rows_;
    ops.shortcut_backward(s, dsum, dshort);
  }
  // Chained (chain()): conv1's d(input) plus the shortcut's, through the ReLU whose output
  // was our input (xf_ is x: no cast, plan()), in conv1's pass over d(input), into its buffer.
  if (dx_through_in_relu_) return conv1_->backward(ctx, g, ConvDxEpilogue{dshort, xf_});
  g = conv1_->backward(ctx, g);  // (B, Cin, H, W), empty when no one needs d(input)
  if (!dx_.valid()) return Tensor{};
  Tensor dx = ctx.view(dx_, rows_);
  Tensor dflow = dxf_.valid() ? ctx.view(dxf_, rows_) : dx;
  ops.add(g, dshort, dflow);
  if (dxf_.valid()) ops.cast(dflow, dx);
  return dx;
}

}  // namespace noeira
