// JSON from outside (recipes, checkpoint headers, results files, the twin's reply): every
// reader refuses, with a one-line error, what would otherwise throw past it or exhaust
// the stack later (found by fuzz/ — the inputs are in fuzz/regressions/).
#include <catch2/catch.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "harness/results/results.h"
#include "kernels/cpu/cpu_ops.h"
#include "models/model_builder.h"
#include "models/plan_check.h"
#include "models/recipe.h"
#include "nn/json_input.h"
#include "nn/sequential.h"
#include "tests/support/temp_dir.h"

using namespace noeira;
using Catch::Matchers::Contains;
using noeira::test::TempDir;

namespace {

std::string nested_arrays(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("parse_json_input: a value, or why not, never an exception", "[json]") {
  Result<nlohmann::json> ok = parse_json_input(R"({"a": [1, 2.5, "x", null]})");
  REQUIRE(ok);
  CHECK(ok->at("a").size() == 4);

  Result<nlohmann::json> bad = parse_json_input(R"({"a": )");
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Contains("not valid JSON at byte"));

  // nlohmann throws out_of_range, not parse_error, for a number beyond a double.
  Result<nlohmann::json> huge = parse_json_input("4e333");
  REQUIRE_FALSE(huge);
  CHECK_THAT(huge.error().message, Contains("number overflow"));

  CHECK(parse_json_input(nested_arrays(kMaxJsonDepth)));
  Result<nlohmann::json> deep = parse_json_input(nested_arrays(kMaxJsonDepth + 1));
  REQUIRE_FALSE(deep);
  CHECK_THAT(deep.error().message, Contains("nested deeper than 64 levels"));
  // Far deeper than any stack would take to dump or compare: refused all the same.
  CHECK_FALSE(parse_json_input(nested_arrays(200000)));
}

TEST_CASE("read_results: a number out of range or deep nesting is an error naming the file",
          "[json][results]") {
  TempDir dir;
  write_text(dir / "overflow.json", "4e333");
  Result<nlohmann::json> r = read_results(dir / "overflow.json");
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Contains("overflow.json") && Contains("number overflow"));

  write_text(dir / "deep.json", "{\"schema_version\": 1, \"x\": " + nested_arrays(100000) + "}");
  r = read_results(dir / "deep.json");
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Contains("deep.json") && Contains("nested deeper"));
}

TEST_CASE("load_recipe: integer fields must be integers that fit; shapes are checked",
          "[json][recipe]") {
  TempDir dir;
  const std::string head = R"({"name": "t", "dataset": {"name": "mnist"}, "input_shape": )";
  auto recipe = [&](const std::string& shape, const std::string& rest) {
    write_text(dir / "r.json", head + shape + R"(, "batch": 8, "epochs": 1,
      "optimizer": {"type": "adam", "lr": 0.001}, "layers": [{"type": "linear", "out": 10}])" +
                                   rest + "}");
    return load_recipe(dir / "r.json");
  };
  REQUIRE(recipe("[784]", ""));

  // A float beyond int64 (the regression input): nlohmann's get<int>() would be UB.
  Result<Recipe> r = recipe("[784]", R"(, "quick": {"epochs": 88888888888888888888})");
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Contains("epochs must be an integer"));
  r = recipe("[784]", R"(, "num_classes": 2.5)");
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Contains("num_classes must be an integer"));
  r = recipe("[784]", R"(, "parity": {"steps": 1e300})");
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Contains("steps must be an integer"));

  // input_shape: a Shape holds 6 dimensions and a batch dimension goes in front.
  r = recipe("[1, 1, 1, 1, 1, 1, 1]", "");
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Contains("input_shape must be a list of 1 to 5 positive sizes"));
  CHECK_FALSE(recipe("[0]", ""));
  CHECK_FALSE(recipe("[]", ""));
  CHECK_FALSE(recipe("[1.5e30]", ""));

  r = recipe("[784]", ", \"notes\": " + nested_arrays(100000));
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Contains("r.json") && Contains("nested deeper"));
}

TEST_CASE("recipes: sizes above 2^24 and depths above 1024 are refused, naming the field",
          "[json][recipe]") {
  // Past these, products of a few sizes wrap 64 bits while planning and oneDNN divided by
  // zero on a 2^40-pixel input (found by fuzz/recipe once it planned the models).
  TempDir dir;
  // A shipped recipe with one field of its JSON replaced, loaded and built.
  auto edited = [&](const std::string& model, const std::string& pointer,
                    const nlohmann::json& value) -> std::string {
    Result<Recipe> base = load_recipe_for_model(model);
    REQUIRE(base);
    nlohmann::json j = base->json;
    j[nlohmann::json::json_pointer(pointer)] = value;
    write_text(dir / "r.json", j.dump());
    Result<Recipe> r = load_recipe(dir / "r.json");
    if (!r) return r.error().message;
    auto built = r->family == "gpt" ? build_gpt(*r, 65) : build_model(*r);
    REQUIRE_FALSE(built);
    return built.error().message;
  };
  const std::string most = "the most this tool takes is 16777216";
  CHECK_THAT(edited("mlp", "/batch", int64_t{1} << 30), Contains("batch is 1073741824") &&
                                                          Contains(most));
  CHECK_THAT(edited("mlp", "/input_shape/0", int64_t{1} << 40),
             Contains("an input_shape size is 1099511627776") && Contains(most));
  CHECK_THAT(edited("mlp", "/layers/0/out", int64_t{1} << 40),
             Contains("'out' is 1099511627776") && Contains(most));
  CHECK_THAT(edited("conv2d-mnist", "/layers/0/pad", int64_t{1} << 25),
             Contains("'pad' is 33554432") && Contains(most));
  CHECK_THAT(edited("gpt-tiny", "/model/context", int64_t{1} << 40),
             Contains("model.context is 1099511627776") && Contains(most));
  CHECK_THAT(edited("gpt-tiny", "/model/layers", 5000),
             Contains("model.layers is 5000") && Contains("the most this tool takes is 1024"));
  CHECK_THAT(edited("vit-tiny", "/model/width", int64_t{1} << 40),
             Contains("model.width is 1099511627776") && Contains(most));
  CHECK_THAT(edited("resnet20", "/layers/3/blocks", 5000),
             Contains("'blocks' is 5000") && Contains("1024"));
}

TEST_CASE("recipes at the size limits plan, or are refused by a module or the backend",
          "[json][recipe]") {
  // The fuzz regressions (fuzz/regressions/recipe): before the limits, planning them
  // overflowed int64 (UB), made oneDNN divide by zero, or planned 262,144 attention blocks
  // until memory ran out.
  const std::filesystem::path dir =
      std::filesystem::path(NOEIRA_SOURCE_DIR) / "fuzz" / "regressions" / "recipe";
  CpuOps ops(1);
  auto planned = [&](const std::string& file) -> std::string {
    Result<Recipe> r = load_recipe(dir / file);
    if (!r) return r.error().message;
    auto model = r->family == "gpt" ? build_gpt(*r, 65) : build_model(*r);
    if (!model) return model.error().message;
    Result<MemoryPlan> plan = plan_recipe_model(**model, *r, ops);
    if (!plan) return plan.error().message;
    return plan->overflowed() ? "overflowed: " + plan->overflow() : "planned";
  };
  CHECK_THAT(planned("batch-2e61-gpt.json"), Contains("batch is 2305843009213693952"));
  CHECK_THAT(planned("input-2e40-pixels-conv.json"), Contains("input_shape size"));
  CHECK_THAT(planned("vit-width-2e40.json"), Contains("model.width is 1099511627776"));
  CHECK_THAT(planned("context-2e24-cpu-attention.json"),
             Contains("16777216 positions is longer than this backend's attention plans "
                      "(65536)"));
  CHECK_THAT(planned("input-2e24-conv-slab.json"),
             Contains("the CPU convolution (oneDNN) takes at most 2^31 - 1"));
  // At the limits but plannable: a plan (terabytes, refused later by the memory check).
  CHECK(planned("batch-2e24-vit.json") == "planned");
}

TEST_CASE("recipes: a relu right after a batchnorm2d runs inside it; others stay layers",
          "[json][recipe]") {
  // The top-level layers' names and kinds of a model built from resnet20's recipe with
  // `layers` replaced (nothing when layers is null: the recipe as shipped).
  TempDir dir;
  auto children = [&](const nlohmann::json& layers) {
    Result<Recipe> base = load_recipe_for_model("resnet20");
    REQUIRE(base);
    nlohmann::json j = base->json;
    if (!layers.is_null()) j["layers"] = layers;
    write_text(dir / "r.json", j.dump());
    Result<Recipe> r = load_recipe(dir / "r.json");
    REQUIRE(r);
    auto built = build_model(*r);
    REQUIRE(built);
    const auto* seq = dynamic_cast<const Sequential*>(built->get());
    REQUIRE(seq != nullptr);
    std::vector<std::string> out;
    for (const auto& [name, m] : seq->children()) out.push_back(name + ":" + m->kind());
    return out;
  };
  // The shipped stem: conv, then BatchNorm with its ReLU; relu1's name is used up, as the
  // twin's layer numbering expects.
  const std::vector<std::string> stem = children(nullptr);
  REQUIRE(stem.size() >= 3);
  CHECK(stem[1] == "bn1:BatchNorm2d+ReLU");
  CHECK(stem[2].rfind("layer1:", 0) == 0);
  const nlohmann::json conv = {{"type", "conv2d"}, {"out", 16}, {"kernel", 3}, {"pad", 1}};
  const nlohmann::json bn = {{"type", "batchnorm2d"}}, relu = {{"type", "relu"}};
  const nlohmann::json head = {{{"type", "global_avgpool"}}, {{"type", "flatten"}},
                               {{"type", "linear"}, {"out", 10}}};
  auto with_head = [&](nlohmann::json layers) {
    for (const auto& l : head) layers.push_back(l);
    return layers;
  };
  // A second relu stays a layer; so does one after a dropout.
  const std::vector<std::string> twice = children(with_head({conv, bn, relu, relu}));
  REQUIRE(twice.size() == 6);  // conv1, bn1, relu2, gap1, flatten1, fc1
  CHECK(twice[1] == "bn1:BatchNorm2d+ReLU");
  CHECK(twice[2] == "relu2:ReLU");
  const std::vector<std::string> dropped =
      children(with_head({conv, bn, {{"type", "dropout"}, {"p", 0.1}}, relu}));
  REQUIRE(dropped.size() == 7);
  CHECK(dropped[1] == "bn1:BatchNorm2d");
  CHECK(dropped[3] == "relu1:ReLU");
}
