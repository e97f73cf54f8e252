// Dropout: in training y = x * keep / (1 - p), keep drawn from Philox by (seed, step,
// layer, element) (kernels/common/philox.h dropout_keep), so backward draws the same mask
// again instead of storing it; in evaluation the identity (forward returns x itself).
#pragma once
#include "nn/module.h"

namespace noeira {

class Dropout : public Module {
 public:
  // layer: this dropout's index among the model's, a Philox key (distinct masks per layer).
  Dropout(float p, uint32_t layer) : p_(p), layer_(layer) {}
  std::string kind() const override { return "Dropout"; }
  Shape plan(PlanContext& pc, const Shape& in) override;
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, const Tensor& dy) override;

 private:
  float p_;
  uint32_t layer_;
  Slot y_, dx_;  // (B, ...) x2, in the input's dtype
  int64_t rows_ = 0;
};

}  // namespace noeira
