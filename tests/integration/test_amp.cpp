// BF16Policy on the CPU: accuracy against fp32, activation memory, determinism.
#include <catch2/catch.hpp>

#include "harness/run/stats.h"
#include "tests/support/mnist_fixture.h"
#include "tests/support/synthetic.h"

using namespace noeira;
using namespace noeira::test;

namespace {

std::unique_ptr<TrainerCore> mlp_trainer(const DataSplit& data, uint64_t seed, AmpPolicy amp,
                                     int threads = 1) {
  TrainerOptions o;
  o.seed = seed;
  o.threads = threads;
  o.amp = amp;
  Result<std::unique_ptr<TrainerCore>> t = make_trainer(mlp_recipe(), data, o);
  if (!t) FAIL(t.error().message);
  return std::move(t).value();
}

}  // namespace

TEST_CASE("bf16 halves the activation memory and adds only the bf16 weight copies", "[amp]") {
  const DataSplit data = mnist_subset(1280);
  auto fp32 = mlp_trainer(data, 0, NoAMP);
  auto bf16 = mlp_trainer(data, 0, BF16Policy);
  const MemoryPlan &a = fp32->plan(), &b = bf16->plan();
  // Half, up to the 256-byte alignment of each buffer.
  CHECK(b.bytes(MemCategory::kActivations) * 2 >= a.bytes(MemCategory::kActivations));
  CHECK(b.bytes(MemCategory::kActivations) * 2 <= a.bytes(MemCategory::kActivations) + 4096);
  CHECK(a.bytes(MemCategory::kParamCopies) == 0);
  CHECK(b.bytes(MemCategory::kParamCopies) * 2 == b.bytes(MemCategory::kParams));
  CHECK(b.bytes(MemCategory::kParams) == a.bytes(MemCategory::kParams));
  CHECK(b.bytes(MemCategory::kOptimState) == a.bytes(MemCategory::kOptimState));
  CHECK(a.bytes(MemCategory::kWorkspace) < b.bytes(MemCategory::kWorkspace));  // fp32 path: no scratch
}

TEST_CASE("Same-seed bf16 runs are byte-identical, with 1 or 2 threads", "[amp][determinism][slow]") {
  TempDir dir;
  const DataSplit data = mnist_subset(3200);
  auto a = mlp_trainer(data, 4, BF16Policy, 2);
  a->train(2);
  REQUIRE(a->save_checkpoint(dir / "a.ckpt").ok());
  auto b = mlp_trainer(data, 4, BF16Policy, 1);
  b->train(2);
  REQUIRE(b->save_checkpoint(dir / "b.ckpt").ok());
  CHECK(file_bytes(dir / "a.ckpt") == file_bytes(dir / "b.ckpt"));
  // A bf16 checkpoint cannot be resumed as fp32.
  auto f = mlp_trainer(data, 4, NoAMP);
  Status s = f->load_checkpoint(dir / "a.ckpt");
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.error().message, Catch::Contains("amp"));
}

TEST_CASE("bf16 MLP on MNIST ends within 0.3 points of fp32 top-1 (3 seeds, 2 epochs)",
          "[amp][mnist][slow]") {
  std::vector<double> top_fp32, top_bf16;
  for (uint64_t seed : {0, 1, 2}) {
    top_fp32.push_back(mlp_trainer(mnist(), seed, NoAMP)->train(2).back().test.top1);
    top_bf16.push_back(mlp_trainer(mnist(), seed, BF16Policy)->train(2).back().test.top1);
  }
  INFO("fp32 " << mean(top_fp32) << "%, bf16 " << mean(top_bf16) << "%");
  CHECK(std::abs(mean(top_bf16) - mean(top_fp32)) <= 0.3);
  CHECK(mean(top_bf16) > 97.0);
}

TEST_CASE("bf16 regression and residual models train", "[amp]") {
  TrainerConfig c = small_config(Task::kRegression);
  c.amp = BF16Policy;
  auto t = DatasetTrainer::create(small_mlp(32, 2), c, synthetic_regression(1024, 1),
                           synthetic_regression(256, 2));
  REQUIRE(t.ok());
  const double before = (*t)->evaluate().loss;
  const double after = (*t)->train(10).back().test.loss;
  INFO("mse " << before << " -> " << after);
  CHECK(after < 0.1 * before);
}
