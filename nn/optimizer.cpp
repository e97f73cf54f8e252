#include "nn/optimizer.h"

namespace noeira {

const char* optimizer_name(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::kAdam: return "adam";
    case OptimizerKind::kAdamW: return "adamw";
    case OptimizerKind::kSgd: return "sgd";
  }
  return "?";
}

Optimizer::Optimizer(OptimizerConfig cfg) : cfg_(cfg) {
  cfg_.adam.decoupled = cfg_.kind == OptimizerKind::kAdamW;
}

void Optimizer::plan(MemoryPlan& plan, size_t param_bytes) {
  n_ = static_cast<int64_t>(param_bytes / sizeof(float));
  s0_ = plan.reserve(MemCategory::kOptimState, Shape{n_}, DType::kF32);
  if (cfg_.kind != OptimizerKind::kSgd)
    s1_ = plan.reserve(MemCategory::kOptimState, Shape{n_}, DType::kF32);
}

void Optimizer::step(Context& ctx) {
  float* p = static_cast<float*>(ctx.arenas().base(MemCategory::kParams));
  const float* g = static_cast<const float*>(ctx.arenas().base(MemCategory::kGrads));
  if (cfg_.kind == OptimizerKind::kSgd)
    ctx.ops().sgd(p, g, ctx.f32(s0_), n_, cfg_.sgd, ctx.counters());
  else
    ctx.ops().adam(p, g, ctx.f32(s0_), ctx.f32(s1_), n_, cfg_.adam, ctx.counters());
}

std::vector<std::pair<std::string, Slot>> Optimizer::state() const {
  if (cfg_.kind == OptimizerKind::kSgd) return {{"sgd.momentum", s0_}};
  return {{"adam.m", s0_}, {"adam.v", s1_}};
}

}  // namespace noeira
