// The Trainer on the GPU target: it follows the CPU reference step by step, and a seed
// gives byte-identical checkpoints run after run, eager or with the step captured as a
// CUDA graph (cfg.use_train_cuda_graph; until the Trainer captures, both runs are eager
// and the test checks run-to-run determinism alone).
#include <catch2/catch.hpp>

#include "tests/support/gpu_guard.h"

#if defined(NOEIRA_WITH_CUDA)
#include <cstdlib>
#include <optional>

#include "tests/gpu/gpu_rig.h"
#include "tests/support/mnist_fixture.h"
#include "tests/support/synthetic.h"
#endif

using namespace noeira;
using namespace noeira::test;

#if defined(NOEIRA_WITH_CUDA)
namespace {

// Sets an environment variable for one scope, restoring it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::unique_ptr<Trainer> trainer_on(Device device, uint64_t seed, bool graph) {
  TrainerConfig c = small_config(Task::kClassification, seed);
  c.device = device;
  c.use_train_cuda_graph = graph;
  c.optimizer.adam.lr = 1e-3f;
  auto t = Trainer::create(small_mlp(32, 4), c, synthetic_classification(1024, 1),
                           synthetic_classification(256, 2));
  if (!t) FAIL(t.error().message);
  return std::move(t).value();
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
