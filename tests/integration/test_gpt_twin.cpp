// gpt-tiny against the PyTorch twin: the twin's Philox batches are our token ids, and from
// our step-0 weights and batches its losses follow ours within the recipe's bound
// (docs/parity.md).
#include <catch2/catch.hpp>

#include <cstring>

#include "harness/results/results.h"
#include "harness/twin/twin_runs.h"
#include "tests/support/gpt_fixture.h"
#include "tests/support/parity_run.h"
#include "tests/support/run_binary.h"
#include "tests/support/temp_dir.h"
#include "tests/support/twin_guard.h"

using namespace noeira;
using namespace noeira::test;

TEST_CASE("gpt batches: the twin draws the same token windows as our device batch",
          "[gpt][twin][batch-windows]") {
  if (!twin_or_skip(Catch::getResultCapture().getCurrentTestName())) return;
  const Recipe& r = recipe_named("gpt-tiny");
  const uint64_t seed = 11;
  const int steps = 3;
  auto t = lm_trainer({.seed = seed});
  std::vector<int32_t> ours, x, y;
  t->begin_epoch();
  for (int i = 0; i < steps; ++i) {
    t->train_step();
    t->read_batch(x, y);
    ours.insert(ours.end(), x.begin(), x.end());
  }
  TempDir dir;
  const auto dump = dir / "batches.i32";
  std::string cmd = "'";
  cmd += find_python_with_torch("").python;
  cmd += "' '" + twin_script().string() + "' --recipe '" + r.path.string() + "' --data-dir '" +
         twin_data_dir("tinyshakespeare", DataSource{}).string() + "' --device cpu --seed " +
         std::to_string(seed) + " --dump-batches '" + dump.string() + "' --dump-steps " +
         std::to_string(steps);
  const CommandResult res = run_shell(cmd);
  INFO(res.output);
  REQUIRE(res.exit_code == 0);
  const std::vector<char> theirs = file_bytes(dump);
  REQUIRE(theirs.size() == ours.size() * sizeof(int32_t));
  CHECK(std::memcmp(theirs.data(), ours.data(), theirs.size()) == 0);
}

TEST_CASE("gpt-tiny parity: the twin from our step-0 weights and batches stays within 1e-4 "
          "for 20 steps", "[gpt][twin][parity][slow]") {
  if (!twin_or_skip(Catch::getResultCapture().getCurrentTestName())) return;
  const auto [r, p] = parity_run("--model gpt-tiny --target cpu --seeds 1 --variants eager "
                                 "--threads 1 --steps 20 --warmup 2");
  INFO(r.output);
  CHECK(p["steps"] == 20);
  CHECK(p["bound"] == 1e-4);
  CHECK(p["max_rel_dev"].is_number());
  CHECK(p["passed"] == true);
  CHECK(r.exit_code == 0);
  // The table speaks of tokens and validation loss, not top-1.
  CHECK_THAT(r.output, Catch::Contains("tokens/s") && Catch::Contains("val loss"));
}
