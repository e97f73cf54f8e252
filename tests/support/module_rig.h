// A test rig that plans one module on the CPU backend, fills its parameters and input
// with deterministic random values, and evaluates L = sum(y * R) in double, so that
// dL/dy = R and finite differences can check every analytic gradient.
//
// The plan is the trainer's: the backend answers plan-time queries (convolution
// primitives, workspaces), the shared fp32 scratch and workspace are reserved in
// kWorkspace and bound in the Context, buffers (BatchNorm's running statistics) start at
// their init. RigOptions choose BF16Policy (bf16 weight copies refreshed from the fp32
// values, the input cast to bf16 or not), eval-mode forward, and a tail row count.
#pragma once
#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/cpu_stream.h"
#include "nn/context.h"
#include "nn/module.h"

namespace noeira::test {

struct RigOptions {
  AmpPolicy amp = NoAMP;
  // The input's storage: kBF16 feeds the module the fp32 input rounded to bf16; kI32 feeds
  // token ids drawn uniformly from [0, vocab) (no input gradient: input() is then null).
  DType in_dtype = DType::kF32;
  int64_t vocab = 0;
  bool training = true;
  int64_t tail_rows = 0;  // PlanContext::tail_rows
  bool input_needs_grad = true;
  uint64_t seed = 0;  // Context::seed (Dropout)
  // Sums over ranks for synchronised modules (BatchNorm); its buffer is planned as a
  // trainer plans it. Null: one process.
  CrossRankSum* cross_rank_sum = nullptr;
};

class ModuleRig {
 public:
  ModuleRig(std::unique_ptr<Module> m, const Shape& in, int64_t batch, uint32_t seed = 1,
            const RigOptions& opt = {})
      : module_(std::move(m)), in_(in), batch_(batch), ops_(1) {
    const bool bf16 = opt.amp == BF16Policy;
    params_.set_low_precision_copies(bf16);
    int64_t scratch_elems = 0;
    size_t workspace_bytes = 0;
    int64_t cross_rank_doubles = 0;
    PlanContext pc{plan_, params_, batch, opt.input_needs_grad, "", opt.amp, opt.in_dtype,
                   &scratch_elems, &ops_, &workspace_bytes, opt.tail_rows};
    pc.cross_rank_doubles = &cross_rank_doubles;
    out_ = module_->plan(pc, in);
    const bool ids = opt.in_dtype == DType::kI32;
    x_ = plan_.reserve(MemCategory::kActivations, in.with_batch(batch),
                       ids ? DType::kI32 : DType::kF32);
    if (opt.in_dtype != DType::kF32 && !ids)
      x_low_ = plan_.reserve(MemCategory::kActivations, in.with_batch(batch), opt.in_dtype);
    r_ = plan_.reserve(MemCategory::kActivations, out_.with_batch(batch), DType::kF32);
    if (module_->out_dtype() != DType::kF32)
      r_low_ = plan_.reserve(MemCategory::kActivations, out_.with_batch(batch),
                             module_->out_dtype());
    counters_ = plan_.reserve(MemCategory::kScalars, Shape{sizeof(StepCounters) / 4}, DType::kI32);
    if (scratch_elems > 0)
      scratch_ = plan_.reserve(MemCategory::kWorkspace, Shape{scratch_elems}, DType::kF32);
    workspace_ = plan_.reserve_bytes(MemCategory::kWorkspace, workspace_bytes);
    if (opt.cross_rank_sum && cross_rank_doubles > 0)
      cross_rank_ = plan_.reserve_bytes(MemCategory::kWorkspace,
                                        static_cast<size_t>(cross_rank_doubles) * sizeof(double));
    arenas_ = std::move(Arenas::allocate(plan_, alloc_).value());
    ctx_ = std::make_unique<Context>(ops_, stream_, arenas_, counters_, scratch_, workspace_,
                                     opt.seed);
    ctx_->set_training(opt.training);
    if (cross_rank_.valid()) ctx_->set_cross_rank_sum(opt.cross_rank_sum, cross_rank_);
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (const ParamInfo& p : params_.all())
      fill(arenas_.as<float>(p.value), p.value.shape.numel(), gen, u);
    if (ids) {
      std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(opt.vocab - 1));
      for (int64_t i = 0; i < x_.shape.numel(); ++i) arenas_.as<int32_t>(x_)[i] = tok(gen);
    } else {
      fill(arenas_.as<float>(x_), x_.shape.numel(), gen, u);
    }
    fill(arenas_.as<float>(r_), r_.shape.numel(), gen, u);
    if (r_low_.valid()) {  // R as the module sees it; the loss uses the same rounded values
      ops_.cast(arenas_.view(r_), arenas_.view(r_low_));
      ops_.cast(arenas_.view(r_low_), arenas_.view(r_));
    }
    reset_buffers();
    refresh_copies();
  }

  // Buffers (BatchNorm's running statistics) back to their init.
  void reset_buffers() {
    for (const BufferInfo& b : params_.buffers())
      std::fill_n(arenas_.as<float>(b.value), b.value.shape.numel(), b.init);
  }
  // The bf16 weight copies from the fp32 values (BF16Policy), after changing values.
  void refresh_copies() {
    for (const ParamInfo& p : params_.all())
      if (p.copy.valid()) ops_.cast(arenas_.view(p.value), arenas_.view(p.copy));
  }

  // Forward of the first `rows` rows (all when -1); the output in its own dtype.
  Tensor forward(int64_t rows = -1) {
    if (rows < 0) rows = batch_;
    Tensor x = arenas_.view(x_, rows);
    if (x_low_.valid()) {
      Tensor xl = arenas_.view(x_low_, rows);
      ops_.cast(x, xl);
      x = xl;
    }
    return module_->forward(*ctx_, x);
  }

  // L = sum(y * R), accumulated in double.
  double loss() {
    const std::vector<float> y = to_f32(forward());
    const float* r = arenas_.as<float>(r_);
    double l = 0.0;
    for (size_t i = 0; i < y.size(); ++i) l += static_cast<double>(y[i]) * r[i];
    return l;
  }

  // Runs forward + backward; returns d(input) (gradients land in the grad arena).
  Tensor backward() {
    stream_.fill_zero(arenas_.base(MemCategory::kGrads), plan_.bytes(MemCategory::kGrads));
    forward();
    return module_->backward(*ctx_, arenas_.view(r_low_.valid() ? r_low_ : r_));
  }

  // Central difference of L with respect to *v.
  double numeric(float* v, float h) {
    const float saved = *v;
    *v = saved + h;
    refresh_copies();
    const double lp = loss();
    *v = saved - h;
    refresh_copies();
    const double lm = loss();
    *v = saved;
    refresh_copies();
    return (lp - lm) / (2.0 * static_cast<double>(h));
  }

  // A tensor's values as fp32 (bf16 widened exactly).
  static std::vector<float> to_f32(const Tensor& t) {
    std::vector<float> v(static_cast<size_t>(t.numel()));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = t.dtype == DType::kBF16 ? bf16_to_f32(t.bf16()[i]) : t.f32()[i];
    return v;
  }

  float* input() { return x_.dtype == DType::kF32 ? arenas_.as<float>(x_) : nullptr; }
  int32_t* ids() { return x_.dtype == DType::kI32 ? arenas_.as<int32_t>(x_) : nullptr; }
  int64_t input_size() const { return x_.shape.numel(); }
  const Shape& out_shape() const { return out_; }
  const ParamRegistry& params() const { return params_; }
  size_t activation_bytes() const { return plan_.bytes(MemCategory::kActivations); }
  const ParamInfo& param(const std::string& name) const {
    for (const ParamInfo& p : params_.all())
      if (p.name == name) return p;
    throw std::out_of_range("no parameter " + name);
  }
  float* value(const ParamInfo& p) { return arenas_.as<float>(p.value); }
  float* grad(const ParamInfo& p) { return arenas_.as<float>(p.grad); }
  float* buffer(const std::string& name) {
    for (const BufferInfo& b : params_.buffers())
      if (b.name == name) return arenas_.as<float>(b.value);
    throw std::out_of_range("no buffer " + name);
  }
  StepCounters* counters() { return ctx_->counters(); }
  Context& context() { return *ctx_; }
  Module& module() { return *module_; }
  const MemoryPlan& plan() const { return plan_; }

 private:
  static void fill(float* p, int64_t n, std::mt19937& g,
                   std::uniform_real_distribution<float>& u) {
    for (int64_t i = 0; i < n; ++i) p[i] = u(g);
  }
  std::unique_ptr<Module> module_;
  Shape in_, out_;
  int64_t batch_;
  CpuOps ops_;
  CpuStream stream_;
  HostAllocator alloc_;
  MemoryPlan plan_;
  ParamRegistry params_;
  Arenas arenas_;
  Slot x_, x_low_, r_, r_low_, counters_, scratch_, workspace_, cross_rank_;
  std::unique_ptr<Context> ctx_;
};

// |a - n| <= atol + rtol * max(|a|, |n|)
inline bool grad_close(double analytic, double numeric, double rtol = 1e-2, double atol = 2e-3) {
  return std::abs(analytic - numeric) <= atol + rtol * std::max(std::abs(analytic), std::abs(numeric));
}

}  // namespace noeira::test
