#include "nn/params.h"

namespace noeira {

ParamRef ParamRegistry::add(MemoryPlan& plan, std::string name, const Shape& shape,
                            ParamRole role, int64_t fan_in, int64_t fan_out) {
  // 16-byte alignment: vector access on the GPU, little padding on small tensors.
  // Padding stays zero in values, gradients and optimizer state alike.
  ParamInfo p;
  p.name = std::move(name);
  p.value = plan.reserve(MemCategory::kParams, shape, DType::kF32, 16);
  p.grad = plan.reserve(MemCategory::kGrads, shape, DType::kF32, 16);
  if (copies_) p.copy = plan.reserve(MemCategory::kParamCopies, shape, DType::kBF16, 8);
  p.role = role;
  p.fan_in = fan_in;
  p.fan_out = fan_out;
  params_.push_back(p);
  return ParamRef{p.value, p.grad, p.copy};
}

int64_t ParamRegistry::count() const {
  int64_t n = 0;
  for (const ParamInfo& p : params_) n += p.value.shape.numel();
  return n;
}

}  // namespace noeira
