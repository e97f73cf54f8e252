#include "nn/flatten.h"

namespace noeira {

Shape Flatten::plan(PlanContext& pc, const Shape& in) {
  out_dtype_ = pc.in_dtype;
  input_needs_grad_ = pc.input_needs_grad;
  return Shape{in.numel()};
}

Tensor Flatten::forward(Context& ctx, const Tensor& x) {
  (void)ctx;
  in_ = x.shape;
  Tensor y = x;  // (B, C*H*W): the same memory
  y.shape = Shape{x.rows(), x.shape.row_elems()};
  return y;
}

Tensor Flatten::backward(Context& ctx, const Tensor& dy) {
  (void)ctx;
  if (!input_needs_grad_) return Tensor{};
  Tensor dx = dy;  // (B, C, H, W): the same memory
  dx.shape = in_;
  return dx;
}

}  // namespace noeira
