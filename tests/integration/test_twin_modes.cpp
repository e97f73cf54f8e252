// The twin on torch 2.x: its eager and compiled modes (torch.compile of the whole step)
// run every model's quick recipe on the CPU, and the harness validates and records them:
// step times, losses, compile time apart, what torch ran (fused optimizer, SDPA).
#include <catch2/catch.hpp>

#include <string>

#include "harness/results/results.h"
#include "tests/support/run_binary.h"
#include "tests/support/temp_dir.h"
#include "tests/support/twin_guard.h"

using namespace noeira;
using namespace noeira::test;

namespace {

const nlohmann::json& variant(const nlohmann::json& results, const std::string& name) {
  for (const auto& v : results["benchmarks"][0]["variants"])
    if (v["name"] == name) return v;
  FAIL("no variant " << name);
  static const nlohmann::json none;
  return none;
}

// One seed of our eager variant and the twin's eager and compiled modes, 12 steps (4 of
// warm-up, which holds the compilation), 2 threads.
void check_twin_modes(const std::string& model) {
  if (!twin_or_skip(Catch::getResultCapture().getCurrentTestName())) return;
  TempDir dir;
  const auto out = dir / "r.json";
  const CommandResult r = run_bench("--model " + model +
                                    " --target cpu --quick --seeds 1 --steps 12 --warmup 4 --threads 2 "
                                    "--variants eager --twin eager,compiled --out '" + out.string() + "'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  Result<nlohmann::json> res = read_results(out);
  REQUIRE(res.ok());
  for (const char* mode : {"twin:eager", "twin:compiled"}) {
    INFO(mode);
    const nlohmann::json& v = variant(*res, mode);
    REQUIRE(v["available"] == true);
    CHECK(v["error"].is_null());
    REQUIRE(v["runs"].size() == 1);
    const nlohmann::json& run = v["runs"][0];
    CHECK(run["timers"]["wall"]["n"] == 8);
    CHECK(run["losses"].size() == 12);
    const nlohmann::json& impl = run["twin_impl"];
    CHECK_THAT(impl["torch_version"].get<std::string>(), Catch::StartsWith("2."));
    CHECK(impl["adam_impl"] == "fused");  // fused Adam/AdamW/SGD on the CPU (torch >= 2.4)
    if (model == "gpt-tiny" || model == "vit-tiny") CHECK(impl["attention_impl"] == "sdpa");
    if (std::string(mode) == "twin:compiled") {
      CHECK(run["compile_seconds"].get<double>() > 0.0);
      CHECK(impl["compile_impl"] == "torch.compile(whole step)");
      CHECK(impl["compiled_graphs"].get<int>() >= 1);
    } else {
      CHECK(run["compile_seconds"].is_null());
    }
  }
  // Same Philox init and batches, the same step-0 loss before any update (compiled
  // kernels round differently: fp32 rounding, not a tie).
  const double ours = variant(*res, "eager")["runs"][0]["losses"][0].get<double>();
  for (const char* mode : {"twin:eager", "twin:compiled"})
    CHECK(variant(*res, mode)["runs"][0]["losses"][0].get<double>() == Approx(ours).epsilon(1e-5));
  CHECK_THAT(r.output, Catch::Contains("twin:compiled: torch.compile took"));
}

}  // namespace

TEST_CASE("twin modes: mlp runs eager and compiled", "[twin][twin-modes][slow]") { check_twin_modes("mlp"); }
TEST_CASE("twin modes: conv2d-mnist runs eager and compiled", "[twin][twin-modes][slow]") {
  check_twin_modes("conv2d-mnist");
}
TEST_CASE("twin modes: cifar-cnn runs eager and compiled", "[twin][twin-modes][slow]") {
  check_twin_modes("cifar-cnn");
}
TEST_CASE("twin modes: resnet20 runs eager and compiled", "[twin][twin-modes][slow]") {
  check_twin_modes("resnet20");
}
TEST_CASE("twin modes: vit-tiny runs eager and compiled", "[twin][twin-modes][slow]") {
  check_twin_modes("vit-tiny");
}
TEST_CASE("twin modes: gpt-tiny runs eager and compiled", "[twin][twin-modes][slow]") {
  check_twin_modes("gpt-tiny");
}
