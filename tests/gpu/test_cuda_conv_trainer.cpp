// The image recipes on the GPU target: ResNet-20 (convolutions, BatchNorm, option-A
// shortcuts, pooling, the Augmenter, SGD with a multistep schedule), the CIFAR CNN and
// vit-tiny (patches, class token, attention without the mask, label smoothing, AdamW
// groups) capture as one CUDA graph, eager and captured runs give byte-identical
// checkpoints (fp32 and bf16), and GPU training follows the CPU reference.
#include <cmath>
#include <cstdio>

#include <catch2/catch.hpp>

#include "tests/support/gpu_guard.h"

#if defined(NOEIRA_WITH_CUDA)
#include "tests/gpu/gpu_rig.h"
#include "tests/support/conv_fixture.h"
#include "tests/support/scoped_env.h"
#endif

using namespace noeira;
using namespace noeira::test;

#if defined(NOEIRA_WITH_CUDA)
namespace {

// 512 CIFAR images, 4 steps of 128 per epoch, the rate cut after epoch 1.
Recipe short_resnet20() {
  Recipe r = recipe_named("resnet20");
  r.schedule.milestones = {1};
  return r;
}

std::unique_ptr<TrainerCore> gpu_trainer(const std::string& model, Device device, bool graph,
                                     AmpPolicy amp, uint64_t seed) {
  const Recipe r = model == "resnet20" ? short_resnet20() : recipe_named(model);
  const DataSplit data = head(recipe_data(model, "cifar10-subset"), 512, 200);
  TrainerOptions o;
  o.device = device;
  o.threads = 1;
  o.seed = seed;
  o.use_train_cuda_graph = graph;
  o.amp = amp;
  Result<std::unique_ptr<TrainerCore>> t = make_trainer(r, data, o);
  if (!t) FAIL(t.error().message);
  return std::move(t).value();
}

}  // namespace
#endif

TEST_CASE("cuda: resnet20, cifar-cnn and vit-tiny capture; eager and captured checkpoints are "
          "identical",
          "[gpu][conv]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  TempDir dir;
  for (const char* model : {"resnet20", "cifar-cnn", "vit-tiny"})
    for (AmpPolicy amp : {NoAMP, BF16Policy}) {
      INFO(model << " " << amp_name(amp));
      auto run = [&](bool graph, const std::string& name) {
        auto t = gpu_trainer(model, Device::kGpu, graph, amp, 5);
        CHECK(t->graph_active() == graph);
        const auto epochs = t->train(2);
        REQUIRE(t->save_checkpoint(dir / name).ok());
        return epochs.back().step_losses;
      };
      const std::vector<float> eager_a = run(false, "a.ckpt");
      const std::vector<float> eager_b = run(false, "b.ckpt");
      const std::vector<float> graph = run(true, "g.ckpt");
      CHECK_FALSE(has_nan(eager_a));
      CHECK(same_bytes(eager_a, eager_b));
      CHECK(same_bytes(eager_a, graph));
      const std::vector<char> a = file_bytes(dir / "a.ckpt");
      CHECK(a == file_bytes(dir / "b.ckpt"));
      CHECK(a == file_bytes(dir / "g.ckpt"));
    }
#endif
}

TEST_CASE("cuda: resnet20 on the GPU follows the CPU for 8 steps (TF32 off)", "[gpu][conv]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  // As the recipe's parity check against the twin (docs/parity.md): rounding differences
  // grow 10-30x per step at lr 0.1 through BatchNorm, so the first steps carry the strict
  // check and the rest only bound the drift. An H200 read, step by step: 0 (the same
  // forward), 2.8e-5 (one update later: cuDNN's fp32 convolutions round differently from
  // oneDNN's direct ones, where the twin's CPU run was at 3e-6; since then the CPU runs
  // Winograd's, 1.2e-5 to 4.7e-5 from the twin: docs/parity.md), 4.7e-4, 2.2e-3, 4.0e-3, 1.8e-3,
  // 7.3e-3, 4.4e-3; the test loss after 8 steps (eval mode, running statistics of 8
  // batches) differed by 4.6%.
  ScopedEnv no_tf32("NOEIRA_TF32", "0");
  constexpr double kStep0 = 1e-5, kStep1 = 1e-4, kDrift = 3e-1;
  auto cpu = gpu_trainer("resnet20", Device::kCpu, false, NoAMP, 3);
  auto gpu = gpu_trainer("resnet20", Device::kGpu, false, NoAMP, 3);
  size_t global = 0;
  for (int epoch = 0; epoch < 2; ++epoch) {
    const EpochStats c = cpu->train_epoch();
    const EpochStats g = gpu->train_epoch();
    REQUIRE(g.step_losses.size() == c.step_losses.size());
    for (size_t i = 0; i < c.step_losses.size(); ++i, ++global) {
      const double rel = std::abs(g.step_losses[i] - c.step_losses[i]) / std::abs(c.step_losses[i]);
      std::printf("resnet20 gpu vs cpu: step %zu loss cpu %.6f gpu %.6f relative %.2e\n", global,
                  c.step_losses[i], g.step_losses[i], rel);
      INFO("step " << global << " cpu " << c.step_losses[i] << " gpu " << g.step_losses[i]);
      CHECK(rel <= (global == 0 ? kStep0 : global == 1 ? kStep1 : kDrift));
    }
    CHECK(std::abs(g.test.loss - c.test.loss) <= kDrift * c.test.loss);
  }
#endif
}
