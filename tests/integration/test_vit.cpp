// vit-tiny on the CIFAR-10 subset: it learns, its runs repeat bit for bit (1 or 2 threads,
// augmentation and the warm-up + cosine schedule included), a resume ends where a straight
// run ends, and from the same weights and batches it follows the PyTorch twin.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>

#include "harness/results/results.h"
#include "nn/checkpoint.h"
#include "tests/support/conv_fixture.h"
#include "tests/support/parity_run.h"
#include "tests/support/run_binary.h"
#include "tests/support/twin_guard.h"

using namespace noeira;
using namespace noeira::test;

namespace {

// Calibrated against the twin: its test top-1 after the same 2 epochs (62 steps, all of
// them warm-up) on seeds 0, 1, 2 (docs/parity.md, "Learning thresholds").
constexpr double kVitTinyMinTop1 = 20.0;

// 256 training images (2 steps of 128 per epoch), 100 test images.
const DataSplit& vit_slice() {
  static const DataSplit d = head(recipe_data("vit-tiny", ""), 256, 100);
  return d;
}

std::vector<char> checkpoint_after(uint64_t seed, int threads, int epochs) {
  TempDir dir;
  auto t = conv_trainer(recipe_named("vit-tiny"), vit_slice(), seed, threads);
  t->train(epochs);
  REQUIRE(t->save_checkpoint(dir / "c.ckpt").ok());
  return file_bytes(dir / "c.ckpt");
}

}  // namespace

TEST_CASE("vit-tiny learns on the CIFAR-10 subset: well above chance after 2 epochs",
          "[integration][vit][cifar10][slow]") {
  const Recipe& r = recipe_named("vit-tiny");
  const DataSplit& data = recipe_data("vit-tiny", "");
  // The run is 2 epochs long, as the twin's calibration run (--epochs 2): the schedule
  // spans those 62 steps.
  auto t = conv_trainer(r, data, 0, 1, 2 * epoch_steps(data.train.count, r.batch, true));
  const auto epochs = t->train(2);
  INFO("test top1 " << epochs.back().test.top1 << "%, train loss " << epochs.back().train_loss);
  CHECK(epochs.back().test.top1 >= kVitTinyMinTop1);
  CHECK(epochs.back().train_loss < epochs.front().train_loss);
}

TEST_CASE("vit-tiny: the same seed gives byte-identical checkpoints, with 1 or 2 threads",
          "[integration][vit][determinism]") {
  const auto a = checkpoint_after(5, 1, 2);
  CHECK(a == checkpoint_after(5, 1, 2));
  CHECK(a == checkpoint_after(5, 2, 2));
  CHECK(a != checkpoint_after(6, 1, 2));
}

TEST_CASE("vit-tiny: resuming from an epoch checkpoint ends byte-identical",
          "[integration][vit][determinism][checkpoint]") {
  const Recipe& r = recipe_named("vit-tiny");
  TempDir dir;
  auto straight = conv_trainer(r, vit_slice(), 11, 1);
  const auto full = straight->train(3);
  REQUIRE(straight->save_checkpoint(dir / "straight.ckpt").ok());

  auto first = conv_trainer(r, vit_slice(), 11, 1);
  first->train(1);
  REQUIRE(first->save_checkpoint(dir / "epoch1.ckpt").ok());
  auto resumed = conv_trainer(r, vit_slice(), 999, 1);  // the checkpoint's seed wins
  REQUIRE(resumed->load_checkpoint(dir / "epoch1.ckpt").ok());
  const auto rest = resumed->train(3);
  REQUIRE(rest.size() == 2);
  CHECK(rest.back().test.loss == full.back().test.loss);
  REQUIRE(resumed->save_checkpoint(dir / "resumed.ckpt").ok());
  CHECK(file_bytes(dir / "straight.ckpt") == file_bytes(dir / "resumed.ckpt"));

  // The checkpoint names the ViT's parameters as the twin does.
  Result<Checkpoint> ck = read_checkpoint(dir / "resumed.ckpt");
  REQUIRE(ck.ok());
  for (const char* name : {"patch_embed.weight", "cls_token", "pos_embed",
                           "blocks.3.attn.c_attn.weight", "blocks.0.mlp.c_fc.bias", "norm.weight",
                           "head.bias"})
    CHECK(ck->find(name) != nullptr);
}

TEST_CASE("vit-tiny in bf16 (BF16Policy) on the CPU: finite losses, bit for bit with 1 or 2 "
          "threads", "[integration][vit][bf16][determinism]") {
  auto run = [](int threads) {
    TrainerOptions o;
    o.seed = 3;
    o.threads = threads;
    o.amp = BF16Policy;
    Result<std::unique_ptr<TrainerCore>> t = make_trainer(recipe_named("vit-tiny"), vit_slice(), o);
    REQUIRE(t.ok());
    const auto epochs = (*t)->train(2);
    TempDir dir;
    REQUIRE((*t)->save_checkpoint(dir / "c.ckpt").ok());
    return std::make_pair(epochs, file_bytes(dir / "c.ckpt"));
  };
  const auto [epochs, one] = run(1);
  REQUIRE(epochs.size() == 2);
  CHECK(std::isfinite(epochs.back().train_loss));
  CHECK(std::isfinite(epochs.back().test.loss));
  CHECK(run(2).second == one);
}

TEST_CASE("vit-tiny: 546,186 parameters; a recipe with a bad patch size is refused clearly",
          "[integration][vit]") {
  auto t = conv_trainer(recipe_named("vit-tiny"), vit_slice(), 0, 1);
  CHECK(t->params().count() == 546186);
  TempDir dir;
  nlohmann::json j = recipe_named("vit-tiny").json;
  j["model"]["patch"] = 5;
  std::ofstream(dir / "bad.json") << j.dump();
  Result<Recipe> bad = load_recipe(dir / "bad.json");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::Contains("multiples of model.patch (5)"));
}

TEST_CASE("parity: vit-tiny stays within 1e-4 of the twin for 20 steps",
          "[vit][twin][parity][slow]") {
  if (!twin_or_skip(Catch::getResultCapture().getCurrentTestName())) return;
  const auto [r, p] = parity_run("--model vit-tiny --target cpu --quick --seeds 1 --threads 1 "
                                 "--steps 22 --warmup 2");
  INFO(r.output);
  CHECK(p["steps"] == 20);
  CHECK(p["bound"] == 1e-4);
  CHECK(p["passed"] == true);
  CHECK(r.exit_code == 0);
}
