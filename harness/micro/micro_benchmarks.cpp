// The kernels `noeira-bench micro` times, registered programmatically from the recipes:
// here the Linear layers' GEMMs, the loss, the optimizer and the batch gather per recipe;
// the other ops of a training step in harness/micro/op_benchmarks.cpp. Buffers are
// planned and allocated once per benchmark (harness/micro/micro_buffers.h).
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "harness/micro/micro_benchmarks.h"
#include "harness/micro/micro_buffers.h"
#include "harness/micro/micro_roofline.h"
#include "harness/micro/op_benchmarks.h"
#include "harness/micro/op_trace.h"
#include "kernels/backend.h"
#include "kernels/cpu/cpu_ops.h"
#include "models/recipe.h"

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
                   const GemmCase& g, const std::string& label) {
  const std::string name = "gemm/" + prefix + "/" + g.what + "/M=" + std::to_string(g.M) +
                           "/N=" + std::to_string(g.N) + "/K=" + std::to_string(g.K);
  // op(A)(M,K), op(B)(K,N), C(M,N); stored row-major as the Linear layer stores them.
  const Shape a = g.ta ? Shape{g.K, g.M} : Shape{g.M, g.K};
  const Shape b = g.tb ? Shape{g.N, g.K} : Shape{g.K, g.N};
  std::vector<BufferSpec> specs = {{a, DType::kF32, Fill::kSigned},
                                   {b, DType::kF32, Fill::kSigned},
                                   {Shape{g.M, g.N}, DType::kF32, Fill::kSigned}};
  benchmark::RegisterBenchmark(name.c_str(), [sh, name, g, specs, label](benchmark::State& state) {
    bool fresh = false;
    const std::vector<void*>* p = micro_buffers(state, *sh, name, specs, &fresh);
    if (!p) return;
    const ConstView A{(*p)[0], DType::kF32, g.M * g.K};
    const ConstView B{(*p)[1], DType::kF32, g.K * g.N};
    auto* C = static_cast<float*>((*p)[2]);
    const int64_t lda = g.ta ? g.M : g.K, ldb = g.tb ? g.K : g.N;
    const auto call = [&] {
      sh->ops->gemm(g.ta, g.tb, g.M, g.N, g.K, 1.0f, A, lda, B, ldb, g.beta, C, g.N);
      benchmark::DoNotOptimize(C);
    };
    // oneDNN creates a shape's matmul primitive at its first call: not timed (Google
    // Benchmark may time a single iteration).
    if (fresh) call();
    const double seconds = timed_loop(state, call);
    // A and B read, C written (and read when beta accumulates).
    const double M = static_cast<double>(g.M), N = static_cast<double>(g.N), K = static_cast<double>(g.K);
    const OpWork work{2.0 * M * N * K, 4.0 * (M * K + K * N + (g.beta != 0.0f ? 2.0 : 1.0) * M * N), false};
    report_work(state, work, sh->roofline, seconds, label);
  })->UseRealTime()->Unit(benchmark::kMicrosecond);
}

// The loss over B rows of C (softmax cross-entropy, or MSE for regression recipes).
void register_loss(const std::shared_ptr<MicroShared>& sh, const Recipe& r, int64_t B, int64_t C) {
  const bool xent = r.task != Task::kRegression;
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

// Rank of a GEMM's role, for registering a layer's three in step order.
int gemm_rank(const std::string& what) {
  return what == "forward_NT" ? 0 : what == "weight_grad_TN" ? 1 : 2;
}

// Registers one recipe's GEMMs, loss, optimizer and gather from its traced fp32 step;
// returns how many.
int register_recipe(const std::shared_ptr<MicroShared>& sh, const Recipe& r, const StepOps& step,
                    std::vector<std::string>& skipped) {
  int count = 0;
  // The GEMMs the step runs, layer by layer (parameter order) in forward, weight-grad,
  // input-grad order: Linear layers, and the tied LM head (nn/linear.cpp, tied_head.cpp).
  // The first layer's input needs no gradient, so it has no input-grad GEMM. Layers of
  // one shape (a transformer's blocks) are one benchmark, named by the first.
  std::vector<GemmCall> gemms = step.gemms;
  std::stable_sort(gemms.begin(), gemms.end(), [](const GemmCall& a, const GemmCall& b) {
    return a.param != b.param ? a.param < b.param : gemm_rank(a.what) < gemm_rank(b.what);
  });
  std::map<std::string, std::pair<size_t, int>> seen;  // shape -> (first index, calls)
  for (size_t i = 0; i < gemms.size(); ++i) {
    const GemmCall& g = gemms[i];
    const std::string shape = g.what + "/" + std::to_string(g.M) + "/" + std::to_string(g.N) +
                              "/" + std::to_string(g.K);
    ++seen.try_emplace(shape, i, 0).first->second.second;
  }
  for (size_t i = 0; i < gemms.size(); ++i) {
    const GemmCall& g = gemms[i];
    const auto& [first, calls] = seen.at(g.what + "/" + std::to_string(g.M) + "/" +
                                         std::to_string(g.N) + "/" + std::to_string(g.K));
    if (first != i) continue;
    register_gemm(sh, r.name + "/" + g.layer, {g.what.c_str(), g.ta, g.tb, g.M, g.N, g.K, g.beta},
                  "per step: " + r.name + " x" + std::to_string(calls));
    ++count;
  }
  // Softmax over the last dimension: (B, C) for classifiers, (B T, V) for the gpt family.
  const int64_t C = step.out[step.out.rank - 1];
  register_loss(sh, r, r.batch * (step.out.numel() / C), C);
  ++count;
  register_optimizer(sh, r, step.params);
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

MicroRegistration register_micro_benchmarks(int threads, const MicroRoofline& roofline) {
  MicroRegistration reg;
  if (threads <= 0) threads = default_thread_count();
  auto sh = std::make_shared<MicroShared>();
  sh->ops = std::make_unique<CpuOps>(threads);
  sh->roofline = roofline;
  reg.backend = "cpu (oneDNN, " + std::to_string(threads) + " thread" +
                (threads == 1 ? "" : "s") + ")";
  // Each recipe's step traced once per policy: fp32 feeds both kinds of benchmark, bf16
  // the op benchmarks (harness/micro/op_trace.h).
  std::vector<AmpPolicy> policies = {NoAMP};
  if (sh->ops->supports_bf16())
    policies.push_back(BF16Policy);
  else
    reg.skipped.push_back("bf16 op benchmarks (this backend does not store bf16)");
  std::vector<TracedStep> steps;
  for (const std::string& name : list_recipes()) {
    Result<Recipe> r = load_recipe_for_model(name);
    if (!r) {
      reg.skipped.push_back(name + ": " + r.error().message);
      continue;
    }
    for (AmpPolicy amp : policies) {
      Result<StepOps> step = trace_training_step(*r, amp, *sh->ops);
      if (!step) {
        reg.skipped.push_back(name + " (" + amp_name(amp) + "): " + step.error().message);
        continue;
      }
      if (amp == NoAMP) reg.benchmarks += register_recipe(sh, *r, *step, reg.skipped);
      steps.push_back({name, amp, std::move(*step)});
    }
    reg.recipes.push_back(name);
  }
  reg.benchmarks += register_op_benchmarks(sh, steps);
  return reg;
}

}  // namespace noeira
