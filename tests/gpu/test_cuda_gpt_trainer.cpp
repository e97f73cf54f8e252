// gpt-tiny on the GPU target: the whole step (the device-built batch included) captures as
// one CUDA graph, eager and captured runs give byte-identical checkpoints (fp32 and bf16),
// the host-batch baseline equals the device batch, and GPU training follows the CPU.
#include <catch2/catch.hpp>

#include <cmath>

#include "tests/support/gpu_guard.h"

#if defined(NOEIRA_WITH_CUDA)
#include "tests/gpu/gpu_rig.h"
#include "tests/support/gpt_fixture.h"
#include "tests/support/scoped_env.h"
#include "tests/support/temp_dir.h"
#endif

using namespace noeira;
using namespace noeira::test;

TEST_CASE("cuda: gpt-tiny captures; eager, captured and host-batch checkpoints are identical",
          "[gpu][gpt]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  TempDir dir;
  for (AmpPolicy amp : {NoAMP, BF16Policy}) {
    INFO(amp_name(amp));
    auto run = [&](bool graph, bool host_batch, const std::string& name) {
      auto t = lm_trainer({.device = Device::kGpu, .seed = 5, .amp = amp, .graph = graph,
                           .host_batch = host_batch});
      CHECK(t->graph_active() == graph);
      const std::vector<float> losses = lm_steps(*t, 12);
      REQUIRE(t->save_checkpoint(dir / name).ok());
      return losses;
    };
    const std::vector<float> eager_a = run(false, false, "a.ckpt");
    const std::vector<float> eager_b = run(false, false, "b.ckpt");
    const std::vector<float> graph = run(true, false, "g.ckpt");
    const std::vector<float> host = run(false, true, "h.ckpt");
    CHECK_FALSE(has_nan(eager_a));
    CHECK(eager_a.back() < eager_a.front());
    CHECK(same_bytes(eager_a, eager_b));
    CHECK(same_bytes(eager_a, graph));
    CHECK(same_bytes(eager_a, host));
    const std::vector<char> a = file_bytes(dir / "a.ckpt");
    CHECK(a == file_bytes(dir / "b.ckpt"));
    CHECK(a == file_bytes(dir / "g.ckpt"));
    CHECK(a == file_bytes(dir / "h.ckpt"));
  }
#endif
}

TEST_CASE("cuda: gpt-tiny on the GPU follows the CPU for 10 steps (TF32 off)", "[gpu][gpt]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
#if defined(NOEIRA_WITH_CUDA)
  ScopedEnv no_tf32("NOEIRA_TF32", "0");
  auto cpu = lm_trainer({.device = Device::kCpu, .seed = 3});
  auto gpu = lm_trainer({.device = Device::kGpu, .seed = 3});
  const std::vector<float> a = lm_steps(*cpu, 10), b = lm_steps(*gpu, 10);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(std::abs(a[i] - b[i]) <= 1e-4f * std::abs(a[i]));
  CHECK(std::abs(cpu->evaluate().loss - gpu->evaluate().loss) < 1e-3);
#endif
}
