#include "harness/micro/op_trace.h"

#include <sys/mman.h>

#include <cstdint>
#include <map>
#include <memory>
#include <type_traits>
#include <unordered_map>

#include "models/model_builder.h"
#include "nn/module.h"

namespace noeira {

namespace {

// Address space without memory (PROT_NONE): slots get distinct, stable addresses, and a
// module that touched one would fault at once instead of reading garbage.
class AddressSpaceAllocator final : public Allocator {
 public:
  ~AddressSpaceAllocator() override {
    for (const auto& [p, bytes] : maps_) munmap(p, bytes);
  }
  Device device() const override { return Device::kCpu; }
  Result<void*> allocate(size_t bytes, const char* what) override {
    void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      return make_error("cannot reserve " + std::to_string(bytes) + " bytes of address space for " + what);
    maps_[p] = bytes;
    return p;
  }
  void release(void* p) override {
    if (auto it = maps_.find(p); it != maps_.end()) {
      munmap(p, it->second);
      maps_.erase(it);
    }
  }

 private:
  std::unordered_map<void*, size_t> maps_;
};

// A stream with nothing to run (the few fills a module issues itself are skipped too).
class NullStream final : public Stream {
 public:
  bool host_memory() const override { return true; }
  void fill_zero(void*, size_t) override {}
  void copy_to_device(void*, const void*, size_t) override {}
  void copy_to_host(void*, const void*, size_t) override {}
  void synchronize() override {}
  bool supports_graphs() const override { return false; }
  Status begin_capture() override { return make_error("a traced step is not captured"); }
  Result<std::unique_ptr<StepGraph>> end_capture() override {
    return make_error("a traced step is not captured");
  }
  std::unique_ptr<DeviceStepTimer> make_device_timer(DeviceTimerKind, std::string* why) override {
    if (why) *why = "a traced step is not timed";
    return nullptr;
  }
  size_t reduction_workspace_bytes() const override { return 0; }
  Status bind_reduction_workspace(void*, size_t) override { return {}; }
};

// Runs nothing: every op is skipped, except conv2d_plan and the queries, which the real
// backend answers (its plans are what the benchmarks will run). Generated from the op
// list, so a new op needs no line here.
template <class R, class F>
R forward_or_skip(F&& f) {
  if constexpr (std::is_void_v<R>)
    (void)f;
  else
    return f();
}

class NoComputeOps : public Ops {
 public:
  explicit NoComputeOps(Ops& inner) : inner_(inner) {}
#define NOEIRA_OP(ret, name, params, args) \
  ret name params override { return forward_or_skip<ret>([&]() -> ret { return inner_.name args; }); }
#define NOEIRA_QUERY(ret, name, params, args) \
  ret name params const override { return inner_.name args; }
#include "kernels/op_list.inc"

 protected:
  Ops& inner_;
};

// Records the calls the micro-benchmarks time (op_cases.h), each distinct (op, shape) once
// with its count, and every GEMM with the parameter it multiplies.
class RecordingOps final : public NoComputeOps {
 public:
  using NoComputeOps::NoComputeOps;
  StepOps step;
  std::string error;  // the first case that could not be made

  void act_forward(ConstView, View y, Act act) override {
    record(op_case::act_forward(y.n, y.dtype, act));
  }
  void act_backward(ConstView, ConstView pre, ConstView post, View dx, Act act) override {
    record(op_case::act_backward(dx.n, dx.dtype, act, !pre.empty(), !post.empty()));
  }
  void act_backward_saved(ConstView, ConstView, View dx) override {
    record(op_case::act_backward_saved(dx.n, dx.dtype));
  }
  void add_relu_backward(ConstView, ConstView, ConstView, View dx) override {
    record(op_case::add_relu_backward(dx.n, dx.dtype));
  }
  // Its GEMM, and a Linear layer's activation: bias_act (kernels/composed_ops.h).
  void linear_forward(ConstView x, ConstView W, const float* b, View y, View dact, float*,
                      int64_t M, int64_t N, int64_t K, Act act) override {
    add_gemm(W.data, "forward_NT", false, true, M, N, K, 0.0f, x.dtype);
    if (act != Act::kNone)
      record(op_case::bias_act(M, N, y.dtype, act, b != nullptr, !dact.empty()));
  }
  // Its GEMM, dx = dz W (NN), and on the CPU the rounding cast into a bf16 dx
  // (kernels/composed_ops.h); with a dact, the whole op (its case).
  void linear_backward_data(ConstView dz, ConstView W, View dx, float*, int64_t M, int64_t N,
                            int64_t K, ConstView dact) override {
    add_gemm(W.data, "input_grad_NN", false, false, M, K, N, 0.0f, dz.dtype);
    if (!dact.empty())
      record(op_case::linear_backward_data_dact(M, N, K, dz.dtype));
    else if (dx.dtype != DType::kF32)
      record(op_case::cast(dx.n, DType::kF32, dx.dtype));
  }
  // Its GEMM (as dz^T x; the CPU runs fp32 layers with N > K >= 128 as x^T dz), and the
  // whole op with the bias sums (over many rows the CPU runs the two together, chunk by
  // chunk: kernels/cpu/linear.cpp).
  void linear_backward_params(ConstView dz, ConstView, float* dW, float* db, int64_t M, int64_t N,
                              int64_t K, void*, bool overwrite_dw) override {
    add_gemm(dW, "weight_grad_TN", true, false, N, K, M, overwrite_dw ? 0.0f : 1.0f, dz.dtype);
    record(op_case::linear_backward_params(inner_, M, N, K, dz.dtype, db != nullptr,
                                           overwrite_dw));
  }
  // The input gradients (dz W: NN).
  void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float, ConstView A, int64_t,
            ConstView B, int64_t, float beta, float* C, int64_t) override {
    const char* what = !ta && !tb ? "input_grad_NN" : !ta ? "forward_NT" : !tb ? "weight_grad_TN" : "TT";
    const void* p = params_.count(B.data) ? B.data : params_.count(A.data) ? A.data : C;
    add_gemm(p, what, ta, tb, M, N, K, beta, A.dtype);
  }
  void cast(ConstView x, View y) override { record(op_case::cast(y.n, x.dtype, y.dtype)); }
  void layernorm_forward(ConstView x, const float*, const float* beta, View, float*, float*, int64_t N,
                         int64_t C, float eps) override {
    record(op_case::layernorm_forward(N, C, x.dtype, beta != nullptr, eps));
  }
  void layernorm_backward(ConstView, ConstView x, const float*, const float*, const float*, View dx,
                          ConstView dres, float*, float* dbeta, int64_t N, int64_t C, void*) override {
    record(op_case::layernorm_backward(inner_, N, C, x.dtype, !dx.empty(), dbeta != nullptr,
                                       !dres.empty()));
  }
  void batchnorm_forward_train(const NormShape& s, ConstView x, const float*, const float*,
                               const BatchNormHyper& h, View, const BatchNormEpilogue& epi,
                               float*, float*, float*, float*, void*) override {
    record(op_case::batchnorm_forward_train(inner_, s, x.dtype, h, !epi.residual.empty(), epi.act));
  }
  void batchnorm_backward(const NormShape& s, ConstView, ConstView x, const float*, const float*,
                          const float*, View dx, float*, float*, void*) override {
    record(op_case::batchnorm_backward(inner_, s, x.dtype, !dx.empty()));
  }
  void batchnorm_relu_backward(const NormShape& s, ConstView, ConstView, ConstView x,
                               const float*, const float*, const float*, const float*, View dx,
                               float*, float*, void*) override {
    record(op_case::batchnorm_backward(inner_, s, x.dtype, !dx.empty(), true));
  }
  void attention_forward(ConstView qkv, View, float*, int64_t B, int64_t T, int64_t C, int64_t nh,
                         bool causal, void*) override {
    record(op_case::attention_forward(inner_, B, T, C, nh, causal, qkv.dtype));
  }
  void attention_backward(ConstView, ConstView qkv, const float*, View, int64_t B, int64_t T, int64_t C,
                          int64_t nh, bool causal, void*) override {
    record(op_case::attention_backward(inner_, B, T, C, nh, causal, qkv.dtype));
  }
  void patchify(const PatchShape& s, ConstView x, View) override {
    record(op_case::patchify(s, x.dtype));
  }
  void maxpool2d_forward(const PoolShape& s, ConstView x, View, int32_t*) override {
    record(op_case::maxpool2d_forward(s, x.dtype));
  }
  void maxpool2d_backward(const PoolShape& s, ConstView dy, const int32_t*, View) override {
    record(op_case::maxpool2d_backward(s, dy.dtype));
  }
  void avgpool2d_forward(const PoolShape& s, ConstView x, View) override {
    record(op_case::avgpool2d_forward(s, x.dtype));
  }
  void avgpool2d_backward(const PoolShape& s, ConstView dy, View) override {
    record(op_case::avgpool2d_backward(s, dy.dtype));
  }
  void shortcut_forward(const ShortcutShape& s, ConstView x, View) override {
    record(op_case::shortcut_forward(s, x.dtype));
  }
  void shortcut_backward(const ShortcutShape& s, ConstView dy, View) override {
    record(op_case::shortcut_backward(s, dy.dtype));
  }
  void conv2d_forward(const ConvShape& s, ConstView x, ConstView, const float*, View, void*, size_t) override {
    record(op_case::conv2d_forward(inner_, s, x.dtype));
  }
  void conv2d_backward_data(const ConvShape& s, ConstView dy, ConstView, View, void*, size_t) override {
    record(op_case::conv2d_backward_data(inner_, s, dy.dtype));
  }
  void conv2d_backward_weights(const ConvShape& s, ConstView x, ConstView, float*, float*, void*,
                               size_t) override {
    record(op_case::conv2d_backward_weights(inner_, s, x.dtype));
  }
  // Timed as its two passes (their cases), which the fused op runs with one copy of dy less.
  // With a dx epilogue, as the one op (its case).
  void conv2d_backward(const ConvShape& s, ConstView x, ConstView dy, ConstView, View dx,
                       const ConvDxEpilogue& epi, float*, float*, void*, size_t) override {
    if (!epi.empty() && !dx.empty())
      return record(op_case::conv2d_backward_relu_grad(inner_, s, x.dtype));
    record(op_case::conv2d_backward_weights(inner_, s, x.dtype));
    if (!dx.empty()) record(op_case::conv2d_backward_data(inner_, s, dy.dtype));
  }

  // Names the parameter slots' addresses (values, bf16 copies, gradients).
  void name_param(const void* p, size_t index, const std::string& name) {
    std::string layer = name;
    if (const size_t dot = layer.rfind(".weight"); dot != std::string::npos) layer.resize(dot);
    params_[p] = {index, layer};
  }

  void add_gemm(const void* p, const char* what, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                float beta, DType dt) {
    const auto it = params_.find(p);
    const size_t index = it == params_.end() ? SIZE_MAX : it->second.first;
    step.gemms.push_back({index, it == params_.end() ? "?" : it->second.second, what, ta, tb, M, N, K,
                          beta, dt});
  }

  void record(Result<OpCase> c) {
    if (!c) {
      if (error.empty()) error = c.error().message;
      return;
    }
    const auto [it, fresh] = index_.try_emplace(c->key(), step.cases.size());
    if (fresh) {
      step.cases.push_back(std::move(*c));
      step.calls.push_back(0);
    }
    ++step.calls[it->second];
  }

 private:
  std::map<std::string, size_t> index_;
  std::map<const void*, std::pair<size_t, std::string>> params_;
};

}  // namespace

Result<StepOps> trace_training_step(const Recipe& r, AmpPolicy amp, Ops& backend) {
  const bool gpt = r.family == "gpt";
  Result<std::unique_ptr<Module>> model = gpt ? build_gpt(r, kMicroVocab) : build_model(r);
  if (!model) return model.error();
  RecordingOps rec(backend);
  // The plan a trainer makes (nn/training/*_trainer.cpp): gpt on (T) int32 ids, the
  // others on images or features already in the flow dtype (the gather casts them).
  MemoryPlan plan;
  ParamRegistry params;
  params.set_low_precision_copies(amp == BF16Policy);
  int64_t scratch = 0;
  size_t workspace = 0;
  const DType in_dtype = gpt ? DType::kI32 : flow_dtype(amp);
  const Shape in = gpt ? Shape{r.gpt.context} : r.input_shape;
  PlanContext pc{plan, params, r.batch, false, "", amp, in_dtype, &scratch, &rec, &workspace};
  Shape out;
  try {
    out = (*model)->plan(pc, in);
  } catch (const PlanError& e) {
    return make_error(e.what());
  }
  const int64_t n_params = static_cast<int64_t>(plan.bytes(MemCategory::kParams) / sizeof(float));
  const Slot x = plan.reserve(MemCategory::kActivations, in.with_batch(r.batch), in_dtype);
  const Slot dy = plan.reserve(MemCategory::kActivations, out.with_batch(r.batch), (*model)->out_dtype());
  const Slot counters =
      plan.reserve(MemCategory::kScalars, Shape{sizeof(StepCounters) / 4}, DType::kI32);
  const Slot scratch_slot = plan.reserve(MemCategory::kWorkspace, Shape{scratch}, DType::kF32);
  const Slot workspace_slot = plan.reserve_bytes(MemCategory::kWorkspace, workspace);
  AddressSpaceAllocator allocator;
  Result<Arenas> arenas = Arenas::allocate(plan, allocator);
  if (!arenas) return arenas.error();
  for (size_t i = 0; i < params.all().size(); ++i) {
    const ParamInfo& p = params.all()[i];
    for (const Slot& slot : {p.value, p.copy, p.grad})
      if (slot.valid()) rec.name_param(arenas->ptr(slot), i, p.name);
  }
  NullStream stream;
  Context ctx(rec, stream, *arenas, counters, scratch_slot, workspace_slot);
  ctx.set_training(true);
  (*model)->forward(ctx, arenas->view(x));
  (*model)->backward(ctx, arenas->view(dy));
  // TrainerCore::refresh_param_copies, once per step.
  if (amp == BF16Policy) rec.record(op_case::cast(n_params, DType::kF32, DType::kBF16, true));
  if (!rec.error.empty()) return make_error(rec.error);
  rec.step.out = out;
  rec.step.params = n_params;
  return std::move(rec.step);
}

}  // namespace noeira
