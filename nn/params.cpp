#include "nn/params.h"

namespace noeira {

ParamRef ParamRegistry::add(MemoryPlan& plan, std::string name, const Shape& shape,
                            ParamRole role, int64_t fan_in, int64_t fan_out) {
  // Every tensor starts on a kParamAlignElems-element boundary: 32 bytes for the fp32
  // value and gradient, 16 for the bf16 copy, which cuBLASLt's vectorised (Hopper) GEMM
  // kernels need, and the copy stays at half the value's byte offset. Arenas start zeroed
  // and gradients of padding are never written, so padding stays zero in values,
  // gradients, optimizer state and copies alike (Adam and SGD map 0 to 0).
  ParamInfo p;
  p.name = std::move(name);
  p.value = plan.reserve(MemCategory::kParams, shape, DType::kF32, kParamAlignElems * 4);
  p.grad = plan.reserve(MemCategory::kGrads, shape, DType::kF32, kParamAlignElems * 4);
  if (copies_)
    p.copy = plan.reserve(MemCategory::kParamCopies, shape, DType::kBF16, kParamAlignElems * 2);
  p.role = role;
  p.fan_in = fan_in;
  p.fan_out = fan_out;
  params_.push_back(p);
  return ParamRef{p.value, p.grad, p.copy};
}

Slot ParamRegistry::add_buffer(MemoryPlan& plan, std::string name, const Shape& shape, float init) {
  BufferInfo b{std::move(name), plan.reserve(MemCategory::kBuffers, shape, DType::kF32), init};
  buffers_.push_back(b);
  return b.value;
}

void ParamRegistry::mark_grad_overwritten(const ParamRef& ref) {
  for (ParamInfo& p : params_)
    if (p.grad.offset == ref.grad.offset && p.grad.category == ref.grad.category)
      p.grad_overwritten = true;
}

int64_t ParamRegistry::count() const {
  int64_t n = 0;
  for (const ParamInfo& p : params_) n += p.value.shape.numel();
  return n;
}

}  // namespace noeira
