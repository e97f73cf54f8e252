// The kernels `noeira-bench micro` times, registered programmatically from the recipes:
// here the Linear layers' GEMMs, the loss, the optimizer and the batch gather per recipe;
// the other ops of a training step in harness/micro/op_benchmarks.cpp. Buffers are
// planned and allocated once per benchmark (harness/micro/micro_buffers.h).
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "harness/micro/micro_benchmarks.h"
#include "harness/micro/micro_buffers.h"
#include "harness/micro/micro_roofline.h"
#include "harness/micro/op_benchmarks.h"
#include "kernels/cpu/cpu_ops.h"
#include "models/model_builder.h"
#include "models/recipe.h"
#include "kernels/backend.h"
#include "nn/memory_plan.h"
#include "nn/params.h"

namespace noeira {

namespace {

// Training-set rows of the recipe's data set (gather_rows reads from all of them).
int64_t train_rows(const std::string& dataset) {
  if (dataset == "mnist" || dataset == "fashion-mnist") return 60000;
  return 0;
}

struct GemmCase {
  const char* what;  // forward_NT, weight_grad_TN, input_grad_NN
  bool ta, tb;
  int64_t M, N, K;
  float beta;
};

void register_gemm(const std::shared_ptr<MicroShared>& sh, const std::string& prefix,
                   const GemmCase& g) {
  const std::string name = "gemm/" + prefix + "/" + g.what + "/M=" + std::to_string(g.M) +
                           "/N=" + std::to_string(g.N) + "/K=" + std::to_string(g.K);
  // op(A)(M,K), op(B)(K,N), C(M,N); stored row-major as the Linear layer stores them.
  const Shape a = g.ta ? Shape{g.K, g.M} : Shape{g.M, g.K};
  const Shape b = g.tb ? Shape{g.N, g.K} : Shape{g.K, g.N};
  std::vector<BufferSpec> specs = {{a, DType::kF32, Fill::kSigned},
                                   {b, DType::kF32, Fill::kSigned},
                                   {Shape{g.M, g.N}, DType::kF32, Fill::kSigned}};
  benchmark::RegisterBenchmark(name.c_str(), [sh, name, g, specs](benchmark::State& state) {
    bool fresh = false;
    const std::vector<void*>* p = micro_buffers(state, *sh, name, specs, &fresh);
    if (!p) return;
    const ConstView A{(*p)[0], DType::kF32, g.M * g.K};
    const ConstView B{(*p)[1], DType::kF32, g.K * g.N};
    auto* C = static_cast<float*>((*p)[2]);
    const int64_t lda = g.ta ? g.M : g.K, ldb = g.tb ? g.K : g.N;
    const double seconds = timed_loop(state, [&] {
      sh->ops->gemm(g.ta, g.tb, g.M, g.N, g.K, 1.0f, A, lda, B, ldb, g.beta, C, g.N);
      benchmark::DoNotOptimize(C);
    });
    // A and B read, C written (and read when beta accumulates).
    const double M = static_cast<double>(g.M), N = static_cast<double>(g.N), K = static_cast<double>(g.K);
    const OpWork work{2.0 * M * N * K, 4.0 * (M * K + K * N + (g.beta != 0.0f ? 2.0 : 1.0) * M * N), false};
    report_work(state, work, sh->roofline, seconds);
  })->UseRealTime()->Unit(benchmark::kMicrosecond);
}

void register_loss(const std::shared_ptr<MicroShared>& sh, const Recipe& r, int64_t C) {
  const int64_t B = r.batch;
  const bool xent = r.task == Task::kClassification;
  const std::string name = std::string(xent ? "softmax_xent/" : "mse/") + r.name +
                           "/B=" + std::to_string(B) + "/C=" + std::to_string(C);
  std::vector<BufferSpec> specs = {
      {Shape{B, C}, DType::kF32, Fill::kSigned},                    // logits / predictions
      xent ? BufferSpec{Shape{B}, DType::kI32, Fill::kLabels, C}    // labels
           : BufferSpec{Shape{B, C}, DType::kF32, Fill::kSigned},   // targets
      {Shape{B, C}, DType::kF32, Fill::kZero},                      // d(logits)
      {Shape{1}, DType::kF32, Fill::kZero}};                        // loss history
  benchmark::RegisterBenchmark(name.c_str(), [sh, name, specs, B, C,
                                              xent](benchmark::State& state) {
    bool fresh = false;
    const std::vector<void*>* p = micro_buffers(state, *sh, name, specs, &fresh);
    if (!p) return;
    const ConstView logits{(*p)[0], DType::kF32, B * C};
    const View dlogits{(*p)[2], DType::kF32, B * C};
    auto* history = static_cast<float*>((*p)[3]);
    LossStats stats{};
    const StepCounters counters{0, 0};
    const double seconds = timed_loop(state, [&] {
      if (xent)
        sh->ops->softmax_xent(logits, static_cast<const int32_t*>((*p)[1]), B, C, 0.0f, dlogits,
                              &stats, history, &counters);
      else
        sh->ops->mse(logits, static_cast<const float*>((*p)[1]), B, C, dlogits, &stats, history,
                     &counters);
      benchmark::DoNotOptimize(dlogits.data);
      benchmark::DoNotOptimize(stats);
    });
    // logits (and labels or targets) read, d(logits) written.
    const int64_t bytes = (xent ? 2 * B * C + B : 3 * B * C) * 4;
    report_work(state, OpWork{0.0, static_cast<double>(bytes), false}, sh->roofline, seconds);
  })->UseRealTime()->Unit(benchmark::kMicrosecond);
}

void register_optimizer(const std::shared_ptr<MicroShared>& sh, const Recipe& r, int64_t n) {
  const OptimizerConfig cfg = r.optimizer;
  const bool sgd = cfg.kind == OptimizerKind::kSgd;
  const std::string name = std::string(sgd ? "sgd/" : "adam/") + r.name + "/n=" + std::to_string(n);
  std::vector<BufferSpec> specs = {{Shape{n}, DType::kF32, Fill::kSigned},     // params
                                   {Shape{n}, DType::kF32, Fill::kSigned},     // grads
                                   {Shape{n}, DType::kF32, Fill::kSigned}};    // m / momentum
  if (!sgd) specs.push_back({Shape{n}, DType::kF32, Fill::kPositive});         // v
  benchmark::RegisterBenchmark(name.c_str(), [sh, name, specs, cfg, n,
                                              sgd](benchmark::State& state) {
    bool fresh = false;
    const std::vector<void*>* p = micro_buffers(state, *sh, name, specs, &fresh);
    if (!p) return;
    auto* params = static_cast<float*>((*p)[0]);
    const auto* grads = static_cast<const float*>((*p)[1]);
    auto* s0 = static_cast<float*>((*p)[2]);
    const StepCounters counters{0, 0};
    const double seconds = timed_loop(state, [&] {
      if (sgd)
        sh->ops->sgd(params, grads, s0, n, cfg.sgd, &counters);
      else
        sh->ops->adam(params, grads, s0, static_cast<float*>((*p)[3]), n, cfg.adam, &counters);
      benchmark::DoNotOptimize(params);
    });
    // Adam reads p, g, m, v and writes p, m, v; SGD reads p, g, buf and writes p, buf.
    const double bytes = static_cast<double>(n) * 4.0 * (sgd ? 5 : 7);
    report_work(state, OpWork{0.0, bytes, false}, sh->roofline, seconds);
  })->UseRealTime()->Unit(benchmark::kMicrosecond);
}

void register_gather(const std::shared_ptr<MicroShared>& sh, const Recipe& r, int64_t rows_total,
                     int64_t row_elems, size_t ws_bytes) {
  const int64_t B = r.batch;
  const int64_t steps = rows_total / B;  // drop_last: whole batches only
  const std::string name = "gather_rows/" + r.name + "/B=" + std::to_string(B) +
                           "/row=" + std::to_string(row_elems) +
                           "/src=" + std::to_string(rows_total);
  std::vector<BufferSpec> specs = {
      {Shape{rows_total, row_elems}, DType::kF32, Fill::kSigned},  // the resident train set
      {Shape{rows_total}, DType::kI32, Fill::kZero},               // the epoch's permutation
      {Shape{static_cast<int64_t>((ws_bytes + 3) / 4) + 1}, DType::kI32, Fill::kZero},
      {Shape{B, row_elems}, DType::kF32, Fill::kZero}};            // the batch
  benchmark::RegisterBenchmark(name.c_str(), [sh, name, specs, B, steps, rows_total,
                                              row_elems](benchmark::State& state) {
    bool fresh = false;
    const std::vector<void*>* p = micro_buffers(state, *sh, name, specs, &fresh);
    if (!p) return;
    const ConstView src{(*p)[0], DType::kF32, rows_total * row_elems};
    auto* perm = static_cast<int32_t*>((*p)[1]);
    const View dst{(*p)[3], DType::kF32, B * row_elems};
    if (fresh) sh->ops->shuffle(0, 0, rows_total, perm, (*p)[2]);  // epoch 0's order, seed 0
    StepCounters counters{0, 0};
    const double seconds = timed_loop(state, [&] {
      sh->ops->gather_rows(src, perm, B, row_elems, &counters, dst);
      benchmark::DoNotOptimize(dst.data);
      // The next batch of the epoch, as the training step's advance() does.
      if (++counters.batch_in_epoch == steps) counters.batch_in_epoch = 0;
    });
    // The batch's rows read and written, its B indices read.
    const double bytes = static_cast<double>(B) * (static_cast<double>(row_elems) * 8.0 + 4.0);
    report_work(state, OpWork{0.0, bytes, false}, sh->roofline, seconds);
  })->UseRealTime()->Unit(benchmark::kMicrosecond);
}

// Registers one recipe's benchmarks; returns how many, or an error for a recipe that
// cannot be planned.
Result<int> register_recipe(const std::shared_ptr<MicroShared>& sh, const Recipe& r,
                            std::vector<std::string>& skipped) {
  Result<std::unique_ptr<Module>> model = build_model(r);
  if (!model) return model.error();
  // Plan the model exactly as the trainer does, to read the layer shapes and the size
  // of the parameter arena (the flat array the optimizer runs over).
  MemoryPlan plan;
  ParamRegistry params;
  int64_t scratch = 0;
  size_t workspace = 0;
  PlanContext pc{plan, params, r.batch, false, "", NoAMP, DType::kF32, &scratch,
                 sh->ops.get(), &workspace};
  Shape out;
  try {
    out = (*model)->plan(pc, r.input_shape);
  } catch (const PlanError& e) {
    return make_error(e.what());
  }
  int count = 0;

  bool first_layer = true;
  for (const ParamInfo& p : params.all()) {
    if (p.role != ParamRole::kWeight || p.value.shape.rank != 2) continue;
    const int64_t n_out = p.value.shape[0], n_in = p.value.shape[1], B = r.batch;
    std::string layer = p.name;
    if (const size_t dot = layer.rfind(".weight"); dot != std::string::npos) layer.resize(dot);
    const std::string prefix = r.name + "/" + layer;
    // The three GEMMs of a Linear layer's training step (nn/linear.cpp):
    //   forward      y(B,out)   = x(B,in) W(out,in)^T           NT, beta 0
    //   weight grad  dW(out,in) += dz(B,out)^T x(B,in)          TN, beta 1
    //   input grad   dx(B,in)   = dz(B,out) W(out,in)           NN, beta 0
    // The first layer's input needs no gradient, so the step never runs its input-grad
    // GEMM and neither do we.
    register_gemm(sh, prefix, {"forward_NT", false, true, B, n_out, n_in, 0.0f});
    register_gemm(sh, prefix, {"weight_grad_TN", true, false, n_out, n_in, B, 1.0f});
    count += 2;
    if (!first_layer) {
      register_gemm(sh, prefix, {"input_grad_NN", false, false, B, n_in, n_out, 0.0f});
      ++count;
    }
    first_layer = false;
  }

  register_loss(sh, r, out.numel());
  ++count;
  register_optimizer(sh, r, static_cast<int64_t>(plan.bytes(MemCategory::kParams) / 4));
  ++count;
  const int64_t rows = train_rows(r.dataset);
  Result<size_t> ws_bytes = rows >= r.batch ? sh->ops->shuffle_workspace_bytes(rows)
                                            : Result<size_t>(size_t{0});
  if (rows >= r.batch && !ws_bytes) {
    skipped.push_back(r.name + ": gather_rows (" + ws_bytes.error().message + ")");
  } else if (rows >= r.batch) {
    register_gather(sh, r, rows, r.input_shape.numel(), *ws_bytes);
    ++count;
  } else {
    skipped.push_back(r.name + ": gather_rows (training-set size of data set '" + r.dataset +
                      "' unknown)");
  }
  return count;
}

}  // namespace

MicroRegistration register_micro_benchmarks(int threads, const Roofline& roofline) {
  MicroRegistration reg;
  if (threads <= 0) threads = default_thread_count();
  auto sh = std::make_shared<MicroShared>();
  sh->ops = std::make_unique<CpuOps>(threads);
  sh->roofline = roofline;
  reg.backend = "cpu (oneDNN, " + std::to_string(threads) + " thread" +
                (threads == 1 ? "" : "s") + ")";
  std::vector<Recipe> loaded;
  for (const std::string& name : list_recipes()) {
    Result<Recipe> r = load_recipe_for_model(name);
    if (!r) {
      reg.skipped.push_back(name + ": " + r.error().message);
      continue;
    }
    loaded.push_back(*r);
    Result<int> n = register_recipe(sh, *r, reg.skipped);
    if (!n) {
      reg.skipped.push_back(name + ": " + n.error().message);
      continue;
    }
    reg.benchmarks += *n;
  }
  reg.benchmarks += register_op_benchmarks(sh, loaded, reg.skipped);
  for (const Recipe& r : loaded) reg.recipes.push_back(r.name);
  return reg;
}

}  // namespace noeira
