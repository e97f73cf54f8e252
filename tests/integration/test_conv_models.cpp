// The convolutional recipes on real data: they learn, and their runs repeat bit for bit
// (augmentation, BatchNorm running statistics and the schedule included). One thread
// each unless the thread count is the point: ctest runs two tests at once on two cores.
#include <catch2/catch.hpp>

#include "nn/checkpoint.h"
#include "tests/support/conv_fixture.h"

using namespace noeira;
using namespace noeira::test;

namespace {
// Calibrated against the twin on the same data, steps and seeds (docs/parity.md,
// "Learning thresholds").
constexpr double kCifarCnnMinTop1 = 35.0;
constexpr double kResnet20MinTop1 = 15.0;
}  // namespace

TEST_CASE("conv2d-mnist reaches at least 98% test top-1 on MNIST after one epoch",
          "[integration][conv][mnist][slow]") {
  const Recipe& r = recipe_named("conv2d-mnist");
  auto t = conv_trainer(r, recipe_data("conv2d-mnist", ""), 0, 1);
  const EpochStats e = t->train_epoch();
  INFO("test top1 " << e.test.top1 << "%, train loss " << e.train_loss);
  CHECK(e.steps == 937);  // 60000 / 64
  CHECK(e.test.top1 >= 98.0);
}

TEST_CASE("cifar-cnn learns on the CIFAR-10 subset: well above chance after 3 epochs",
          "[integration][conv][cifar10][slow]") {
  const Recipe& r = recipe_named("cifar-cnn");
  auto t = conv_trainer(r, recipe_data("cifar-cnn", "cifar10-subset"), 0, 1);
  const auto epochs = t->train(3);
  INFO("test top1 " << epochs.back().test.top1 << "%, train loss " << epochs.back().train_loss);
  CHECK(epochs.back().test.top1 >= kCifarCnnMinTop1);
  CHECK(epochs.back().train_loss < epochs.front().train_loss);
}

TEST_CASE("resnet20 learns on the CIFAR-10 subset: well above chance after 2 epochs",
          "[integration][conv][cifar10][slow]") {
  const Recipe& r = recipe_named("resnet20");
  auto t = conv_trainer(r, recipe_data("resnet20", "cifar10-subset"), 0, 2);
  const auto epochs = t->train(2);
  INFO("test top1 " << epochs.back().test.top1 << "%, train loss " << epochs.back().train_loss);
  CHECK(epochs.back().test.top1 >= kResnet20MinTop1);
}

namespace {

// ResNet-20 on 512 CIFAR images (4 steps of 128 per epoch), with its learning rate cut
// after the first epoch so the schedule is part of what must repeat.
Recipe short_resnet20() {
  Recipe r = recipe_named("resnet20");
  r.schedule.milestones = {1};
  r.schedule.milestone_unit_epochs = true;
  return r;
}

const DataSplit& resnet_slice() {
  static const DataSplit d = head(recipe_data("resnet20", "cifar10-subset"), 512, 200);
  return d;
}

std::vector<char> checkpoint_after(const Recipe& r, uint64_t seed, int threads, int epochs) {
  TempDir dir;
  auto t = conv_trainer(r, resnet_slice(), seed, threads);
  t->train(epochs);
  REQUIRE(t->save_checkpoint(dir / "c.ckpt").ok());
  return file_bytes(dir / "c.ckpt");
}

}  // namespace

TEST_CASE("resnet20: the same seed gives byte-identical checkpoints, with 1 or 2 threads",
          "[integration][conv][determinism][slow]") {
  const Recipe r = short_resnet20();
  const auto a = checkpoint_after(r, 5, 1, 2);
  CHECK(a == checkpoint_after(r, 5, 1, 2));
  CHECK(a == checkpoint_after(r, 5, 2, 2));
  CHECK(a != checkpoint_after(r, 6, 1, 2));
}

TEST_CASE("resnet20: resuming from an epoch checkpoint ends byte-identical",
          "[integration][conv][determinism][checkpoint][slow]") {
  const Recipe r = short_resnet20();
  TempDir dir;
  auto straight = conv_trainer(r, resnet_slice(), 11, 1);
  const auto full = straight->train(3);
  REQUIRE(straight->save_checkpoint(dir / "straight.ckpt").ok());

  auto first = conv_trainer(r, resnet_slice(), 11, 1);
  first->train(1);
  REQUIRE(first->save_checkpoint(dir / "epoch1.ckpt").ok());
  auto resumed = conv_trainer(r, resnet_slice(), 999, 1);  // the checkpoint's seed wins
  REQUIRE(resumed->load_checkpoint(dir / "epoch1.ckpt").ok());
  const auto rest = resumed->train(3);
  REQUIRE(rest.size() == 2);
  CHECK(rest.back().test.loss == full.back().test.loss);
  REQUIRE(resumed->save_checkpoint(dir / "resumed.ckpt").ok());
  CHECK(file_bytes(dir / "straight.ckpt") == file_bytes(dir / "resumed.ckpt"));
}

TEST_CASE("resnet20: BatchNorm's running statistics are saved, and evaluation uses them",
          "[integration][conv][checkpoint]") {
  const Recipe r = short_resnet20();
  const DataSplit data = head(resnet_slice(), 256, 100);
  auto t = conv_trainer(r, data, 2, 1);
  const double before = t->evaluate().loss;  // running stats 0 / 1: BatchNorm is identity-like
  t->train(1);
  TempDir dir;
  REQUIRE(t->save_checkpoint(dir / "c.ckpt").ok());
  Result<Checkpoint> ck = read_checkpoint(dir / "c.ckpt");
  REQUIRE(ck.ok());
  const CheckpointTensor* rv = ck->find("bn1.running_var");
  REQUIRE(rv != nullptr);
  CHECK(rv->group == "buffer");
  CHECK(ck->find("layer3.2.bn2.running_mean") != nullptr);
  // A fresh trainer that loads the checkpoint evaluates exactly as the one that wrote it.
  auto loaded = conv_trainer(r, data, 3, 1);
  REQUIRE(loaded->load_checkpoint(dir / "c.ckpt").ok());
  CHECK(loaded->evaluate().loss == t->evaluate().loss);
  CHECK(t->evaluate().loss != before);
}
