// Children run in order; each child's output buffer is the next child's input.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/module.h"

namespace noeira {

class Sequential : public Module {
 public:
  // `name` prefixes the child's parameter names ("fc1" -> "fc1.weight").
  Sequential& add(std::string name, std::unique_ptr<Module> m);
  std::string kind() const override { return "Sequential"; }
  Shape plan(PlanContext& pc, const Shape& in) override;
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, const Tensor& dy) override;
  size_t size() const { return children_.size(); }
  const std::vector<std::pair<std::string, std::unique_ptr<Module>>>& children() const {
    return children_;
  }
  // After plan(): the registry indices [first, second) of the parameters child i registered
  // (empty for a child without parameters of its own).
  std::pair<size_t, size_t> child_params(size_t i) const { return child_params_.at(i); }

 private:
  std::vector<std::pair<std::string, std::unique_ptr<Module>>> children_;
  std::vector<std::pair<size_t, size_t>> child_params_;
};

}  // namespace noeira
