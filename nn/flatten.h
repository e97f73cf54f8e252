// (B, C, H, W) -> (B, C*H*W) without a copy: forward returns the input's memory with the
// flat shape, backward returns dy's memory with the input's shape.
#pragma once
#include "nn/module.h"

namespace noeira {

class Flatten : public Module {
 public:
  std::string kind() const override { return "Flatten"; }
  Shape plan(PlanContext& pc, const Shape& in) override;
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, const Tensor& dy) override;

 private:
  Shape in_;  // the last forward's input shape, with its rows
  bool input_needs_grad_ = false;
};

}  // namespace noeira
