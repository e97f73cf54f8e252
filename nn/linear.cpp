#include "nn/linear.h"

#include "kernels/common/saturating.h"

namespace noeira {

std::string Linear::kind() const {
  switch (act_) {
    case Act::kReLU: return "LinearAct(relu)";
    case Act::kGELU: return "LinearAct(gelu)";
    default: return "Linear";
  }
}

void Linear::chain(Linear& before, Linear& after) {
  if (before.in_ != 0 || after.in_ != 0)
    throw std::logic_error("Linear::chain: called after plan(), which planned the layers "
                           "unchained");
  if (before.act_ != Act::kGELU)
    throw std::logic_error("Linear::chain: the layer before keeps no derivative (GELU only)");
  before.dy_is_dz_ = true;
  after.before_ = &before;
}

Shape Linear::plan(PlanContext& pc, const Shape& in) {
  // A chained layer's input is the layer before's output, whose gradient it writes.
  if (before_ && (!pc.input_needs_grad || pc.in_dtype != before_->out_dtype_ ||
                  in[in.rank - 1] != before_->out_))
    throw PlanError(pc.where(kind()) + ": chained after a Linear, but its input is not that "
                    "layer's output, or needs no gradient");
  // Applies to the last dimension; leading dimensions (e.g. sequence) are rows.
  in_ = in[in.rank - 1];
  Shape out = in;
  out[out.rank - 1] = out_;
  bf16_ = pc.amp == BF16Policy;
  in_dtype_ = pc.in_dtype;
  out_dtype_ = flow_dtype(pc.amp);
  weight_ = pc.params.add(pc.plan, pc.prefix + "weight", Shape{out_, in_}, ParamRole::kWeight,
                          in_, out_);
  pc.params.mark_grad_overwritten(weight_);  // backward() overwrites dW, no other op uses W
  if (has_bias_)
    bias_ = pc.params.add(pc.plan, pc.prefix + "bias", Shape{out_}, ParamRole::kBias, in_, out_);
  pc.add_flops(2.0 * static_cast<double>(in.numel() / in_) * static_cast<double>(in_) *
               static_cast<double>(out_));
  const Shape y = out.with_batch(pc.batch);
  y_ = pc.plan.reserve(MemCategory::kActivations, y, out_dtype_);
  if (act_ == Act::kGELU) dact_ = pc.plan.reserve(MemCategory::kActivations, y, DType::kF32);
  if (act_ != Act::kNone && !dy_is_dz_)
    dz_ = pc.plan.reserve(MemCategory::kActivations, y, out_dtype_);
  if (pc.input_needs_grad)
    dx_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), in_dtype_);
  // The weight gradient's scratch, where the backend takes one (dz is in out_dtype_).
  if (pc.ops) pc.need_workspace(pc.ops->linear_params_workspace_bytes(out_, in_, out_dtype_));
  if (bf16_) {
    // The boundary cast of an fp32 input, and the fp32 GEMM results before rounding.
    if (in_dtype_ != DType::kBF16)
      x_cast_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), DType::kBF16);
    pc.need_scratch(sat_mul({pc.batch, in.numel() / in_, std::max(in_, out_)}));
  }
  return out;
}

// W as the GEMMs read it: the fp32 master, or its bf16 copy under BF16Policy.
ConstView Linear::weight(const Context& ctx) const {
  return bf16_ ? ctx.view(weight_.copy) : ctx.view(weight_.value);
}

Tensor Linear::forward(Context& ctx, const Tensor& x) {
  // Chained (chain()): the backward multiplies by the layer before's saved derivative, which
  // is only right when that layer's output is this input (plan() checked width and dtype).
  if (before_ && x.data != ctx.view(before_->y_, x.rows()).data)
    throw std::logic_error(kind() + ": chained after a Linear whose output is not its input");
  const int64_t M = x.numel() / in_;  // (M, in) rows
  Tensor y = ctx.view(y_, x.rows());  // (M, out)
  x_ = x;
  if (x_cast_.valid()) {  // BF16Policy with an fp32 input: the boundary cast
    x_ = ctx.view(x_cast_, x.rows());
    ctx.ops().cast(x, x_);
  }
  // y (M, out) = act(x (M, in) . W^T (in, out) + b); under BF16Policy rounded once to
  // bf16: by cuBLASLt's epilogue on CUDA, else by bias_act from the fp32 product in the
  // scratch (kernels/op_list.inc). GELU: dact (M, out) = GELU'(pre-activation).
  ctx.ops().linear_forward(x_, weight(ctx), has_bias_ ? ctx.f32(bias_.value) : nullptr, y,
                           dact_.valid() ? ctx.view(dact_, x.rows()) : Tensor{},
                           bf16_ ? ctx.scratch_f32() : nullptr, M, out_, in_, act_);
  return y;
}

// Activations and their gradients in the flow dtype (bf16 under BF16Policy); parameter
// gradients always fp32.
Tensor Linear::backward(Context& ctx, const Tensor& dy) {
  Ops& ops = ctx.ops();
  const int64_t M = x_.numel() / in_;
  Tensor dz = dy;  // (M, out): the gradient before the activation (chained: dy already)
  if (act_ != Act::kNone && !dy_is_dz_) {
    dz = ctx.view(dz_, x_.rows());
    if (dact_.valid())
      ops.act_backward_saved(dy, ctx.view(dact_, x_.rows()), dz);
    else  // ReLU: from its output
      ops.act_backward(dy, Tensor{}, ctx.view(y_, x_.rows()), dz, act_);
  }
  // dW(out, in) = dz^T (out, M) . x (M, in), overwritten (W is this layer's alone: the
  // trainer does not zero it first);  db(out) += sum over rows of dz
  ops.linear_backward_params(dz, x_, ctx.f32(weight_.grad),
                             has_bias_ ? ctx.f32(bias_.grad) : nullptr, M, out_, in_,
                             ctx.workspace(), true);
  if (!dx_.valid()) return Tensor{};
  // dx(M, in) = dz (M, out) . W (out, in): an fp32 product, rounded once when dx is bf16
  // (on CUDA by cuBLASLt itself; the scratch is for the backends that round after)
  Tensor dx = ctx.view(dx_, x_.rows());
  ops.linear_backward_data(dz, weight(ctx), dx,
                           dx.dtype != DType::kF32 ? ctx.scratch_f32() : nullptr, M, out_, in_,
                           before_ ? ctx.view(before_->dact_, x_.rows()) : Tensor{});
  return dx;
}

}  // namespace noeira
