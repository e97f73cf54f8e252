// `noeira-bench micro`: Google Benchmark runs in the binary, takes its own flags, and
// rejects flags nobody knows. Kept short (tiny min_time, one kernel per run).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/support/run_binary.h"

using namespace noeira::test;

TEST_CASE("micro runs the filtered kernel benchmarks", "[micro]") {
  const CommandResult r = run_bench("micro --threads 1 --benchmark_filter=softmax "
                                    "--benchmark_min_time=0.01");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("softmax_xent/mlp/B=128/C=10"));
  CHECK_THAT(r.output, !Catch::Contains("gemm/"));
}

TEST_CASE("micro --benchmark_format=json prints JSON with a context block", "[micro]") {
  const CommandResult r = run_bench("micro --benchmark_format=json --benchmark_filter=adam "
                                    "--benchmark_min_time=0.01");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // The JSON document is the whole of stdout; stderr (merged here) should be empty, but
  // parse from the first '{' to the last '}' so a stray warning does not fail the test.
  const size_t begin = r.output.find('{'), end = r.output.rfind('}');
  REQUIRE(begin != std::string::npos);
  REQUIRE(end != std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(r.output.substr(begin, end - begin + 1));
  REQUIRE(j.contains("context"));
  CHECK(j["context"].contains("noeira_backend"));
  REQUIRE(j.contains("benchmarks"));
  REQUIRE(j["benchmarks"].size() >= 1);
  bool mlp = false;
  for (const auto& b : j["benchmarks"]) mlp = mlp || b["name"].get<std::string>().rfind("adam/mlp/n=", 0) == 0;
  CHECK(mlp);
}

TEST_CASE("micro lists GEMMs with the recipe shapes", "[micro]") {
  const CommandResult r = run_bench("micro --benchmark_list_tests --benchmark_filter=gemm");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("gemm/mlp/fc1/forward_NT/M=128/N=512/K=784") &&
                           Catch::Contains("gemm/mlp/fc1/weight_grad_TN/M=512/N=784/K=128") &&
                           Catch::Contains("gemm/mlp/fc2/input_grad_NN/M=128/N=512/K=512"));
}

TEST_CASE("micro rejects unknown benchmark flags with exit 2", "[micro]") {
  const CommandResult r = run_bench("micro --benchmark_nonsense");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("--benchmark_nonsense"));
}

TEST_CASE("micro --help says where the other flags go", "[micro]") {
  const CommandResult r = run_bench("micro --help");
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("Google Benchmark") &&
                           Catch::Contains("--benchmark_filter") && Catch::Contains("--threads"));
}
