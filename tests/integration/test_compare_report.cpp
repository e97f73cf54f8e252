// The regression gate (`compare`) and the reports (`report`) on results files built
// here: deterministic samples around a chosen median with a chosen relative noise.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "harness/gate/compare_gate.h"
#include "harness/report/number_format.h"
#include "harness/results/results.h"
#include "harness/run/stats.h"
#include "tests/support/chromium_check.h"
#include "tests/support/mnist_fixture.h"
#include "tests/support/run_binary.h"

using namespace noeira;
using namespace noeira::test;
using nlohmann::json;

namespace {

struct VariantSpec {
  std::string name = "eager";
  double median_ms = 10.0;
  double rel_noise = 0.01;  // coefficient of variation of the samples
  int seeds = 3;
  int samples_per_seed = 10;       // even: samples come in pairs mirrored around the median
  double top1 = 97.5;              // mean over seeds, percent
  double top1_spread = 0.05;       // std over seeds (seeds at mean - s, mean, mean + s for 3)
  std::string unavailable_reason;  // non-empty: available = false
  std::string error;               // non-empty: the run failed
  // > 0: AR(1) noise, each step correlated with the one before by this coefficient (a
  // slow stretch of the machine slows several steps), instead of mirrored pairs.
  double correlation = 0.0;
  double seed_spread = 0.0;  // relative shift of each seed's level (seeds at -s, 0, +s for 3)
};

struct FileSpec {
  std::vector<VariantSpec> variants = {VariantSpec{}};
  std::string target = "cpu";
  std::string device = "Test CPU 3000";  // cpu_model for cpu, device name for gpu
  uint32_t stream = 1;                   // which pseudo-random samples
  bool parity = false;
  int threads = 4;                       // config.threads
};

// A small deterministic generator (an LCG), uniform in [-1, 1).
struct Uniform {
  uint64_t state;
  double next() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
  }
};

json timer_of(const std::vector<double>& samples, bool with_samples) {
  const SampleSummary s = summarize(samples);
  json t = {{"median_ms", s.median}, {"q1_ms", s.q1}, {"q3_ms", s.q3}, {"cv", s.cv}, {"n", s.n}};
  if (with_samples) t["samples_ms"] = samples;
  return t;
}

json variant_json(const VariantSpec& v, const std::string& target, Uniform& rng) {
  const bool twin = v.name.rfind("twin:", 0) == 0;
  json out = {{"name", v.name},
              {"impl", twin ? "torch" : "noeira"},
              {"dtype", v.name.find("bf16") != std::string::npos ? "bf16" : "fp32"},
              {"target", target},
              {"available", v.unavailable_reason.empty()},
              {"unavailable_reason",
               v.unavailable_reason.empty() ? json(nullptr) : json(v.unavailable_reason)},
              {"error", v.error.empty() ? json(nullptr) : json(v.error)},
              {"runs", json::array()}};
  const json no_timers = {{"wall", nullptr}, {"device", nullptr}, {"event", nullptr}};
  if (!v.unavailable_reason.empty() || !v.error.empty()) {
    out["summary"] = {{"timers", no_timers}, {"test_top1", nullptr}, {"test_loss", nullptr}};
    return out;
  }
  // Uniform noise of half-width a has std a / sqrt(3): a = sqrt(3) * cv * median.
  const double half_width = std::sqrt(3.0) * v.rel_noise * v.median_ms;
  std::vector<double> pooled, top1s;
  for (int s = 0; s < v.seeds; ++s) {
    std::vector<double> samples;
    const double level = v.median_ms * (1.0 + v.seed_spread * (s - (v.seeds - 1) / 2.0));
    if (v.correlation > 0.0) {
      const double phi = v.correlation;
      double e = 0.0;
      for (int i = 0; i < v.samples_per_seed; ++i) {
        e = phi * e + std::sqrt(1.0 - phi * phi) * half_width * rng.next();
        samples.push_back(level + e);
      }
    }
    for (int i = 0; v.correlation <= 0.0 && i < v.samples_per_seed / 2; ++i) {
      const double d = half_width * rng.next();
      samples.push_back(level + d);
      samples.push_back(level - d);  // mirrored: the median is exactly the level
    }
    pooled.insert(pooled.end(), samples.begin(), samples.end());
    const double top1 = v.top1 + v.top1_spread * (s - (v.seeds - 1) / 2.0);
    top1s.push_back(top1);
    std::vector<double> losses;
    for (int k = 0; k < 20; ++k) losses.push_back(2.3 * std::exp(-0.1 * k) + (twin ? 0.01 : 0.0));
    out["runs"].push_back(
        {{"seed", s},
         {"timers", {{"wall", timer_of(samples, true)}, {"device", nullptr}, {"event", nullptr}}},
         {"test_top1", top1},
         {"test_loss", 0.08},
         {"train_loss", losses.back()},
         {"losses", losses},
         {"steps", 20}});
  }
  json top1 = {{"mean", mean(top1s)},
               {"std", sample_std(top1s)},
               {"n", top1s.size()},
               {"olympic_mean", nullptr}};
  out["summary"] = {
      {"timers", {{"wall", timer_of(pooled, false)}, {"device", nullptr}, {"event", nullptr}}},
      {"test_top1", top1},
      {"test_loss", {{"mean", 0.08}, {"std", 0.0}, {"n", v.seeds}, {"olympic_mean", nullptr}}}};
  return out;
}

json make_results(const FileSpec& f) {
  Uniform rng{f.stream * 7919ULL + 17};
  const bool gpu = f.target == "gpu";
  json device = {{"available", gpu}, {"reason", gpu ? json(nullptr) : json("built without CUDA")}};
  if (gpu) device["name"] = f.device;
  json results = {
      {"schema_version", 1},
      {"tool", "noeira-bench"},
      {"tool_version", "0.1.0"},
      {"created_utc", "2026-11-30T10:00:00Z"},
      {"context",
       {{"command_line", "noeira-bench run --model mlp"},
        {"git_sha", "0123456789abcdef0123456789abcdef01234567"},
        {"git_dirty", false},
        {"host",
         {{"cpu_model", gpu ? std::string("Host CPU") : f.device},
          {"cores", 16},
          {"memory_bytes", 137438953472LL},
          {"os", "Linux 6.1 x86_64"},
          {"hostname", "bench-1"}}},
        {"build",
         {{"compiler", "g++ 12.2"},
          {"build_type", "release"},
          {"blas", "OpenBLAS"},
          {"cuda_built", gpu}}},
        {"device", device},
        {"twin",
         {{"python", "python3"},
          {"torch_version", "2.5.1"},
          {"available", true},
          {"reason", nullptr}}}}},
      {"config",
       {{"target", f.target},
        {"dtype", "fp32"},
        {"seeds", {0, 1, 2}},
        {"steps", 20},
        {"warmup", 5},
        {"threads", f.threads},
        {"quick", true},
        {"stopping", {{"min_samples", 10}, {"max_rel_noise", 0.02}, {"max_seconds", 30.0}}}}},
      {"benchmarks", json::array()}};
  json bench = {{"model", "mlp"},
                {"dataset", "mnist"},
                {"recipe", {{"name", "mlp"}, {"batch", 128}}},
                {"recipe_hash", "0123456789abcdef"},
                {"variants", json::array()},
                {"parity", nullptr},
                {"seed_agreement", nullptr}};
  for (const VariantSpec& v : f.variants)
    bench["variants"].push_back(variant_json(v, f.target, rng));
  if (f.parity)
    bench["parity"] = {{"steps", 20},    {"max_rel_dev", 3.2e-6}, {"bound", 1e-4},
                       {"passed", true}, {"ours", {2.30, 2.10}},  {"twin", {2.30, 2.10}}};
  results["benchmarks"].push_back(bench);
  return results;
}

std::string write(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::filesystem::path p = dir / name;
  std::ofstream(p) << text;
  return p.string();
}

std::string write(const TempDir& dir, const std::string& name, const json& results) {
  return write(dir, name, results.dump(1));
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

VariantSpec named(const std::string& name, double median_ms = 10.0, double top1 = 97.5) {
  VariantSpec v;
  v.name = name;
  v.median_ms = median_ms;
  v.top1 = top1;
  return v;
}

VariantSpec unavailable(const std::string& name, const std::string& reason) {
  VariantSpec v = named(name);
  v.unavailable_reason = reason;
  return v;
}

VariantSpec failed(const std::string& name, const std::string& error) {
  VariantSpec v = named(name);
  v.error = error;
  return v;
}

FileSpec one_variant(double median_ms, double rel_noise, uint32_t stream) {
  FileSpec f;
  f.variants[0].median_ms = median_ms;
  f.variants[0].rel_noise = rel_noise;
  f.stream = stream;
  return f;
}

CommandResult compare(const std::string& base, const std::string& next,
                      const std::string& extra = "") {
  return run_bench("compare '" + base + "' '" + next + "' " + extra);
}

}  // namespace

TEST_CASE("The constructed results files pass validation", "[compare]") {
  FileSpec f;
  f.variants.push_back(named("twin:eager"));
  f.variants.push_back(unavailable("twin:graphs", "no CUDA"));
  f.parity = true;
  const json r = make_results(f);
  const Status s = validate_results(r);
  INFO((s ? std::string("ok") : s.error().message));
  CHECK(s.ok());

  // A GPU context as kernels/cuda records it: versions are integers, extra keys allowed.
  FileSpec g;
  g.target = "gpu";
  json gpu = make_results(g);
  gpu["context"]["device"].update({{"sm", "90"},
                                   {"runtime", 12040},
                                   {"driver", 12040},
                                   {"cublaslt", 120401},
                                   {"cupti", 23},
                                   {"multiprocessors", 132}});
  CHECK(validate_results(gpu).ok());
}

TEST_CASE("Validation names the missing or mistyped field", "[compare]") {
  json r = make_results(FileSpec{});
  r["benchmarks"][0]["variants"][0].erase("runs");
  Status s = validate_results(r);
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.error().message, Catch::Contains("benchmarks[0].variants[0].runs: missing"));

  r = make_results(FileSpec{});
  r["context"]["host"]["cores"] = "sixteen";
  s = validate_results(r);
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.error().message, Catch::Contains("context.host.cores: must be an integer"));

  r = make_results(FileSpec{});
  r["config"]["target"] = "tpu";
  s = validate_results(r);
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.error().message, Catch::Contains("config.target: 'tpu' is not one of cpu, gpu"));

  CHECK_FALSE(validate_results(json::array()).ok());
  r.erase("schema_version");
  CHECK_THAT(validate_results(r).error().message, Catch::Contains("schema_version: missing"));
}

TEST_CASE("Schema 2 records the baseline probes; version 1 files are still read", "[compare][probe]") {
  json v1 = make_results(FileSpec{});  // the fixture writes version 1, as older files are
  CHECK(validate_results(v1).ok());
  json v2 = v1;
  v2["schema_version"] = 2;
  const Status no_probes = validate_results(v2);
  REQUIRE_FALSE(no_probes.ok());
  CHECK_THAT(no_probes.error().message, Catch::Contains("context.probes: missing"));
  v2["context"]["probes"] = {{"ours", {{"rows", {{{"threads", 1}, {"gemm_fp32_gflops", 150.0},
                                                 {"gemm_bf16_gflops", 380.0}, {"stream_gbs", 30.0}}}}}},
                             {"twin", {{"error", "timed out"}}}};
  CHECK(validate_results(v2).ok());
  v2["context"]["probes"]["ours"]["rows"][0].erase("stream_gbs");
  CHECK_THAT(validate_results(v2).error().message,
             Catch::Contains("context.probes.ours.rows[0].stream_gbs: missing"));
}

TEST_CASE("read_results and write_results name the file, and writes leave no partial file",
          "[compare]") {
  TempDir dir;
  const std::filesystem::path p = dir / "r.json";
  REQUIRE(write_results(p, make_results(FileSpec{})).ok());
  Result<json> back = read_results(p);
  REQUIRE(back.ok());
  CHECK(back->at("schema_version") == 1);

  json bad = make_results(FileSpec{});
  bad["schema_version"] = kResultsSchemaVersion + 1;
  const Status refused = write_results(dir / "bad.json", bad);
  CHECK_FALSE(refused.ok());
  CHECK_FALSE(std::filesystem::exists(dir / "bad.json"));
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    CHECK(e.path().filename() == "r.json");  // nothing half-written

  const Result<json> missing = read_results(dir / "nope.json");
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.error().message, Catch::Contains("nope.json"));
  write(dir, "trunc.json", std::string("{\"schema_version\": 1, \"tool\""));
  const Result<json> trunc = read_results(dir / "trunc.json");
  REQUIRE_FALSE(trunc.ok());
  CHECK_THAT(trunc.error().message,
             Catch::Contains("trunc.json") && Catch::Contains("not valid JSON"));
}

TEST_CASE("The timing verdict rules", "[compare]") {
  GateOptions o;  // 5 %: the band [0.95, 1.05]; the interval [lo, hi] of new / base
  CHECK(timing_verdict(4, 30, 1.4, 1.6, o) == Verdict::kAmbiguous);    // too few samples
  CHECK(timing_verdict(30, 30, 1.15, 1.25, o) == Verdict::kSlower);    // all above 1.05
  CHECK(timing_verdict(30, 30, 0.75, 0.85, o) == Verdict::kFaster);    // all below 0.95
  CHECK(timing_verdict(30, 30, 1.02, 1.04, o) == Verdict::kSame);      // real but small
  CHECK(timing_verdict(30, 30, 0.97, 1.03, o) == Verdict::kSame);      // contains 1, inside the band
  CHECK(timing_verdict(30, 30, 1.03, 1.10, o) == Verdict::kAmbiguous); // straddles 1.05
  CHECK(timing_verdict(30, 30, 0.80, 1.30, o) == Verdict::kAmbiguous); // noisy
  CHECK(timing_verdict(30, 30, 0.90, 0.97, o) == Verdict::kAmbiguous); // straddles 0.95
  CHECK(accuracy_tolerance_pp(0.05, 1, 0.05, 3) == 0.5);
  CHECK(accuracy_tolerance_pp(0.0, 3, 0.0, 3) == Approx(0.1));
  CHECK(accuracy_tolerance_pp(0.3, 3, 0.3, 3) == Approx(3 * std::sqrt(0.06)));
  CHECK(parse_slowdown_threshold("5%").value() == Approx(0.05));
  CHECK(parse_slowdown_threshold("0.05").value() == Approx(0.05));
  CHECK(parse_slowdown_threshold("12.5%").value() == Approx(0.125));
  CHECK_FALSE(parse_slowdown_threshold("5").ok());
  CHECK_FALSE(parse_slowdown_threshold("fast").ok());
  CHECK_FALSE(parse_slowdown_threshold("-1%").ok());
  CHECK_FALSE(parse_slowdown_threshold("100%").ok());
}

TEST_CASE("compare: equal runs are SAME and exit 0", "[compare]") {
  TempDir dir;
  const auto base = write(dir, "base.json", make_results(one_variant(10.0, 0.01, 1)));
  const auto next = write(dir, "new.json", make_results(one_variant(10.0, 0.01, 2)));
  const CommandResult r = compare(base, next);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("SAME") && Catch::Contains("PASS") &&
                           Catch::Contains("wall") && Catch::Contains("10.00"));
}

TEST_CASE("compare: a variant that ran in the base and is missing or failed in the new file "
          "fails the gate unless --allow-missing", "[compare]") {
  TempDir dir;
  FileSpec both;
  both.variants = {VariantSpec{}, VariantSpec{}};
  both.variants[1].name = "graph";
  const auto base = write(dir, "base.json", make_results(both));
  // graph missing from the new file
  const auto missing = write(dir, "missing.json", make_results(one_variant(10.0, 0.01, 2)));
  CommandResult r = compare(base, missing);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("MISSING") && Catch::Contains("graph") &&
                           Catch::Contains("missing from the new file") && Catch::Contains("FAIL"));
  r = compare(base, missing, "--allow-missing");
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("MISSING") && Catch::Contains("PASS"));
  // graph failed in the new file
  FileSpec failed = both;
  failed.stream = 2;
  failed.variants[1].error = "capture failed: out of memory";
  const auto broken = write(dir, "failed.json", make_results(failed));
  r = compare(base, broken);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("MISSING") && Catch::Contains("capture failed"));
  // a variant that did not run in the base either is not missing
  const auto again = write(dir, "again.json", make_results(failed));
  CHECK(compare(again, broken).exit_code == 0);
}

TEST_CASE("compare: two suite directories compare file by file; a file missing from the "
          "new suite fails unless --allow-missing", "[compare]") {
  TempDir dir;
  std::filesystem::create_directories(dir / "base");
  std::filesystem::create_directories(dir / "new");
  write(dir, "base/mlp-fp32.json", make_results(one_variant(10.0, 0.01, 1)));
  write(dir, "base/cnn-fp32.json", make_results(one_variant(20.0, 0.01, 1)));
  write(dir, "new/mlp-fp32.json", make_results(one_variant(10.0, 0.01, 2)));
  CommandResult r = compare((dir / "base").string(), (dir / "new").string());
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("MISSING cnn-fp32.json") && Catch::Contains("SAME") &&
                           Catch::Contains("1 missing: FAIL"));
  r = compare((dir / "base").string(), (dir / "new").string(), "--allow-missing");
  CHECK(r.exit_code == 0);
}

TEST_CASE("compare: 20% slower with tight noise is SLOWER and exits 1", "[compare]") {
  TempDir dir;
  const auto base = write(dir, "base.json", make_results(one_variant(10.0, 0.01, 1)));
  const auto next = write(dir, "new.json", make_results(one_variant(12.0, 0.01, 2)));
  const CommandResult r = compare(base, next);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output,
             Catch::Contains("SLOWER") && Catch::Contains("1.200") && Catch::Contains("FAIL"));
  // A threshold above the slowdown lets it pass; "0.25" and "25%" mean the same.
  CHECK(compare(base, next, "--max-slowdown 25%").exit_code == 0);
  CHECK(compare(base, next, "--max-slowdown 0.25").exit_code == 0);
  const CommandResult ambiguous = compare(base, next, "--max-slowdown 5");
  CHECK(ambiguous.exit_code == 2);
  CHECK_THAT(ambiguous.output, Catch::Contains("--max-slowdown"));
}

TEST_CASE("compare: same-vs-same runs with correlated steps and seed-to-seed spread are SAME",
          "[compare]") {
  TempDir dir;
  FileSpec a = one_variant(10.0, 0.03, 1), b = one_variant(10.0, 0.03, 2);
  for (FileSpec* f : {&a, &b}) {
    f->variants[0].correlation = 0.7;
    f->variants[0].samples_per_seed = 200;
    f->variants[0].seed_spread = 0.005;
  }
  const CommandResult r = compare(write(dir, "a.json", make_results(a)), write(dir, "b.json", make_results(b)));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("SAME") && Catch::Contains("PASS") && Catch::Contains("95% interval"));
  CHECK_THAT(r.output, !Catch::Contains("] noisy") && !Catch::Contains("noisy:"));
}

TEST_CASE("compare: a 1-thread run against a 2-thread base is SLOWER and exits 1", "[compare]") {
  // What halving the threads does to a step that parallelises well: 1.9x the time, the
  // same relative noise, correlated steps; made here, not measured.
  TempDir dir;
  FileSpec two = one_variant(10.0, 0.04, 1), one = one_variant(19.0, 0.04, 2);
  two.threads = 2;
  one.threads = 1;
  for (FileSpec* f : {&two, &one}) {
    f->variants[0].correlation = 0.7;
    f->variants[0].samples_per_seed = 100;
    f->variants[0].seed_spread = 0.01;
  }
  const CommandResult r = compare(write(dir, "two.json", make_results(two)), write(dir, "one.json", make_results(one)));
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("SLOWER") && Catch::Contains("1.9") && Catch::Contains("FAIL"));
  // The other way round: FASTER.
  const CommandResult back = compare((dir / "one.json").string(), (dir / "two.json").string());
  CHECK(back.exit_code == 0);
  CHECK_THAT(back.output, Catch::Contains("FASTER"));
}

TEST_CASE("compare: 20% faster is FASTER and exits 0", "[compare]") {
  TempDir dir;
  const auto base = write(dir, "base.json", make_results(one_variant(10.0, 0.01, 1)));
  const auto next = write(dir, "new.json", make_results(one_variant(8.0, 0.01, 2)));
  const CommandResult r = compare(base, next);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("FASTER"));
}

TEST_CASE("compare: very noisy samples are AMBIGUOUS and exit 0", "[compare]") {
  TempDir dir;
  const auto base = write(dir, "base.json", make_results(one_variant(10.0, 0.30, 1)));
  const auto next = write(dir, "new.json", make_results(one_variant(10.0, 0.30, 2)));
  const CommandResult r = compare(base, next);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("AMBIGUOUS") && Catch::Contains("noise") &&
                           Catch::Contains("noisy: "));

  FileSpec few = one_variant(10.0, 0.01, 3);
  few.variants[0].seeds = 1;
  few.variants[0].samples_per_seed = 4;
  const auto small = write(dir, "few.json", make_results(few));
  const CommandResult f = compare(base, small);
  INFO(f.output);
  CHECK(f.exit_code == 0);
  CHECK_THAT(f.output, Catch::Contains("AMBIGUOUS") && Catch::Contains("fewer than 5"));
}

TEST_CASE("compare: an accuracy drop beyond the tolerance exits 1", "[compare]") {
  TempDir dir;
  FileSpec worse = one_variant(10.0, 0.01, 2);
  worse.variants[0].top1 = 97.0;  // base 97.5 ± 0.05 over 3 seeds: tolerance 0.12 pp
  const auto base = write(dir, "base.json", make_results(one_variant(10.0, 0.01, 1)));
  const auto next = write(dir, "new.json", make_results(worse));
  const CommandResult r = compare(base, next);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("REGRESSION") && Catch::Contains("-0.50 pp"));

  FileSpec slightly = one_variant(10.0, 0.01, 2);
  slightly.variants[0].top1 = 97.45;  // within 0.12 pp
  CHECK(compare(base, write(dir, "ok.json", make_results(slightly))).exit_code == 0);
}

TEST_CASE("compare: unusable input exits 2 naming the file and the problem", "[compare]") {
  TempDir dir;
  const auto good = write(dir, "good.json", make_results(one_variant(10.0, 0.01, 1)));
  json v3 = make_results(one_variant(10.0, 0.01, 2));
  v3["schema_version"] = kResultsSchemaVersion + 1;
  const auto future = write(dir, "v3.json", v3);
  const auto garbage = write(dir, "garbage.json", std::string("{not json"));
  const std::string missing = (dir / "missing.json").string();

  struct Case {
    std::string next, says;
  };
  for (const Case& c : {Case{future, "schema_version 3"}, Case{garbage, "not valid JSON"},
                        Case{missing, "no such results file"}}) {
    const CommandResult r = compare(good, c.next);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains(c.says) &&
                             Catch::Contains(std::filesystem::path(c.next).filename().string()));
  }

  FileSpec other = one_variant(10.0, 0.01, 2);
  other.variants[0].name = "graph";
  const CommandResult none = compare(good, write(dir, "graph.json", make_results(other)));
  CHECK(none.exit_code == 2);
  CHECK_THAT(none.output, Catch::Contains("no (model, variant) in common"));
}

TEST_CASE("compare: different devices exit 2 unless --ignore-device", "[compare]") {
  TempDir dir;
  FileSpec h200 = one_variant(10.0, 0.01, 1), a100 = one_variant(10.0, 0.01, 2);
  h200.target = a100.target = "gpu";
  h200.device = "NVIDIA H200";
  a100.device = "NVIDIA A100-SXM4-80GB";
  const auto base = write(dir, "h200.json", make_results(h200));
  const auto next = write(dir, "a100.json", make_results(a100));
  const CommandResult r = compare(base, next);
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("different devices") && Catch::Contains("NVIDIA H200") &&
                           Catch::Contains("--ignore-device"));
  CHECK(compare(base, next, "--ignore-device").exit_code == 0);

  FileSpec cpu2 = one_variant(10.0, 0.01, 2);
  cpu2.device = "Other CPU 9000";
  const auto cpu_base = write(dir, "cpu1.json", make_results(one_variant(10.0, 0.01, 1)));
  CHECK(compare(cpu_base, write(dir, "cpu2.json", make_results(cpu2))).exit_code == 2);
}

TEST_CASE("compare: --timer picks a timer, and one neither file has is unusable", "[compare]") {
  TempDir dir;
  const auto base = write(dir, "base.json", make_results(one_variant(10.0, 0.01, 1)));
  const auto next = write(dir, "new.json", make_results(one_variant(10.0, 0.01, 2)));
  CHECK(compare(base, next, "--timer wall").exit_code == 0);
  const CommandResult r = compare(base, next, "--timer device");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("timing samples"));
  CHECK(compare(base, next, "--timer sundial").exit_code == 2);
}

namespace {

FileSpec report_spec() {
  FileSpec f;
  f.variants = {named("eager", 12.5), named("twin:eager", 15.25, 97.4),
                failed("twin:compiled", "twin failed: segfault in inductor"),
                unavailable("twin:graphs", "torch lacks CUDA graphs on CPU")};
  f.parity = true;
  return f;
}

}  // namespace

TEST_CASE("report: markdown holds the medians, n/a and failed cells and the parity line",
          "[report]") {
  TempDir dir;
  const auto in = write(dir, "r.json", make_results(report_spec()));
  const std::string md = (dir / "report.md").string();
  const CommandResult r = run_bench("report '" + in + "' --md '" + md + "'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output,
             Catch::Contains("| model | eager | twin:eager | twin:compiled | twin:graphs |"));
  CHECK_THAT(r.output,
             Catch::Contains("| mlp (cpu, fp32) | 12.50 | 15.25 | failed [1] | n/a [2] |"));
  CHECK_THAT(r.output, Catch::Contains("wall timer"));
  CHECK_THAT(r.output,
             Catch::Contains("[1] twin:compiled failed: twin failed: segfault in inductor"));
  CHECK_THAT(r.output,
             Catch::Contains("[2] twin:graphs unavailable: torch lacks CUDA graphs on CPU"));
  CHECK_THAT(r.output, Catch::Contains("| mlp (cpu, fp32) | 97.50 ± 0.05 | 97.40 ± 0.05 |"));
  CHECK_THAT(r.output, Catch::Contains("Parity (mlp (cpu, fp32))") && Catch::Contains("passed"));
  const std::string file = read(md);
  CHECK_THAT(file, Catch::Contains("| mlp (cpu, fp32) | 12.50 | 15.25 |"));
  CHECK_THAT(r.output, Catch::Contains(file));  // the same markdown as printed
}

TEST_CASE("report: several files give one row each", "[report]") {
  TempDir dir;
  FileSpec gpu = one_variant(2.0, 0.01, 2);
  gpu.target = "gpu";
  gpu.device = "NVIDIA H200";
  const auto cpu_file = write(dir, "cpu.json", make_results(one_variant(10.0, 0.01, 1)));
  const auto gpu_file = write(dir, "gpu.json", make_results(gpu));
  const CommandResult r = run_bench("report '" + cpu_file + "' '" + gpu_file + "'");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("| mlp (cpu, fp32) | 10.00 |") &&
                           Catch::Contains("| mlp (gpu, fp32) | 2.000 |") &&
                           Catch::Contains("NVIDIA H200"));
}

TEST_CASE("report: the HTML page is self-contained, charts inline, strings escaped", "[report]") {
  TempDir dir;
  json r = make_results(report_spec());
  r["context"]["host"]["hostname"] = "evil";
  r["context"]["host"]["cpu_model"] = "<script>alert(1)</script> & Co";
  const auto in = write(dir, "r.json", r);
  const std::string html_path = (dir / "report.html").string();
  const CommandResult res = run_bench("report '" + in + "' --html '" + html_path + "'");
  INFO(res.output);
  REQUIRE(res.exit_code == 0);
  const std::string html = read(html_path);
  CHECK_THAT(html, Catch::StartsWith("<!DOCTYPE html>"));
  CHECK_THAT(html, Catch::Contains("<svg") && Catch::Contains("<polyline") &&
                       Catch::Contains("<rect") && Catch::Contains("<style>"));
  CHECK_THAT(html, Catch::Contains("stroke-dasharray"));  // the twin's curve
  CHECK_THAT(html, Catch::Contains("12.50") && Catch::Contains("15.25"));
  CHECK_THAT(html, !Catch::Contains("http://") && !Catch::Contains("https://") &&
                       !Catch::Contains("<script"));
  CHECK_THAT(html, Catch::Contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; Co"));
  CHECK_THAT(html, Catch::Contains("torch 2.5.1") && Catch::Contains("0123456789ab"));
  // In a real browser: lays out, no script runs (the escaped one stays text), a screenshot.
  const BrowserCheck browser = check_in_chromium(html_path);
  if (browser.skipped) {
    WARN("SKIP the browser check: " << browser.why);
  } else {
    for (const std::string& p : browser.problems) FAIL_CHECK("report.html: " << p);
    CHECK(std::filesystem::exists(dir / "report.png"));
  }
}

TEST_CASE("report: unusable input exits 2 naming the file", "[report]") {
  TempDir dir;
  const auto good = write(dir, "good.json", make_results(FileSpec{}));
  const auto bad = write(dir, "bad.json", std::string("[1, 2"));
  json v3 = make_results(FileSpec{});
  v3["schema_version"] = kResultsSchemaVersion + 1;
  const auto future = write(dir, "v3.json", v3);
  for (const std::string& second : {bad, future, (dir / "missing.json").string()}) {
    const CommandResult r = run_bench("report '" + good + "' '" + second + "'");
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains(std::filesystem::path(second).filename().string()));
  }
  CHECK(run_bench("report").exit_code == 2);
}
