// JSON from outside (recipes, checkpoint headers, results files, the twin's reply): every
// reader refuses, with a one-line error, what would otherwise throw past it or exhaust
// the stack later (found by fuzz/ — the inputs are in fuzz/regressions/).
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include "harness/results.h"
#include "models/recipe.h"
#include "nn/json_input.h"
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
