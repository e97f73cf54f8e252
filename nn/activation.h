// Stand-alone activations (ReLU, GELU). Prefer LinearAct after a Linear: it saves a
// pass over memory and a buffer.
#pragma once
#include "kernels/common/math.h"
#include "nn/module.h"

namespace noeira {

class Activation : public Module {
 public:
  explicit Activation(Act act) : act_(act) {}
  std::string kind() const override { return act_ == Act::kGELU ? "GELU" : "ReLU"; }
  Shape plan(PlanContext& pc, const Shape& in) override;
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, const Tensor& dy) override;

 private:
  Act act_;
  Slot y_, dx_;
  Tensor x_;
};

class ReLU : public Activation {
 public:
  ReLU() : Activation(Act::kReLU) {}
};

class GELU : public Activation {
 public:
  GELU() : Activation(Act::kGELU) {}
};

}  // namespace noeira
