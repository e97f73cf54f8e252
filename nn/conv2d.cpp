#include "nn/conv2d.h"

#include <stdexcept>

namespace noeira {

std::string Conv2d::kind() const {
  switch (act_) {
    case Act::kReLU: return "Conv2d(relu)";
    case Act::kGELU: return "Conv2d(gelu)";
    default: return "Conv2d";
  }
}

ConvShape Conv2d::shape(int64_t rows) const {
  ConvShape s = shape_;
  s.batch = rows;
  return s;
}

Shape Conv2d::plan(PlanContext& pc, const Shape& in) {
  const std::string name = pc.where("Conv2d");
  if (in.rank != 3)
    throw PlanError(name + ": input " + in.str() + " is not an image (C, H, W)");
  if (out_ < 1 || kernel_ < 1 || stride_ < 1 || pad_ < 0)
    throw PlanError(name + ": needs out_channels, kernel and stride >= 1 and pad >= 0");
  if (in[1] + 2 * pad_ < kernel_ || in[2] + 2 * pad_ < kernel_)
    throw PlanError(name + ": kernel " + std::to_string(kernel_) +
                    " is larger than the padded input " + in.str() + " (pad " +
                    std::to_string(pad_) + "); use a smaller kernel or more padding");
  // x (B, Cin, H, W) * w (Cout, Cin, k, k) -> y (B, Cout, Ho, Wo)
  shape_ = ConvShape{pc.batch, in[0],   in[1], in[2],    out_,
                     kernel_,  kernel_, stride_, pad_, has_bias_, pc.input_needs_grad};
  const Shape out{out_, shape_.out_height(), shape_.out_width()};
  bf16_ = pc.amp == BF16Policy;
  const DType flow = flow_dtype(pc.amp);
  out_dtype_ = flow;
  const int64_t taps = kernel_ * kernel_;
  pc.add_flops(2.0 * static_cast<double>(in[0] * taps) * static_cast<double>(out.numel()));
  weight_ = pc.params.add(pc.plan, pc.prefix + "weight", Shape{out_, in[0], kernel_, kernel_},
                          ParamRole::kWeight, in[0] * taps, out_ * taps);
  if (has_bias_)
    bias_ = pc.params.add(pc.plan, pc.prefix + "bias", Shape{out_}, ParamRole::kBias,
                          in[0] * taps, out_ * taps);
  // The backend's primitives (and their workspace) for every row count forward will see.
  // Without a backend (a shape-only plan: the micro benchmarks reading layer shapes)
  // nothing is planned there, and running the module would stop at its first pass.
  if (pc.ops) {
    const auto plan_rows = [&](int64_t rows) {
      Result<size_t> ws = pc.ops->conv2d_plan(shape(rows), flow);
      if (!ws) throw PlanError(name + ": " + ws.error().message);
      pc.need_workspace(*ws);
    };
    plan_rows(pc.batch);
    if (pc.tail_rows > 0 && pc.tail_rows != pc.batch) plan_rows(pc.tail_rows);
  }
  const Shape y = out.with_batch(pc.batch), x = in.with_batch(pc.batch);
  z_ = pc.plan.reserve(MemCategory::kActivations, y, flow);
  if (act_ != Act::kNone) {
    y_ = pc.plan.reserve(MemCategory::kActivations, y, flow);
    dz_ = pc.plan.reserve(MemCategory::kActivations, y, flow);
  }
  // An input in another dtype (fp32 into a BF16Policy model) is cast at the boundary.
  if (pc.in_dtype != flow) x_cast_ = pc.plan.reserve(MemCategory::kActivations, x, flow);
  if (pc.input_needs_grad) {
    dx_ = pc.plan.reserve(MemCategory::kActivations, x, pc.in_dtype);
    if (pc.in_dtype != flow) dx_low_ = pc.plan.reserve(MemCategory::kActivations, x, flow);
  }
  return out;
}

// W as the convolutions read it: the fp32 master, or its bf16 copy under BF16Policy.
ConstView Conv2d::weight(const Context& ctx) const {
  return bf16_ ? ctx.view(weight_.copy) : ctx.view(weight_.value);
}

Tensor Conv2d::forward(Context& ctx, const Tensor& x) {
  Ops& ops = ctx.ops();
  rows_ = x.rows();
  x_ = x;  // (B, Cin, H, W)
  if (x_cast_.valid()) {
    x_ = ctx.view(x_cast_, rows_);
    ops.cast(x, x_);
  }
  Tensor z = ctx.view(z_, rows_);  // (B, Cout, Ho, Wo)
  ops.conv2d_forward(shape(rows_), x_, weight(ctx), has_bias_ ? ctx.f32(bias_.value) : nullptr,
                     z, ctx.workspace(), ctx.workspace_bytes());
  if (act_ == Act::kNone) return z;
  Tensor y = ctx.view(y_, rows_);
  ops.act_forward(z, y, act_);
  return y;
}

Tensor Conv2d::backward(Context& ctx, const Tensor& dy) { return backward(ctx, dy, {}); }

Tensor Conv2d::backward(Context& ctx, const Tensor& dy, const ConvDxEpilogue& epi) {
  Ops& ops = ctx.ops();
  if (!epi.empty() && (!dx_.valid() || dx_low_.valid()))
    throw std::logic_error("Conv2d::backward: a dx epilogue needs d(input) in the flow dtype");
  const ConvShape s = shape(rows_);
  Tensor dz = dy;  // (B, Cout, Ho, Wo): the gradient before the activation
  if (act_ != Act::kNone) {
    dz = ctx.view(dz_, rows_);
    ops.act_backward(dy, ctx.view(z_, rows_), ctx.view(y_, rows_), dz, act_);
  }
  // dW (Cout, Cin, k, k) += x (*) dz over the batch;  db (Cout) += sums of dz; and dx
  // (B, Cin, H, W), when wanted, the transposed convolution of dz with W in the flow dtype
  // (one op: the CPU copies dz into its kernels' layout once for both)
  Tensor dx = dx_.valid() ? ctx.view(dx_, rows_) : Tensor{};
  Tensor dflow = dx_low_.valid() ? ctx.view(dx_low_, rows_) : dx;
  ops.conv2d_backward(s, x_, dz, weight(ctx), dflow, epi, ctx.f32(weight_.grad),
                      has_bias_ ? ctx.f32(bias_.grad) : nullptr, ctx.workspace(),
                      ctx.workspace_bytes());
  if (!dx_.valid()) return Tensor{};
  if (dx_low_.valid()) ops.cast(dflow, dx);
  return dx;
}

}  // namespace noeira
