// The DatasetTrainer on the GPU target: it follows the CPU reference step by step, and a seed
// gives byte-identical checkpoints run after run, eager or with the step captured as a
// CUDA graph (cfg.use_train_cuda_graph). The same for BF16Policy (bf16 autocast): eager and
// captured bf16 runs are byte-identical, and bf16 GPU training stays close to bf16 CPU
// training from the same initial weights.
#include <catch2/catch.hpp>

#include "tests/support/gpu_guard.h"

#if defined(NOEIRA_WITH_CUDA)
#include <cstdlib>
#include <optional>

#include "nn/activation.h"
#include "nn/residual.h"
#include "tests/gpu/gpu_rig.h"
#include "tests/support/mnist_fixture.h"
#include "tests/support/synthetic.h"
#include "tests/support/scoped_env.h"
#endif

using namespace noeira;
using namespace noeira::test;

#if defined(NOEIRA_WITH_CUDA)
namespace {


std::unique_ptr<DatasetTrainer> trainer_on(Device device, uint64_t seed, bool graph) {
  TrainerConfig c = small_config(Task::kClassification, seed);
  c.device = device;
  c.use_train_cuda_graph = graph;
  c.optimizer.adam.lr = 1e-3f;
  auto t = DatasetTrainer::create(small_mlp(32, 4), c, synthetic_classification(1024, 1),
                           synthetic_classification(256, 2));
  if (!t) FAIL(t.error().message);
  return std::move(t).value();
}

// Classification: every bf16 op of a step — gather + cast, bf16 GEMMs, bias + GELU with
// its derivative kept (dact), ReLU, a residual add, a stand-alone GELU, softmax cross-entropy,
// bias gradients, the weight-copy cast. Regression: the small MLP with the MSE loss.
std::unique_ptr<Module> bf16_model(Task task) {
  if (task == Task::kRegression) return small_mlp(32, 2);
  auto m = std::make_unique<Sequential>();
  m->add("fc1", std::make_unique<LinearAct>(32, Act::kGELU));
  m->add("res", std::make_unique<Residual>(std::make_unique<LinearAct>(32, Act::kReLU)));
  m->add("act", std::make_unique<GELU>());
  m->add("fc2", std::make_unique<Linear>(4));
  return m;
}

std::unique_ptr<DatasetTrainer> bf16_trainer_on(Device device, Task task, uint64_t seed, bool graph) {
  TrainerConfig c = small_config(task, seed);
  c.device = device;
  c.amp = BF16Policy;
  c.use_train_cuda_graph = graph;
  c.optimizer.adam.lr = 1e-3f;
  const bool cls = task == Task::kClassification;
  auto t = DatasetTrainer::create(bf16_model(task), c,
                           cls ? synthetic_classification(1024, 1) : synthetic_regression(1024, 1),
                           cls ? synthetic_classification(256, 2) : synthetic_regression(256, 2));
  if (!t) FAIL(t.error().message);
  return std::move(t).value();
}

const char* task_name(Task task) {
  return task == Task::kClassification ? "classification" : "regression";
}

}  // namespace
#endif

TEST_CASE("cuda: GPU training follows the CPU for 128 steps (TF32 off)", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  ScopedEnv no_tf32("NOEIRA_TF32", "0");
  auto cpu = trainer_on(Device::kCpu, 3, false);
  auto gpu = trainer_on(Device::kGpu, 3, false);
  CHECK(gpu->backend_description().find("TF32 off") != std::string::npos);
  for (int epoch = 0; epoch < 4; ++epoch) {  // 4 x 32 steps
    const EpochStats c = cpu->train_epoch();
    const EpochStats g = gpu->train_epoch();
    REQUIRE(g.step_losses.size() == c.step_losses.size());
    for (size_t i = 0; i < c.step_losses.size(); ++i) {
      INFO("epoch " << epoch << " step " << i << " cpu " << c.step_losses[i] << " gpu "
                    << g.step_losses[i]);
      CHECK(std::abs(g.step_losses[i] - c.step_losses[i]) <= 1e-3 * std::abs(c.step_losses[i]));
    }
    CHECK(std::abs(g.test.loss - c.test.loss) <= 1e-3 * c.test.loss);
    CHECK(std::abs(g.test.top1 - c.test.top1) <= 1.0);
  }
  for (size_t i = 0; i < gpu->params().all().size(); ++i) {
    const std::vector<float> pc = cpu->param_values(i), pg = gpu->param_values(i);
    INFO("parameter " << gpu->params().all()[i].name);
    CHECK(max_abs_diff(pg, pc) <= 1e-3);
  }
#endif
}

TEST_CASE("cuda: a seed gives byte-identical checkpoints, eager and captured", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  TempDir dir;
  auto run = [&](bool graph, const std::string& name) {
    auto t = trainer_on(Device::kGpu, 5, graph);
    const auto epochs = t->train(2);
    REQUIRE(t->save_checkpoint(dir / name).ok());
    return epochs.back().step_losses;
  };
  const std::vector<float> eager_a = run(false, "eager_a.ckpt");
  const std::vector<float> eager_b = run(false, "eager_b.ckpt");
  const std::vector<float> graph = run(true, "graph.ckpt");
  CHECK(same_bytes(eager_a, eager_b));
  CHECK(same_bytes(eager_a, graph));
  const std::vector<char> a = file_bytes(dir / "eager_a.ckpt");
  CHECK(!a.empty());
  CHECK(a == file_bytes(dir / "eager_b.ckpt"));
  CHECK(a == file_bytes(dir / "graph.ckpt"));
#endif
}

TEST_CASE("cuda: bf16 training gives byte-identical checkpoints, eager and captured", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  TempDir dir;
  for (Task task : {Task::kClassification, Task::kRegression}) {
    INFO(task_name(task));
    auto run = [&](bool graph, const std::string& name) {
      auto t = bf16_trainer_on(Device::kGpu, task, 7, graph);
      CHECK(t->graph_active() == graph);
      const auto epochs = t->train(2);
      REQUIRE(t->save_checkpoint(dir / name).ok());
      return epochs.back().step_losses;
    };
    const std::string prefix = task_name(task);
    const std::vector<float> eager_a = run(false, prefix + "_eager_a.ckpt");
    const std::vector<float> eager_b = run(false, prefix + "_eager_b.ckpt");
    const std::vector<float> graph = run(true, prefix + "_graph.ckpt");
    CHECK_FALSE(has_nan(eager_a));
    CHECK(same_bytes(eager_a, eager_b));
    CHECK(same_bytes(eager_a, graph));
    const std::vector<char> a = file_bytes(dir / (prefix + "_eager_a.ckpt"));
    CHECK(!a.empty());
    CHECK(a == file_bytes(dir / (prefix + "_eager_b.ckpt")));
    CHECK(a == file_bytes(dir / (prefix + "_graph.ckpt")));
  }
#endif
}

TEST_CASE("cuda: bf16 GPU training stays close to bf16 CPU training", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  for (Task task : {Task::kClassification, Task::kRegression}) {
    INFO(task_name(task));
    auto cpu = bf16_trainer_on(Device::kCpu, task, 3, false);
    auto gpu = bf16_trainer_on(Device::kGpu, task, 3, false);
    // The same initial weights (initialised on the host from the seed).
    for (size_t i = 0; i < gpu->params().all().size(); ++i) {
      INFO("parameter " << gpu->params().all()[i].name);
      CHECK(same_bytes(gpu->param_values(i), cpu->param_values(i)));
    }
    const double before_cpu = cpu->evaluate().loss, before_gpu = gpu->evaluate().loss;
    CHECK(std::abs(before_gpu - before_cpu) <= 1e-2 * before_cpu);
    EpochStats c, g;
    for (int epoch = 0; epoch < 4; ++epoch) {  // 4 x 32 steps
      c = cpu->train_epoch();
      g = gpu->train_epoch();
      REQUIRE(g.step_losses.size() == c.step_losses.size());
      INFO("epoch " << epoch << " first step: cpu " << c.step_losses.front() << " gpu "
                    << g.step_losses.front());
      CHECK_FALSE(has_nan(g.step_losses));
      if (epoch == 0)  // one step from the same weights: rounding differences only
        CHECK(std::abs(g.step_losses[0] - c.step_losses[0]) <= 1e-2 * c.step_losses[0]);
    }
    INFO("test loss: before " << before_cpu << ", cpu " << c.test.loss << ", gpu "
                              << g.test.loss);
    CHECK(c.test.loss < before_cpu);  // it trained
    CHECK(std::abs(g.test.loss - c.test.loss) <= 0.05 * c.test.loss);
    if (task == Task::kClassification) CHECK(std::abs(g.test.top1 - c.test.top1) <= 5.0);
  }
#endif
}

TEST_CASE("cuda: large batches (chunked bias gradients) stay byte-identical, eager and captured",
          "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  TempDir dir;
  auto run = [&](bool graph, const std::string& name) {
    TrainerConfig c = small_config(Task::kClassification, 11);
    c.device = Device::kGpu;
    c.batch = 1024;  // M = 1024 rows: 8 row chunks through the planned partial buffer
    c.use_train_cuda_graph = graph;
    auto t = DatasetTrainer::create(small_mlp(48, 4), c, synthetic_classification(8192, 1),
                             synthetic_classification(256, 2));
    REQUIRE(t.ok());
    // The partials are planned in the workspace arena, not allocated by the step.
    CHECK((*t)->plan().bytes(MemCategory::kWorkspace) >=
          (*t)->stream().reduction_workspace_bytes());
    CHECK((*t)->stream().reduction_workspace_bytes() > 0);
    // ... and bound: unbound, every bias_grad would run as one chunk, deterministically
    // too, so the byte comparisons below alone would not notice.
    const auto* cuda_stream = dynamic_cast<const CudaStream*>(&(*t)->stream());
    REQUIRE(cuda_stream != nullptr);
    CHECK(cuda_stream->bound_reduction_workspace() != nullptr);
    const auto epochs = (*t)->train(2);
    REQUIRE((*t)->save_checkpoint(dir / name).ok());
    return epochs.back().step_losses;
  };
  const std::vector<float> eager_a = run(false, "eager_a.ckpt");
  const std::vector<float> eager_b = run(false, "eager_b.ckpt");
  const std::vector<float> graph = run(true, "graph.ckpt");
  CHECK_FALSE(has_nan(eager_a));
  CHECK(same_bytes(eager_a, eager_b));
  CHECK(same_bytes(eager_a, graph));
  const std::vector<char> a = file_bytes(dir / "eager_a.ckpt");
  CHECK(a == file_bytes(dir / "eager_b.ckpt"));
  CHECK(a == file_bytes(dir / "graph.ckpt"));
#endif
}
