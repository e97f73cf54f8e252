#include "nn/pool.h"

namespace noeira {

std::string Pool2d::kind() const {
  switch (mode_) {
    case Mode::kMax: return "MaxPool2d";
    case Mode::kAvg: return "AvgPool2d";
    default: return "GlobalAvgPool";
  }
}

PoolShape Pool2d::shape(int64_t rows) const {
  PoolShape s = shape_;
  s.batch = rows;
  return s;
}

Shape Pool2d::plan(PlanContext& pc, const Shape& in) {
  const std::string name = pc.where(kind());
  if (in.rank != 3) throw PlanError(name + ": input " + in.str() + " is not an image (C, H, W)");
  // x (B, C, H, W) -> y (B, C, Ho, Wo)
  if (mode_ == Mode::kGlobalAvg)
    shape_ = PoolShape{pc.batch, in[0], in[1], in[2], in[1], in[2], 1, 0};
  else
    shape_ = PoolShape{pc.batch, in[0], in[1], in[2], kernel_, kernel_, stride_, pad_};
  if (shape_.kernel_h < 1 || shape_.stride < 1 || pad_ < 0 || 2 * pad_ > shape_.kernel_h)
    throw PlanError(name + ": needs kernel and stride >= 1 and 0 <= pad <= kernel / 2 "
                    "(torch's rule)");
  if (in[1] + 2 * pad_ < shape_.kernel_h || in[2] + 2 * pad_ < shape_.kernel_w)
    throw PlanError(name + ": kernel " + std::to_string(shape_.kernel_h) +
                    " is larger than the padded input " + in.str() + "; use a smaller kernel");
  const Shape out{in[0], shape_.out_height(), shape_.out_width()};
  out_dtype_ = pc.in_dtype;
  y_ = pc.plan.reserve(MemCategory::kActivations, out.with_batch(pc.batch), out_dtype_);
  if (mode_ == Mode::kMax)
    argmax_ = pc.plan.reserve(MemCategory::kActivations, out.with_batch(pc.batch), DType::kI32);
  if (pc.input_needs_grad)
    dx_ = pc.plan.reserve(MemCategory::kActivations, in.with_batch(pc.batch), pc.in_dtype);
  return out;
}

Tensor Pool2d::forward(Context& ctx, const Tensor& x) {
  rows_ = x.rows();
  Tensor y = ctx.view(y_, rows_);  // (B, C, Ho, Wo)
  if (mode_ == Mode::kMax)
    ctx.ops().maxpool2d_forward(shape(rows_), x, y, ctx.arenas().as<int32_t>(argmax_));
  else
    ctx.ops().avgpool2d_forward(shape(rows_), x, y);
  return y;
}

Tensor Pool2d::backward(Context& ctx, const Tensor& dy) {
  if (!dx_.valid()) return Tensor{};
  Tensor dx = ctx.view(dx_, rows_);  // (B, C, H, W)
  if (mode_ == Mode::kMax)
    ctx.ops().maxpool2d_backward(shape(rows_), dy, ctx.arenas().as<int32_t>(argmax_), dx);
  else
    ctx.ops().avgpool2d_backward(shape(rows_), dy, dx);
  return dx;
}

}  // namespace noeira
