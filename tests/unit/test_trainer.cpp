// DatasetTrainer behaviour on small synthetic problems: both tasks, every optimizer.
#include <catch2/catch.hpp>

#include "tests/support/synthetic.h"

using namespace noeira;
using namespace noeira::test;

TEST_CASE("Classification training learns a synthetic problem with each optimizer",
          "[trainer]") {
  for (OptimizerKind k : {OptimizerKind::kAdam, OptimizerKind::kAdamW, OptimizerKind::kSgd}) {
    auto t = small_trainer(Task::kClassification, 1, k);
    const double before = t->evaluate().loss;
    const auto epochs = t->train(8);
    INFO(optimizer_name(k) << ": loss " << before << " -> " << epochs.back().test.loss);
    CHECK(epochs.back().test.loss < 0.6 * before);
    CHECK(epochs.back().test.top1 > 80.0);
    CHECK(epochs.back().steps == 32);  // 1024 / 32
  }
}

TEST_CASE("Regression training with MSE drives the loss down", "[trainer]") {
  auto t = small_trainer(Task::kRegression);
  const double before = t->evaluate().loss;
  const auto epochs = t->train(10);
  INFO("mse " << before << " -> " << epochs.back().test.loss);
  CHECK(epochs.back().test.loss < 0.1 * before);
  CHECK(epochs.back().test.top1 == 0.0);
}

TEST_CASE("train_epoch and eval_top1 give the same numbers train reports", "[trainer]") {
  auto a = small_trainer(Task::kClassification, 5);
  auto b = small_trainer(Task::kClassification, 5);
  const auto whole = a->train(2);
  b->train_epoch();
  const EpochStats second = b->train_epoch();
  CHECK(second.train_loss == whole[1].train_loss);
  CHECK(b->eval_top1() == whole[1].test.top1);
  CHECK(b->steps_done() == 64);
}

TEST_CASE("The memory plan has one arena per category and no surprise bytes", "[trainer]") {
  auto t = small_trainer(Task::kClassification);
  const MemoryPlan& p = t->plan();
  // fc1: 8*32 + 32, fc2: 32*4 + 4 floats, 32-byte aligned each (no padding needed).
  CHECK(p.bytes(MemCategory::kParams) == (256 + 32 + 128 + 4) * 4);
  CHECK(p.bytes(MemCategory::kGrads) == p.bytes(MemCategory::kParams));
  CHECK(p.bytes(MemCategory::kOptimState) >= 2 * p.bytes(MemCategory::kParams));
  CHECK(p.bytes(MemCategory::kDataset) >= (1024 + 256) * 9 * 4);
  CHECK(p.describe().find("activations") != std::string::npos);
}

TEST_CASE("Bad trainer inputs are errors, not crashes", "[trainer]") {
  TrainerConfig c = small_config(Task::kClassification);
  c.batch = 5000;
  auto r = DatasetTrainer::create(small_mlp(8, 4), c, synthetic_classification(100, 1),
                           synthetic_classification(10, 2));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("exceeds the training set") != std::string::npos);

  TrainerConfig g = small_config(Task::kClassification);
  g.device = Device::kGpu;
  auto gpu = DatasetTrainer::create(small_mlp(8, 4), g, synthetic_classification(100, 1),
                             synthetic_classification(10, 2));
#if !defined(NOEIRA_WITH_CUDA)
  REQUIRE_FALSE(gpu.ok());
  CHECK(gpu.error().message.find("without CUDA") != std::string::npos);
#endif
}
