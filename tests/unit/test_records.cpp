// The harness's types: results records read a file and write it back key for key
// (harness/results/records.h), our variants come from axes with their skip reasons
// (harness/run/variant.h), and a family says what the harness asks of it (models/family.h).
#include <catch2/catch.hpp>

#include <filesystem>

#include "harness/results/results.h"
#include "harness/run/flops.h"
#include "harness/run/variant.h"
#include "models/family.h"

using namespace noeira;
using Catch::Matchers::Contains;

namespace {

const std::filesystem::path kSource = NOEIRA_SOURCE_DIR;

FamilyTraits traits_of(const std::string& family) {
  Recipe r;
  r.family = family;
  return family_traits(r);
}

std::vector<std::string> names(const std::vector<Variant>& variants) {
  std::vector<std::string> out;
  for (const Variant& v : variants) out.push_back(v.name());
  return out;
}

}  // namespace

TEST_CASE("records: a results file read as records writes back key for key", "[results]") {
  for (const auto& path : {kSource / "fuzz" / "inputs" / "results-mlp.json",
                           kSource / "results" / "intel-fam6-m207-2core" / "gpt-tiny-bf16.json"}) {
    INFO(path);
    const Result<nlohmann::json> file = read_results(path);
    REQUIRE(file.ok());
    const Result<ResultsRecord> record = read_results_record(path);
    REQUIRE(record.ok());
    CHECK(nlohmann::json(record.value()) == file.value());
    CHECK(validate_results(nlohmann::json(record.value())).ok());
  }
}

TEST_CASE("records: what readers ask of a variant", "[results]") {
  VariantRecord v;
  v.name = "eager";
  v.runs.resize(2);
  v.runs[0].test_top1 = 90.0;
  v.runs[1].test_loss = 0.5;
  v.runs[0].timers.wall = TimerRecord{{1.0, 2.0}, {}, std::nullopt};
  v.runs[1].timers.wall = TimerRecord{{3.0}, {}, std::nullopt};
  CHECK(v.ran());
  CHECK(v.pooled_samples(TimerKind::kWall) == std::vector<double>{1.0, 2.0, 3.0});
  CHECK(v.pooled_samples(TimerKind::kDevice).empty());
  CHECK(v.seed_scores(SeedScore::kTestTop1) == std::vector<double>{90.0});
  CHECK(v.seed_scores(SeedScore::kTestLoss) == std::vector<double>{0.5});
  CHECK_FALSE(v.best_timer());
  v.summary.timers.event = TimerStats{};
  CHECK(v.best_timer() == TimerKind::kEvent);
  v.pending_seeds = {{7}};
  v.runs.clear();
  CHECK_FALSE(v.ran());  // a stopped run's variant that never started
  v.pending_seeds.reset();
  v.error = "boom";
  CHECK_FALSE(v.ran());
  CHECK(parse_timer("device") == TimerKind::kDevice);
  CHECK_FALSE(parse_timer("cupti"));
}

TEST_CASE("variants: the axes' product in table order", "[variants]") {
  CHECK(names(axis_product(default_axes(DType::kF32, traits_of("mlp")))) ==
        std::vector<std::string>{"eager", "graph"});
  CHECK(names(axis_product(default_axes(DType::kBF16, traits_of("mlp")))) ==
        std::vector<std::string>{"eager", "graph", "bf16", "bf16+graph"});
  // The host-built batch is measured at one point: fp32, eager.
  CHECK(names(axis_product(default_axes(DType::kBF16, traits_of("gpt")))) ==
        std::vector<std::string>{"eager", "graph", "bf16", "bf16+graph", "host-batch"});
  const Variant bf16_graph{DType::kBF16, true, BatchSource::kDevice};
  CHECK(bf16_graph.name() == "bf16+graph");
  CHECK(bf16_graph.dtype_name() == "bf16");
}

TEST_CASE("variants: a point that cannot run says why", "[variants]") {
  const MatrixPlace cpu{false, traits_of("mlp"), "mlp"};
  Result<std::vector<PlannedVariant>> planned = plan_variants({}, DType::kF32, cpu);
  REQUIRE(planned.ok());
  REQUIRE(planned->size() == 2);
  CHECK_FALSE((*planned)[0].skip);
  REQUIRE((*planned)[1].skip);
  CHECK((*planned)[1].skip->kind == Skip::Kind::kTarget);
  CHECK((*planned)[1].skip->reason == "CUDA graphs need the gpu target");

  planned = plan_variants({"graph", "bf16"}, DType::kF32, {true, traits_of("mlp"), "mlp"});
  REQUIRE(planned.ok());
  CHECK_FALSE((*planned)[0].skip);
  CHECK((*planned)[1].variant.dtype == DType::kBF16);

  // --variants: the same errors as before the variants were typed.
  planned = plan_variants({"eager", "host-batch"}, DType::kF32, cpu);
  REQUIRE_FALSE(planned.ok());
  CHECK(planned.error().message ==
        "--variants: host-batch is a gpt-family variant (the batch built on the host); model "
        "mlp gathers its batches on the device");
  planned = plan_variants({"graph+bf16"}, DType::kF32, cpu);
  REQUIRE_FALSE(planned.ok());
  CHECK(planned.error().message ==
        "--variants: unknown variant 'graph+bf16'; known: eager, graph, bf16, bf16+graph, "
        "host-batch (gpt family)");
}

TEST_CASE("family traits: what the harness asks of a family", "[variants]") {
  const FamilyTraits gpt = traits_of("gpt");
  CHECK(gpt.language_model);
  CHECK(gpt.host_batch);
  CHECK(gpt.data_parallel);
  CHECK(gpt.score == FamilyScore::kValidationLoss);
  REQUIRE(gpt.analytic_work);
  for (const char* family : {"mlp", "convnet", "resnet", "vit", "unknown"}) {
    INFO(family);
    const FamilyTraits t = traits_of(family);
    CHECK_FALSE(t.language_model);
    CHECK_FALSE(t.host_batch);
    CHECK(t.score == FamilyScore::kTestTop1);
    CHECK_FALSE(t.analytic_work);
  }
  // gpt-tiny on TinyShakespeare's 65 characters: the README's 804,096 parameters, and
  // 6N + 12LHQT FLOPs per token over batch x context tokens.
  Result<Recipe> recipe = load_recipe_for_model("gpt-tiny");
  REQUIRE(recipe.ok());
  DataSplit data;
  data.corpus.vocab.assign(65, 'a');
  const StepWork w = gpt.analytic_work(*recipe, data);
  CHECK(w.params == 804096);
  CHECK(w.tokens_per_step == recipe->batch * recipe->gpt.context);
  CHECK(w.flops_per_step == Approx(w.flops_per_token * static_cast<double>(w.tokens_per_step)));
}

TEST_CASE("peak FLOP/s: an fp32 run with TF32 on is measured against the TF32 peak",
          "[results]") {
  // An H200's gpt fp32 run read 70.5 TFLOP/s: 105% of the CUDA cores' 66.9, 14% of TF32's.
  CHECK(*peak_flops("NVIDIA H200", "bf16") == Approx(989.4e12));
  CHECK(*peak_flops("NVIDIA H200", "tf32") == Approx(494.7e12));
  CHECK(*peak_flops("NVIDIA H200", "fp32") == Approx(66.9e12));
  CHECK_FALSE(peak_flops("Some GPU", "tf32"));

  // The basis travels with the file; a file from before it meant the CUDA cores.
  BenchmarkRecord b;
  b.model = "gpt";
  b.peak_flops = PeakFlops{494.7e12, 989.4e12, "NVIDIA H200", "tf32"};
  nlohmann::json j = b;
  CHECK(j["peak_flops"]["fp32_basis"] == "tf32");
  CHECK(j.get<BenchmarkRecord>().peak_flops->fp32_basis == "tf32");
  j["peak_flops"].erase("fp32_basis");
  CHECK(j.get<BenchmarkRecord>().peak_flops->fp32_basis == "fp32");
}
