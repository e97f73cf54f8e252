// LayerNorm over the last dimension (torch's nn.LayerNorm(C, eps, bias)): y = (x - mean) *
// rstd * gamma + beta per row, the statistics in fp32 (sums in double), saved for
// backward. "weight" (C, ParamRole::kScale, starts at 1) and, with bias, "bias" (C,
// ParamRole::kShift, starts at 0) are fp32; the output keeps the input's dtype.
#pragma once
#include "nn/module.h"

namespace noeira {

class LayerNorm : public Module {
 public:
  explicit LayerNorm(float eps = 1e-5f, bool bias = true) : eps_(eps), has_bias_(bias) {}
  std::string kind() const override { return "LayerNorm"; }
  Shape plan(PlanContext& pc, const Shape& in) override;
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, const Tensor& dy) override { return backward(ctx, dy, Tensor{}); }
  // The same, the input gradient returned with `residual` added in the same pass (a pre-LN
  // block's x + f(ln(x)): the bits of backward, then add). Ignored when no input gradient
  // is planned; must not be this module's own input gradient.
  Tensor backward(Context& ctx, const Tensor& dy, const Tensor& residual);

 private:
  int64_t rows(const Tensor& x) const { return x.numel() / c_; }  // normalised rows

  float eps_;
  bool has_bias_;
  int64_t c_ = 0;
  ParamRef gamma_, beta_;
  Slot mean_, rstd_;  // (rows) fp32: the last forward's statistics
  Slot y_, dx_;       // (B, ..., C) in the input's dtype
  Tensor x_;
};

}  // namespace noeira
