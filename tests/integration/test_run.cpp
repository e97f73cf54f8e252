// `noeira-bench run`: the matrix, the real twin, parity, the results file, and what
// happens when the twin crashes, hangs or has no torch.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sys/stat.h>

#include "harness/results/results.h"
#include "tests/support/mnist_fixture.h"
#include "tests/support/run_binary.h"
#include "tests/support/twin_guard.h"

using namespace noeira;
using namespace noeira::test;

namespace {

// A stand-in interpreter: answers the torch probe, then misbehaves as the twin.
std::string fake_python(const TempDir& dir, const std::string& twin_behaviour) {
  const auto path = dir / "fake-python";
  std::ofstream(path) << "#!/bin/sh\n"
                         "case \"$2\" in *'import torch'*) echo 1.13.0; exit 0;; esac\n"
                      << twin_behaviour << "\n";
  ::chmod(path.c_str(), 0755);
  return path.string();
}

const std::string kQuick = "--model mlp --target cpu --quick --steps 30 --warmup 5 --threads 1";

nlohmann::json variant(const nlohmann::json& results, const std::string& name) {
  for (const auto& v : results["benchmarks"][0]["variants"])
    if (v["name"] == name) return v;
  FAIL("no variant " << name);
  return {};
}

}  // namespace

TEST_CASE("run with the real twin on the CPU writes a valid results file", "[run][twin][slow]") {
  if (!twin_or_skip(Catch::getResultCapture().getCurrentTestName())) return;
  TempDir dir;
  const auto out = dir / "r.json";
  const CommandResult r = run_bench(kQuick + " --seeds 2 --twin eager,compiled --out '" + out.string() + "'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("twin:eager") && Catch::Contains("vs twin:eager"));
  Result<nlohmann::json> res = read_results(out);
  REQUIRE(res.ok());
  const nlohmann::json ours = variant(*res, "eager");
  REQUIRE(ours["runs"].size() == 2);
  CHECK(ours["runs"][0]["timers"]["wall"]["n"].get<int>() == 25);
  CHECK(ours["runs"][0]["losses"].size() == 30);
  CHECK(ours["summary"]["test_top1"]["mean"].get<double>() > 70.0);
  const nlohmann::json twin = variant(*res, "twin:eager");
  CHECK(twin["error"].is_null());
  REQUIRE(twin["runs"].size() == 2);
  CHECK(twin["runs"][0]["losses"].size() == 30);
  CHECK(twin["runs"][0]["test_top1"].get<double>() > 70.0);
  // Same Philox init and batches: the first step's loss agrees before any update.
  CHECK(twin["runs"][0]["losses"][0].get<double>() ==
        Approx(ours["runs"][0]["losses"][0].get<double>()).epsilon(1e-6));
  CHECK(variant(*res, "graph")["available"] == false);
  CHECK((*res)["context"]["twin"]["torch_version"].is_string());
  CHECK_FALSE((*res)["benchmarks"][0]["seed_agreement"].is_null());
  // Round trip: the file read back validates and re-writes identically.
  REQUIRE(write_results(dir / "again.json", *res).ok());
  CHECK(file_bytes(out) == file_bytes(dir / "again.json"));
}

TEST_CASE("parity: the twin starts from our step-0 checkpoint and our batches",
          "[run][twin][parity][slow]") {
  if (!twin_or_skip(Catch::getResultCapture().getCurrentTestName())) return;
  TempDir dir;
  const auto out = dir / "p.json";
  const CommandResult r = run_bench(kQuick + " --seeds 1 --twin none --parity --out '" + out.string() + "'");
  INFO(r.output);
  CHECK_THAT(r.output, Catch::Contains("parity (fp32, first 50 steps"));
  Result<nlohmann::json> res = read_results(out);
  REQUIRE(res.ok());
  const auto& p = (*res)["benchmarks"][0]["parity"];
  REQUIRE(p.is_object());
  REQUIRE(p["ours"].size() == 50);
  REQUIRE(p["twin"].size() == 50);
  // Same weights, same batches, the same schedule: the first steps agree to fp32 rounding;
  // later ones drift as far as Adam's near-ties take them (the recipe's bounds, see
  // docs/parity.md).
  CHECK(r.exit_code == 0);
  for (int i = 0; i < 2; ++i) {
    INFO("step " << i);
    CHECK(p["ours"][i].get<double>() == Approx(p["twin"][i].get<double>()).epsilon(2e-6));
  }
  REQUIRE(p["max_rel_dev"].is_number());
  CHECK(p["max_rel_dev"].get<double>() <= p["bound"].get<double>());
  CHECK(p["early_steps"] == 2);
  CHECK(p["early_max_rel_dev"].get<double>() <= 2e-6);
  CHECK(p["passed"] == true);
}

TEST_CASE("A crashing twin becomes a row and our results survive", "[run][twin]") {
  TempDir dir;
  const auto out = dir / "c.json";
  const std::string py = fake_python(dir, "echo 'Traceback: boom' >&2; echo garbage; exit 3");
  const CommandResult r = run_bench(kQuick + " --seeds 1 --twin eager --python '" + py + "' --out '" + out.string() + "'");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("twin failed: exit code 3, no JSON on stdout: Traceback: boom"));
  Result<nlohmann::json> res = read_results(out);
  REQUIRE(res.ok());
  CHECK(variant(*res, "eager")["runs"].size() == 1);
  CHECK_THAT(variant(*res, "twin:eager")["error"].get<std::string>(), Catch::Contains("twin failed"));
}

TEST_CASE("A hanging twin is killed at its timeout", "[run][twin]") {
  TempDir dir;
  const auto out = dir / "t.json";
  const std::string py = fake_python(dir, "sleep 30");
  const CommandResult r = run_bench(kQuick + " --seeds 1 --twin eager --twin-timeout 2 --python '" + py +
                                    "' --out '" + out.string() + "'");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("twin failed: timed out after 2 s"));
  REQUIRE(read_results(out).ok());
}

TEST_CASE("No torch: the twin is unavailable with the reason, ours still runs", "[run][twin]") {
  TempDir dir;
  const auto out = dir / "n.json";
  const CommandResult r = run_bench(kQuick + " --seeds 1 --twin eager --python /bin/false --out '" + out.string() + "'");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("no python with torch found (tried /bin/false)"));
  Result<nlohmann::json> res = read_results(out);
  REQUIRE(res.ok());
  CHECK(variant(*res, "twin:eager")["available"] == false);
  CHECK((*res)["context"]["twin"]["available"] == false);
  CHECK(variant(*res, "eager")["runs"].size() == 1);
}

TEST_CASE("A twin whose probe is crippled is named in the table, the results, the report and compare",
          "[run][twin][probe]") {
  TempDir dir;
  const auto out = dir / "crippled.json";
  // A twin on Debian's reference BLAS: its fp32 GEMM at 6.4 GFLOP/s (measured so on a
  // fresh machine), its bf16 GEMM (oneDNN) and bandwidth sane; training is unavailable.
  const std::string py = fake_python(
      dir,
      "case \"$*\" in *--probe*) echo '{\"schema\":\"noeira-twin/1\",\"ok\":true,\"probe\":{\"rows\":"
      "[{\"threads\":1,\"gemm_fp32_gflops\":6.4,\"gemm_bf16_gflops\":416,\"stream_gbs\":30}],"
      "\"math\":{\"summary\":\"torch 1.13.0: BLAS the reference BLAS (/usr/lib/x86_64-linux-gnu/blas/"
      "libblas.so.3)\"}}}'; exit 0;; esac\n"
      "echo '{\"schema\":\"noeira-twin/1\",\"ok\":true,\"available\":false,"
      "\"unavailable_reason\":\"a fake twin\"}'");
  const CommandResult r = run_bench(kQuick + " --seeds 1 --twin eager --python '" + py +
                                    "' --out '" + out.string() + "'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::string warning = "the twin's fp32 GEMM runs at 6.40 GFLOP/s at 1 thread (torch 1.13.0: BLAS the "
                              "reference BLAS (/usr/lib/x86_64-linux-gnu/blas/libblas.so.3)), under a third of ours";
  // The run's output: the probe lines, and the warning under the table.
  CHECK_THAT(r.output, Catch::Contains("twin: fp32 GEMM 6.40 GFLOP/s") && Catch::Contains("warning: " + warning));
  // The results file: the figures and the warning in the context.
  Result<nlohmann::json> res = read_results(out);
  REQUIRE(res.ok());
  const nlohmann::json& ctx = (*res)["context"];
  CHECK(ctx["probes"]["twin"]["rows"][0]["gemm_fp32_gflops"] == 6.4);
  CHECK(ctx["probes"]["ours"]["rows"][0]["gemm_fp32_gflops"].get<double>() > 6.4 * 3);
  bool recorded = false;
  for (const auto& w : ctx["warnings"]) recorded |= w.get<std::string>().rfind(warning, 0) == 0;
  CHECK(recorded);
  // The report and compare say it too.
  const auto md = dir / "r.md";
  REQUIRE(run_bench("report '" + out.string() + "' --md '" + md.string() + "'").exit_code == 0);
  std::ifstream in(md);
  const std::string report((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_THAT(report, Catch::Contains(warning) && Catch::Contains("Baseline probes"));
  const CommandResult cmp = run_bench("compare '" + out.string() + "' '" + out.string() + "'");
  INFO(cmp.output);
  CHECK_THAT(cmp.output, Catch::Contains("warning (base): " + warning) && Catch::Contains("warning (new): " + warning));
}

namespace {

// A stand-in twin that trains instantly: a valid reply with 25 step times and the /proc
// readings of a window in which 10% of the CPU time was stolen and the load went 0.5 -> 1.5.
std::string fake_training_twin(const TempDir& dir) {
  nlohmann::json reply = {{"schema", "noeira-twin/1"}, {"ok", true}, {"available", true},
                          {"timer", "wall"}, {"steps", 30}, {"test_top1", 90.0}, {"test_loss", 0.3},
                          {"train_loss_last_epoch", 0.4}, {"compile_seconds", nullptr}};
  std::vector<double> times, losses;
  for (int i = 0; i < 25; ++i) times.push_back(20.0 + 0.1 * (i % 5));
  for (int i = 0; i < 30; ++i) losses.push_back(2.3 - 0.01 * i);
  reply["step_times_ms"] = times;
  reply["losses"] = losses;
  reply["cpu_window"] = {{"stat_start", "cpu  100 0 0 900 0 0 0 0 0 0"}, {"loadavg_start", "0.50 0.40 0.30 1/99 1"},
                         {"stat_end", "cpu  200 0 0 1700 0 0 0 100 0 0"}, {"loadavg_end", "1.50 0.40 0.30 1/99 1"}};
  return fake_python(dir, "case \"$*\" in *--probe*) exit 1;; esac\ncat <<'EOF'\n" + reply.dump() + "\nEOF");
}

// The (variant, seed) of every run of the file, in runs[].sequence order.
std::vector<std::string> run_sequence(const nlohmann::json& results) {
  std::vector<std::pair<int64_t, std::string>> runs;
  for (const auto& v : results["benchmarks"][0]["variants"])
    for (const auto& r : v["runs"])
      runs.emplace_back(r["sequence"].get<int64_t>(),
                        v["name"].get<std::string>() + " s" + std::to_string(r["seed"].get<int>()));
  std::sort(runs.begin(), runs.end());
  std::vector<std::string> out;
  for (const auto& [k, name] : runs) out.push_back(name);
  return out;
}

}  // namespace

TEST_CASE("run interleaves ours and the twin's seeds; --order blocked restores the old order",
          "[run][twin][order]") {
  TempDir dir;
  const std::string py = fake_training_twin(dir);
  const auto inter = dir / "inter.json", blocked = dir / "blocked.json";
  const CommandResult r = run_bench(kQuick + " --seeds 2 --twin eager --python '" + py + "' --out '" +
                                    inter.string() + "'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("interleaved order") &&
                           Catch::Contains("order: interleaved (eager s0, twin:eager s0, eager s1, twin:eager s1)") &&
                           Catch::Contains("95% bootstrap interval"));
  Result<nlohmann::json> res = read_results(inter);
  REQUIRE(res.ok());
  CHECK((*res)["context"]["run_order"] == "interleaved");
  CHECK(run_sequence(*res) == std::vector<std::string>{"eager s0", "twin:eager s0", "eager s1", "twin:eager s1"});
  // The machine's load over each measured window: the twin's as it read /proc, ours here.
  const nlohmann::json twin_load = variant(*res, "twin:eager")["runs"][0]["cpu_load"];
  CHECK(twin_load["steal_fraction"].get<double>() == Approx(0.1));
  CHECK(twin_load["loadavg_1m_start"].get<double>() == Approx(0.5));
  CHECK(twin_load["loadavg_1m_end"].get<double>() == Approx(1.5));
  CHECK(variant(*res, "eager")["runs"][0].contains("cpu_load"));
  // The twin's 10% steal makes any wide interval name it.
  if (r.output.find("noisy ratios:") != std::string::npos) CHECK_THAT(r.output, Catch::Contains("steal up to 10.0%"));

  const CommandResult b = run_bench(kQuick + " --seeds 2 --twin eager --order blocked --python '" + py +
                                    "' --out '" + blocked.string() + "'");
  INFO(b.output);
  REQUIRE(b.exit_code == 0);
  Result<nlohmann::json> old = read_results(blocked);
  REQUIRE(old.ok());
  CHECK((*old)["context"]["run_order"] == "blocked");
  CHECK(run_sequence(*old) == std::vector<std::string>{"eager s0", "eager s1", "twin:eager s0", "twin:eager s1"});
  CHECK(run_bench(kQuick + " --order random --out '" + (dir / "x.json").string() + "'").exit_code == 2);
}

TEST_CASE("run refuses bad arguments with exit 2 and writes nothing", "[run][cli]") {
  TempDir dir;
  const auto out = (dir / "x.json").string();
  for (const std::string args : {"--model nosuch", "--twin sometimes", "--variants turbo",
                                 "--dtype fp8", "--seeds 0", "--steps 10 --warmup 10"}) {
    const CommandResult r = run_bench("run --target cpu " + args + " --out '" + out + "'");
    INFO(args << "\n" << r.output);
    CHECK(r.exit_code == 2);
    CHECK_FALSE(std::filesystem::exists(out));
  }
}

TEST_CASE("Without a subcommand, options go to run", "[run][cli]") {
  const CommandResult r = run_bench("--model nosuch");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("unknown model 'nosuch'"));
}

TEST_CASE("time to target, peak memory and energy are recorded for both sides (mlp --quick)",
          "[run][twin][resources][slow]") {
  if (!twin_or_skip(Catch::getResultCapture().getCurrentTestName())) return;
  TempDir dir;
  const auto out = dir / "t.json";
  // The whole quick recipe (200 steps): its quick target (models/recipes/mlp.json) is reached.
  const CommandResult r = run_bench("--model mlp --target cpu --quick --threads 1 --seeds 1 --twin eager "
                                    "--variants eager,bf16 --out '" + out.string() + "'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("time to target") && Catch::Contains("peak RSS") &&
                           Catch::Contains("energy"));
  Result<nlohmann::json> res = read_results(out);
  REQUIRE(res.ok());
  for (const char* name : {"eager", "bf16", "twin:eager"}) {
    INFO(name);
    const nlohmann::json run = variant(*res, name)["runs"][0];
    const nlohmann::json& t = run["time_to_target"];
    CHECK(t["metric"] == "test_top1");
    CHECK(t["target"].get<double>() == 90.0);
    CHECK(t["reached"] == true);
    CHECK(t["seconds"].get<double>() > 0.0);
    CHECK(t["step"] == 200);
    CHECK(t["score"].get<double>() >= 90.0);
    CHECK(run["memory"]["peak_rss_bytes"].get<int64_t>() > 0);
    // Energy: a figure where a counter is readable, else n/a with the reason.
    const nlohmann::json& e = run["energy"];
    if (e["available"] == false) CHECK_FALSE(e["why"].get<std::string>().empty());
  }
  const nlohmann::json fp32 = variant(*res, "eager")["runs"][0]["memory"];
  const nlohmann::json bf16 = variant(*res, "bf16")["runs"][0]["memory"];
  // (bf16 against fp32 plan sizes per recipe: tests/integration/test_memory_plans.cpp.)
  CHECK(bf16["plan_bytes"]["activations"].get<int64_t>() < fp32["plan_bytes"]["activations"].get<int64_t>());
  CHECK(fp32["plan_bytes"]["bf16_weights"] == 0);
  CHECK(bf16["plan_bytes"]["bf16_weights"].get<int64_t>() > 0);
  CHECK(variant(*res, "twin:eager")["runs"][0]["memory"].contains("rss_method"));
  // The report shows them too.
  const CommandResult rep = run_bench("report '" + out.string() + "'");
  INFO(rep.output);
  CHECK_THAT(rep.output, Catch::Contains("Memory, time to target, energy") && Catch::Contains("(1/1)"));
}
