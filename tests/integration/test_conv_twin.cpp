// The convolutional recipes against the PyTorch twin: the augmented batches are the same
// bytes, and from the same weights and batches the loss curves agree within each recipe's
// parity bound (docs/parity.md).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "harness/results/results.h"
#include "kernels/cpu/cpu_ops.h"
#include "tests/support/conv_fixture.h"
#include "tests/support/parity_run.h"
#include "tests/support/run_binary.h"
#include "tests/support/twin_guard.h"

using namespace noeira;
using namespace noeira::test;

namespace {

std::string data_dir() {
  const char* d = std::getenv("NOEIRA_DATA");
  return d ? d : "";
}


}  // namespace

TEST_CASE("Augmenter: our crops and flips equal the twin's, byte for byte", "[conv][augment][twin][slow]") {
  if (!twin_or_skip(Catch::getResultCapture().getCurrentTestName())) return;
  const Recipe& r = recipe_named("resnet20");
  const DataSplit& data = recipe_data("resnet20", "cifar10-subset");
  const int64_t n = 256;
  const uint64_t seed = 7;
  const uint32_t epoch = 3;
  AugmentSpec spec;
  spec.count = n;
  spec.channels = 3;
  spec.height = 32;
  spec.width = 32;
  spec.pad = r.augment_crop_pad;
  spec.flip = r.augment_flip;
  for (int c = 0; c < 3; ++c) spec.fill[c] = data.fill[static_cast<size_t>(c)];
  std::vector<float> ours(static_cast<size_t>(n * 3 * 32 * 32));
  CpuOps ops(1);
  ops.augment_crop_flip(spec, data.train.x.data(), ours.data(), seed, epoch);

  TempDir dir;
  const auto dump = dir / "aug.f32";
  std::string cmd = "'";  // built up piecewise: g++ 12 misreports "'" + s (-Wrestrict)
  cmd += find_python_with_torch("").python;
  cmd += "' '" + twin_script().string() + "' --recipe '" + r.path.string() + "'";
  cmd += " --dataset cifar10-subset --data-dir '" + data_dir() + "' --device cpu";
  cmd += " --seed " + std::to_string(seed) + " --dump-augmented '" + dump.string() + "'";
  cmd += " --dump-epoch " + std::to_string(epoch) + " --dump-count " + std::to_string(n);
  const CommandResult res = run_shell(cmd);
  INFO(res.output);
  REQUIRE(res.exit_code == 0);
  const std::vector<char> theirs = file_bytes(dump);
  REQUIRE(theirs.size() == ours.size() * sizeof(float));
  CHECK(std::memcmp(theirs.data(), ours.data(), theirs.size()) == 0);
  // Not the identity: some images were moved or flipped.
  CHECK(std::memcmp(ours.data(), data.train.x.data(), theirs.size()) != 0);
}

namespace {

nlohmann::json parity_of(const std::string& model) {
  const auto [r, p] = parity_run("--model " + model +
                                 " --target cpu --quick --seeds 1 --threads 1 --steps 40 --warmup 5");
  INFO(r.output);
  CHECK(r.exit_code == (p["passed"] == true ? 0 : 1));
  return p;
}

}  // namespace

TEST_CASE("parity: conv2d-mnist stays within 1e-4 of the twin for 30 steps",
          "[conv][twin][parity][slow]") {
  if (!twin_or_skip(Catch::getResultCapture().getCurrentTestName())) return;
  const nlohmann::json p = parity_of("conv2d-mnist");
  CHECK(p["steps"] == 30);
  CHECK(p["bound"] == 1e-4);
  CHECK(p["passed"] == true);
}

TEST_CASE("parity: cifar-cnn agrees to rounding for 10 steps and stays within its recipe's bound "
          "for 30", "[conv][twin][parity][slow]") {
  if (!twin_or_skip(Catch::getResultCapture().getCurrentTestName())) return;
  const nlohmann::json p = parity_of("cifar-cnn");
  CHECK(p["steps"] == 30);
  CHECK(p["early_steps"] == 10);  // before any Adam near-tie (docs/parity.md)
  CHECK(p["early_max_rel_dev"].get<double>() <= 1e-6);
  CHECK(p["bound"] == recipe_named("cifar-cnn").parity_bound);
  CHECK(p["passed"] == true);
}

TEST_CASE("parity: resnet20 stays within its recipe's bound for 30 steps",
          "[conv][twin][parity][slow]") {
  if (!twin_or_skip(Catch::getResultCapture().getCurrentTestName())) return;
  const nlohmann::json p = parity_of("resnet20");
  CHECK(p["steps"] == 30);
  CHECK(p["early_steps"] == 2);  // the first steps agree to rounding (docs/parity.md)
  // Step 0 is one forward from the same weights: fp32 rounding, Winograd or not. Step 1
  // already carries Winograd's gradient rounding through lr 0.1 and BatchNorm.
  const double ours0 = p["ours"][0].get<double>(), twin0 = p["twin"][0].get<double>();
  CHECK(std::abs(ours0 - twin0) <= 1e-6 * std::abs(twin0));
  CHECK(p["bound"] == recipe_named("resnet20").parity_bound);
  CHECK(p["passed"] == true);
}
