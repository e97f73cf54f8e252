// The MLP recipe on real MNIST: accuracy, determinism, resume. One thread each unless
// the thread count is the point: ctest runs two tests at once on two cores.
#include <catch2/catch.hpp>

#include "tests/support/mnist_fixture.h"

using namespace noeira;
using namespace noeira::test;

namespace {

std::unique_ptr<TrainerCore> trainer_on(const DataSplit& data, uint64_t seed, int threads) {
  TrainerOptions o;
  o.seed = seed;
  o.threads = threads;
  Result<std::unique_ptr<TrainerCore>> t = make_trainer(mlp_recipe(), data, o);
  if (!t) FAIL(t.error().message);
  return std::move(t).value();
}

}  // namespace

TEST_CASE("MLP reaches at least 96% test top-1 on MNIST after one epoch",
          "[integration][mnist][slow]") {
  auto t = trainer_on(mnist(), 0, 1);
  const EpochStats e = t->train_epoch();
  INFO("test top1 " << e.test.top1 << "%, train loss " << e.train_loss);
  CHECK(e.steps == 468);  // 60000 / 128, last partial batch dropped
  CHECK(e.test.count == 10000);
  CHECK(e.test.top1 >= 96.0);
  CHECK(e.train_loss < 0.35);
  CHECK(e.step_losses.size() == 468);
  CHECK(e.step_losses.front() > e.step_losses.back());
}

TEST_CASE("Same seed twice gives byte-identical checkpoints", "[integration][determinism][slow]") {
  TempDir dir;
  const DataSplit data = mnist_subset(6400);
  for (const char* name : {"a.ckpt", "b.ckpt"}) {
    auto t = trainer_on(data, 7, 1);
    t->train(2);
    REQUIRE(t->save_checkpoint(dir / name).ok());
  }
  CHECK(file_bytes(dir / "a.ckpt") == file_bytes(dir / "b.ckpt"));
  auto other = trainer_on(data, 8, 1);
  other->train(2);
  REQUIRE(other->save_checkpoint(dir / "c.ckpt").ok());
  CHECK(file_bytes(dir / "a.ckpt") != file_bytes(dir / "c.ckpt"));
}

TEST_CASE("One thread and two threads give byte-identical checkpoints",
          "[integration][determinism][slow]") {
  TempDir dir;
  const DataSplit data = mnist_subset(6400);
  auto one = trainer_on(data, 3, 1);
  one->train(2);
  REQUIRE(one->save_checkpoint(dir / "t1.ckpt").ok());
  auto two = trainer_on(data, 3, 2);
  two->train(2);
  REQUIRE(two->save_checkpoint(dir / "t2.ckpt").ok());
  CHECK(file_bytes(dir / "t1.ckpt") == file_bytes(dir / "t2.ckpt"));
}

TEST_CASE("Resuming from an epoch checkpoint ends byte-identical to an uninterrupted run",
          "[integration][determinism][checkpoint][slow]") {
  TempDir dir;
  const DataSplit data = mnist_subset(6400);
  auto straight = trainer_on(data, 11, 1);
  const auto full = straight->train(3);
  REQUIRE(straight->save_checkpoint(dir / "straight.ckpt").ok());

  auto first = trainer_on(data, 11, 1);
  first->train(1);
  REQUIRE(first->save_checkpoint(dir / "epoch1.ckpt").ok());
  auto resumed = trainer_on(data, 999, 1);  // the checkpoint's seed wins
  REQUIRE(resumed->load_checkpoint(dir / "epoch1.ckpt").ok());
  CHECK(resumed->epochs_done() == 1);
  const auto rest = resumed->train(3);
  REQUIRE(rest.size() == 2);
  CHECK(rest.back().test.loss == full.back().test.loss);
  REQUIRE(resumed->save_checkpoint(dir / "resumed.ckpt").ok());
  CHECK(file_bytes(dir / "straight.ckpt") == file_bytes(dir / "resumed.ckpt"));
}
