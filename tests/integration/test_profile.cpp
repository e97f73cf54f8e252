// `noeira-bench profile` as users run it: ours and the twin's step broken down by op
// category, the attribution summing to the measured step, both traces valid and covering
// the same steps, and no matrix product or attention of the twin left in "other".
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/profile/chrome_trace.h"
#include "harness/results/results.h"
#include "tests/support/gpu_guard.h"
#include "tests/support/run_binary.h"
#include "tests/support/temp_dir.h"
#include "tests/support/twin_guard.h"

using namespace noeira;
using namespace noeira::test;

namespace {

nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

// benchmarks[0].profile of a profile run's results file, validated.
ProfileRecord profile_of(const std::filesystem::path& results) {
  Result<ResultsRecord> r = read_results_record(results);
  REQUIRE(r);
  REQUIRE(r->benchmarks.size() == 1);
  REQUIRE(r->benchmarks[0].profile);
  return *r->benchmarks[0].profile;
}

}  // namespace

TEST_CASE("profile: our attribution sums to the step within 5% (mlp, gpt-tiny; CPU, 1 thread)",
          "[integration][profile][slow]") {
  TempDir dir;
  for (const char* model : {"mlp", "gpt-tiny"}) {
    INFO(model);
    const auto out = dir / (std::string(model) + ".json");
    // Up to two runs: a preemption by a test running beside this one (ctest -j2) lands
    // between ops as unattributed time, and mlp's four timed steps are 18 ms in all (CI
    // once saw 17.6%); the attribution must sum to the step in one of them.
    CommandResult r;
    ProfileRecord p;
    double rest = 1.0;
    for (int attempt = 0; attempt < 2 && std::fabs(rest) > 0.05; ++attempt) {
      r = run_bench(std::string("profile --target cpu --threads 1 --twin none --steps 4 "
                                "--warmup 2 --model ") + model + " --out '" + out.string() + "'");
      INFO(r.output);
      REQUIRE(r.exit_code == 0);
      p = profile_of(out);
      REQUIRE(p.sides.size() == 1);
      rest = p.sides[0].unattributed_ms() / p.sides[0].step_ms;
      std::printf("profile %s: step %.3f ms, attributed %.3f ms, unattributed %.2f%%\n", model,
                  p.sides[0].step_ms, p.sides[0].attributed_ms, 100.0 * rest);
    }
    INFO(r.output);
    CHECK_THAT(r.output, Catch::Contains("unattributed"));
    const ProfileSideRecord& ours = p.sides[0];
    CHECK(ours.steps == 4);
    CHECK(std::fabs(rest) <= 0.05);
    CHECK(ours.category("gemm")->ms_per_step > 0);
    CHECK(ours.category("gemm")->flops_per_step > 0);
    CHECK(ours.category("optimizer")->ms_per_step > 0);
    CHECK_FALSE(ours.top_ops.empty());
  }
}

TEST_CASE("profile --trace: ours and the twin's Chrome traces are valid and cover the same steps",
          "[integration][profile][slow]") {
  if (!twin_or_skip("profile --trace")) return;
  TempDir dir;
  const auto out = dir / "mlp.json";
  const CommandResult r = run_bench("profile --model mlp --target cpu --threads 1 --twin eager --steps 3 "
                                    "--warmup 2 --trace '" + (dir / "traces").string() + "' --out '" +
                                    out.string() + "'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const ProfileRecord p = profile_of(out);
  REQUIRE(p.sides.size() == 2);
  REQUIRE(p.sides[1].available);
  CHECK(p.sides[1].steps == 3);
  for (const ProfileSideRecord& s : p.sides) {
    INFO(s.side);
    REQUIRE_FALSE(s.trace.empty());
    Result<TraceCheck> c = check_chrome_trace(read_json(s.trace), s.side.rfind("noeira", 0) == 0);
    INFO((c ? "" : c.error().message));
    REQUIRE(c);
    CHECK(c->steps == 3);
  }

  SECTION("the report draws a stacked bar per side") {
    const auto html = dir / "report.html";
    const CommandResult rep = run_bench("report '" + out.string() + "' --html '" + html.string() + "'");
    INFO(rep.output);
    REQUIRE(rep.exit_code == 0);
    std::ifstream in(html);
    const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK_THAT(page, Catch::Contains("ms per step by op category"));
    CHECK_THAT(page, Catch::Contains("noeira:eager"));
    CHECK_THAT(page, Catch::Contains("twin:eager"));
    CHECK_THAT(page, Catch::Contains("unattributed"));
  }
}

TEST_CASE("profile: the twin's category table maps every matrix product and attention op of "
          "every model's quick recipe", "[integration][profile][slow]") {
  if (!twin_or_skip("profile twin categories")) return;
  TempDir dir;
  const std::regex must_map("mm|matmul|linear|attention|softmax|conv|addmm|bmm", std::regex::icase);
  for (const char* model : {"mlp", "conv2d-mnist", "cifar-cnn", "resnet20", "gpt-tiny", "vit-tiny"}) {
    INFO(model);
    const auto out = dir / (std::string(model) + ".json");
    const CommandResult r = run_bench(std::string("profile --target cpu --threads 1 --twin eager --steps 2 "
                                                  "--warmup 1 --model ") + model + " --out '" + out.string() + "'");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const ProfileRecord p = profile_of(out);
    REQUIRE(p.sides.size() == 2);
    REQUIRE(p.sides[1].available);
    std::string other;
    for (const std::string& name : p.sides[1].unmapped) other += " " + name + ";";
    std::printf("profile %s: the twin's ops in \"other\":%s\n", model, other.empty() ? " none" : other.c_str());
    for (const std::string& name : p.sides[1].unmapped) {
      INFO(name);
      CHECK_FALSE(std::regex_search(name, must_map));
    }
  }
}

TEST_CASE("profile --budget --target gpu without a GPU: the gpt recipe's ops budgeted for an "
          "H200 from one CPU step",
          "[profile][budget]") {
#if defined(NOEIRA_WITH_CUDA)
  if (std::string why; cuda_device_usable(&why)) {
    std::printf("SKIP [budget] the CPU path of --budget: a GPU is here\n");
    return;
  }
#endif
  TempDir dir;
  const CommandResult r = run_bench("profile --model gpt-tiny --dtype bf16 --target gpu --budget --threads 2 "
                                    "--out '" + (dir / "b.json").string() + "'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("no GPU here") && Catch::Contains("roofline budget on NVIDIA H200") &&
                           Catch::Contains("989.4 TFLOP/s (bf16)") && Catch::Contains("linear_forward") &&
                           Catch::Contains("attention_backward") && Catch::Contains("step budget at peak"));
  const CommandResult h100 = run_bench("profile --model mlp --target gpu --budget --budget-device H100 --out '" +
                                       (dir / "m.json").string() + "'");
  INFO(h100.output);
  CHECK(h100.exit_code == 0);
  CHECK_THAT(h100.output, Catch::Contains("roofline budget on H100") && Catch::Contains("TF32"));
}
