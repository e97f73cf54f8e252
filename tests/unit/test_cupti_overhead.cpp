// CUPTI's own overhead in the results: wall ms/step of the traced (device-timer) pass
// against the untraced run, per run and pooled per variant; validated when present, and
// files written before the field existed stay readable.
#include <catch2/catch.hpp>

#include "harness/results/results.h"
#include "harness/results/summary.h"
#include "harness/run/run_table.h"

using namespace noeira;
using nlohmann::json;

namespace {

RunRecord run_with(const std::vector<double>& wall, const Nullable<CuptiOverhead>& overhead) {
  RunRecord run;
  run.seed = 0;
  run.timers.wall = timer_record(wall);
  run.timers.device = timer_record({0.5, 0.5});
  run.test_top1 = 90.0;
  run.test_loss = 0.3;
  run.train_loss = 0.4;
  run.losses = {0.5, 0.4};
  run.steps = 2;
  run.cupti_overhead = overhead;
  return run;
}

json as_json(const Nullable<CuptiOverhead>& o) { return o ? json(*o) : json(nullptr); }

// A minimal valid results file holding one GPU variant with these runs.
json results_with(const std::vector<RunRecord>& runs) {
  VariantRecord v = new_variant("eager", "noeira", "fp32", "gpu");
  v.runs = runs;
  v.summary = summarize_runs(runs);
  return {{"schema_version", 1},
          {"tool", "noeira-bench"},
          {"tool_version", "0.1.0"},
          {"created_utc", "2026-11-30T10:00:00Z"},
          {"context",
           {{"command_line", "noeira-bench run"},
            {"git_sha", ""},
            {"git_dirty", false},
            {"host",
             {{"cpu_model", "cpu"}, {"cores", 2}, {"memory_bytes", 1}, {"os", "Linux"},
              {"hostname", "h"}}},
            {"build",
             {{"compiler", "g++"}, {"build_type", "release"}, {"blas", "OpenBLAS"},
              {"cuda_built", true}}},
            {"device", {{"available", true}, {"name", "GPU"}}},
            {"twin",
             {{"python", "python3"}, {"torch_version", nullptr}, {"available", false},
              {"reason", "none"}}}}},
          {"config",
           {{"target", "gpu"},
            {"dtype", "fp32"},
            {"seeds", json::array({0})},
            {"steps", 2},
            {"warmup", 0},
            {"threads", 0},
            {"quick", true},
            {"stopping", {{"min_samples", 1}, {"max_rel_noise", 0.02}, {"max_seconds", 1.0}}}}},
          {"benchmarks", json::array({json{{"model", "mlp"},
                                          {"dataset", "mnist"},
                                          {"recipe", json::object()},
                                          {"recipe_hash", "0123456789abcdef"},
                                          {"variants", json::array({v})},
                                          {"parity", nullptr},
                                          {"seed_agreement", nullptr}}})}};
}

}  // namespace

TEST_CASE("cupti_overhead compares the traced pass's wall time with the untraced one",
          "[results]") {
  const json o = as_json(cupti_overhead({11.0, 12.0, 13.0}, {10.0, 9.0, 11.0}));
  REQUIRE(o.is_object());
  CHECK(o["wall_on_ms"] == 12.0);
  CHECK(o["wall_off_ms"] == 10.0);
  CHECK(o["ratio"].get<double>() == Approx(1.2));
  CHECK(o["samples_on_ms"] == json({11.0, 12.0, 13.0}));
  CHECK(as_json(cupti_overhead({}, {1.0})).is_null());
  CHECK(as_json(cupti_overhead({1.0}, {})).is_null());
  CHECK(as_json(cupti_overhead({1.0}, {0.0}))["ratio"].is_null());
}

TEST_CASE("A variant's summary pools the CUPTI overhead of the runs that have one",
          "[results]") {
  const RunRecord traced = run_with({10.0, 10.0}, cupti_overhead({12.0, 12.0}, {10.0, 10.0}));
  const RunRecord untraced = run_with({20.0, 20.0}, std::nullopt);  // CUPTI unavailable for this one
  const json s = summarize_runs({traced, untraced});
  REQUIRE(s["cupti_overhead"].is_object());
  CHECK(s["cupti_overhead"]["wall_on_ms"] == 12.0);
  CHECK(s["cupti_overhead"]["wall_off_ms"] == 10.0);  // the untraced run is not pooled
  CHECK_FALSE(s["cupti_overhead"].contains("samples_on_ms"));
  CHECK(json(summarize_runs({untraced}))["cupti_overhead"].is_null());
}

TEST_CASE("cupti_overhead is validated when present and optional for older files",
          "[results]") {
  const RunRecord traced = run_with({10.0, 10.0}, cupti_overhead({12.0, 12.0}, {10.0, 10.0}));
  json r = results_with({traced});
  const Status ok = validate_results(r);
  INFO((ok.ok() ? "" : ok.error().message));
  CHECK(ok.ok());

  json old = r;  // written before the field existed
  auto& v = old["benchmarks"][0]["variants"][0];
  v["runs"][0].erase("cupti_overhead");
  v["summary"].erase("cupti_overhead");
  CHECK(validate_results(old).ok());

  json bad = r;
  bad["benchmarks"][0]["variants"][0]["runs"][0]["cupti_overhead"]["ratio"] = "fast";
  Status s = validate_results(bad);
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.error().message,
             Catch::Contains("benchmarks[0].variants[0].runs[0].cupti_overhead.ratio"));
  bad = r;
  bad["benchmarks"][0]["variants"][0]["runs"][0]["cupti_overhead"].erase("samples_on_ms");
  CHECK_FALSE(validate_results(bad).ok());
  bad = r;
  bad["benchmarks"][0]["variants"][0]["summary"]["cupti_overhead"] = 3;
  CHECK_FALSE(validate_results(bad).ok());
}

TEST_CASE("The run table states CUPTI's overhead next to the device timer", "[results]") {
  const RunRecord traced = run_with({10.0, 10.0}, cupti_overhead({12.0, 12.0}, {10.0, 10.0}));
  const json r = results_with({traced});
  const std::string table = render_run_table(r["benchmarks"][0].get<BenchmarkRecord>(), "gpu");
  INFO(table);
  CHECK_THAT(table, Catch::Contains("CUPTI overhead") && Catch::Contains("eager") &&
                        Catch::Contains("+20.0%"));
  const json none = results_with({run_with({10.0, 10.0}, std::nullopt)});
  CHECK_THAT(render_run_table(none["benchmarks"][0].get<BenchmarkRecord>(), "gpu"),
             !Catch::Contains("CUPTI overhead"));
}
