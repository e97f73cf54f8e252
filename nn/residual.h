// y = x + f(x). The gradient reaches x along both paths: dx = dy + df/dx(dy).
#pragma once
#include <memory>

#include "nn/module.h"

namespace noeira {

class Residual : public Module {
 public:
  explicit Residual(std::unique_ptr<Module> f) : f_(std::move(f)) {}
  std::string kind() const override { return "Residual"; }
  Shape plan(PlanContext& pc, const Shape& in) override;
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, const Tensor& dy) override;

 private:
  std::unique_ptr<Module> f_;
  Slot y_, dx_;
  Tensor x_;
};

}  // namespace noeira
