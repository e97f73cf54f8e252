// A test rig that plans one module on the CPU backend, fills its parameters and input
// with deterministic random values, and evaluates L = sum(y * R) in double, so that
// dL/dy = R and finite differences can check every analytic gradient.
#pragma once
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "nn/context.h"
#include "nn/module.h"

namespace noeira::test {

class ModuleRig {
 public:
  ModuleRig(std::unique_ptr<Module> m, const Shape& in, int64_t batch, uint32_t seed = 1)
      : module_(std::move(m)), in_(in), batch_(batch), ops_(1) {
    PlanContext pc{plan_, params_, batch, true, ""};
    out_ = module_->plan(pc, in);
    x_ = plan_.reserve(MemCategory::kActivations, in.with_batch(batch), DType::kF32);
    r_ = plan_.reserve(MemCategory::kActivations, out_.with_batch(batch), DType::kF32);
    counters_ = plan_.reserve(MemCategory::kScalars, Shape{4}, DType::kI32);
    arenas_ = std::move(Arenas::allocate(plan_, alloc_).value());
    ctx_ = std::make_unique<Context>(ops_, arenas_, counters_);
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (const ParamInfo& p : params_.all()) fill(arenas_.as<float>(p.value), p.value.shape.numel(), gen, u);
    fill(arenas_.as<float>(x_), x_.shape.numel(), gen, u);
    fill(arenas_.as<float>(r_), r_.shape.numel(), gen, u);
  }

  // L = sum(y * R), accumulated in double.
  double loss() {
    const Tensor y = module_->forward(*ctx_, arenas_.view(x_));
    const float* r = arenas_.as<float>(r_);
    double l = 0.0;
    for (int64_t i = 0; i < y.numel(); ++i) l += static_cast<double>(y.f32()[i]) * r[i];
    return l;
  }

  // Runs forward + backward; returns d(input) (gradients land in the grad arena).
  Tensor backward() {
    ops_.fill_zero(arenas_.base(MemCategory::kGrads), plan_.bytes(MemCategory::kGrads));
    module_->forward(*ctx_, arenas_.view(x_));
    return module_->backward(*ctx_, arenas_.view(r_));
  }

  // Central difference of L with respect to *v.
  double numeric(float* v, float h) {
    const float saved = *v;
    *v = saved + h;
    const double lp = loss();
    *v = saved - h;
    const double lm = loss();
    *v = saved;
    return (lp - lm) / (2.0 * static_cast<double>(h));
  }

  float* input() { return arenas_.as<float>(x_); }
  int64_t input_size() const { return x_.shape.numel(); }
  const ParamRegistry& params() const { return params_; }
  float* value(const ParamInfo& p) { return arenas_.as<float>(p.value); }
  float* grad(const ParamInfo& p) { return arenas_.as<float>(p.grad); }
  Module& module() { return *module_; }

 private:
  static void fill(float* p, int64_t n, std::mt19937& g, std::uniform_real_distribution<float>& u) {
    for (int64_t i = 0; i < n; ++i) p[i] = u(g);
  }
  std::unique_ptr<Module> module_;
  Shape in_, out_;
  int64_t batch_;
  CpuOps ops_;
  HostAllocator alloc_;
  MemoryPlan plan_;
  ParamRegistry params_;
  Arenas arenas_;
  Slot x_, r_, counters_;
  std::unique_ptr<Context> ctx_;
};

// |a - n| <= atol + rtol * max(|a|, |n|)
inline bool grad_close(double analytic, double numeric, double rtol = 1e-2, double atol = 2e-3) {
  return std::abs(analytic - numeric) <= atol + rtol * std::max(std::abs(analytic), std::abs(numeric));
}

}  // namespace noeira::test
