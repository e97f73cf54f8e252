// No finished result lost: `run` writes its results file after every finished seed, so a
// kill -9 leaves a valid partial file; Ctrl-C stops cleanly and keeps the finished seeds
// (also while the twin runs); `report` and `compare` say a file is partial; `train`
// writes --save-every checkpoints and one when Ctrl-C stops it.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <fstream>

#include "harness/results/results.h"
#include "nn/checkpoint.h"
#include "tests/support/background_process.h"
#include "tests/support/mnist_fixture.h"
#include "tests/support/run_binary.h"

using namespace noeira;
using namespace noeira::test;

namespace {

// Long enough per seed (a few seconds) for a signal to land between seeds.
const std::string kRun = "run --model mlp --target cpu --steps 300 --warmup 5 --threads 1 --seeds 3";

const nlohmann::json& variant(const nlohmann::json& results, const std::string& name) {
  for (const auto& v : results["benchmarks"][0]["variants"])
    if (v["name"] == name) return v;
  FAIL("no variant " << name);
  static const nlohmann::json none;
  return none;
}

// The results file once it holds a finished seed of our eager variant.
bool has_finished_seed(const std::filesystem::path& p) {
  Result<nlohmann::json> r = read_results(p);
  return r && !variant(*r, "eager")["runs"].empty();
}

std::string sh_quoted(const std::filesystem::path& p) {
  std::string s = "'";  // built up piecewise: g++ 12 misreports "'" + s (-Wrestrict)
  s += p.string();
  s += "'";
  return s;
}

std::string bench_command(const std::string& args, const std::filesystem::path& log) {
  return sh_quoted(bench_binary()) + " " + args + " >" + sh_quoted(log) + " 2>&1";
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("kill -9 of run after its first seed leaves a valid partial file that report renders",
          "[run][partial]") {
  TempDir dir;
  const auto out = dir / "r.json";
  BackgroundProcess run(bench_command(kRun + " --twin none --out " + sh_quoted(out), dir / "log"));
  REQUIRE(run.started());
  REQUIRE(wait_until([&] { return has_finished_seed(out); }, 120));
  run.signal(SIGKILL);
  CHECK(run.wait() == 128 + SIGKILL);

  Result<nlohmann::json> r = read_results(out);
  REQUIRE(r.ok());
  CHECK((*r)["status"] == "partial");
  CHECK((*r)["stopped_by"].is_null());
  const nlohmann::json& eager = variant(*r, "eager");
  const size_t done = eager["runs"].size();
  CHECK(done >= 1);
  CHECK(eager["pending_seeds"].size() == 3 - done);  // the unfinished ones, by seed
  CHECK(eager["summary"]["timers"]["wall"]["n"].get<int64_t>() > 0);
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);

  const CommandResult report = run_bench("report " + sh_quoted(out));
  INFO(report.output);
  CHECK(report.exit_code == 0);
  CHECK_THAT(report.output, Catch::Contains("**PARTIAL** " + out.string() +
                                            ": partial results (the run did not finish"));
  CHECK_THAT(report.output, Catch::Contains("/3 seeds)"));
}

TEST_CASE("Ctrl-C stops run cleanly: finished seeds kept, the rest pending, exit 130",
          "[run][partial]") {
  TempDir dir;
  const auto out = dir / "r.json";
  BackgroundProcess run(bench_command(kRun + " --twin none --out " + sh_quoted(out), dir / "log"));
  REQUIRE(wait_until([&] { return has_finished_seed(out); }, 120));
  run.signal(SIGINT);
  CHECK(run.wait() == 130);
  const std::string log = slurp(dir / "log");
  INFO(log);
  CHECK_THAT(log, Catch::Contains("partial results (stopped by SIGINT): mlp eager"));

  Result<nlohmann::json> r = read_results(out);
  REQUIRE(r.ok());
  CHECK((*r)["status"] == "partial");
  CHECK((*r)["stopped_by"] == "SIGINT");
  const nlohmann::json& eager = variant(*r, "eager");
  CHECK(eager["runs"].size() >= 1);
  CHECK(eager["runs"].size() + eager["pending_seeds"].size() == 3);
  CHECK(eager["error"].is_null());

  // compare reads it and says it is partial.
  const CommandResult c = run_bench("compare " + sh_quoted(out) + " " + sh_quoted(out));
  INFO(c.output);
  CHECK_THAT(c.output, Catch::Contains("PARTIAL " + out.string() + ": partial results (stopped by SIGINT)"));
}

TEST_CASE("Ctrl-C while the twin runs stops the twin and keeps our seeds", "[run][partial][twin]") {
  TempDir dir;
  // Answers the torch probe, fails the baseline probe at once, then hangs as the twin.
  const auto py = dir / "fake-python";
  std::ofstream(py) << "#!/bin/sh\ncase \"$2\" in *'import torch'*) echo 1.13.0; exit 0;; esac\n"
                       "case \"$*\" in *--probe*) exit 1;; esac\n"
                       "sleep 60\n";
  ::chmod(py.c_str(), 0755);
  const auto out = dir / "r.json";
  BackgroundProcess run(bench_command(
      "run --model mlp --target cpu --steps 30 --warmup 5 --threads 1 --seeds 2 --twin eager "
      "--python " + sh_quoted(py) + " --out " + sh_quoted(out),
      dir / "log"));
  REQUIRE(wait_until([&] { return slurp(dir / "log").find("twin eager seed 0 ...") != std::string::npos; },
                     120));
  const auto t0 = std::chrono::steady_clock::now();
  run.signal(SIGINT);
  CHECK(run.wait() == 130);
  // The twin was asked to stop, not waited for (it sleeps 60 s; SIGKILL comes after 10 s).
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30));
  Result<nlohmann::json> r = read_results(out);
  REQUIRE(r.ok());
  CHECK((*r)["status"] == "partial");
  // Interleaved: the twin's seed 0 runs after our seed 0, before our seed 1.
  CHECK(variant(*r, "eager")["runs"].size() == 1);
  CHECK(variant(*r, "eager")["pending_seeds"] == nlohmann::json({1}));
  CHECK(variant(*r, "twin:eager")["runs"].empty());
  CHECK(variant(*r, "twin:eager")["pending_seeds"] == nlohmann::json({0, 1}));
  CHECK(variant(*r, "twin:eager")["error"].is_null());
}

TEST_CASE("train --save-every writes the checkpoint as it goes; Ctrl-C saves and resumes exactly",
          "[train][partial][checkpoint]") {
  TempDir dir;
  const std::string train = "train --model mlp --threads 1 --target cpu";
  SECTION("--save-every N") {
    const CommandResult r = run_bench(train + " --epochs 1 --save-every 200 --save " + sh_quoted(dir / "a.ckpt"));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains("saved checkpoint " + (dir / "a.ckpt").string() +
                                         " (during epoch 1, step 200)"));
    CHECK_THAT(r.output, Catch::Contains("(during epoch 1, step 400)"));
    CHECK_THAT(r.output, Catch::Contains("(epoch 1, step 468)"));
    CHECK(run_bench(train + " --epochs 1 --save-every 10").exit_code == 2);  // no --save: refused
  }
  SECTION("Ctrl-C") {
    BackgroundProcess run(bench_command(train + " --epochs 2 --save " + sh_quoted(dir / "stopped.ckpt"), dir / "log"));
    REQUIRE(wait_until([&] { return slurp(dir / "log").find("epoch 1/2 ") != std::string::npos; }, 120));
    run.signal(SIGINT);
    CHECK(run.wait() == 130);
    const std::string log = slurp(dir / "log");
    INFO(log);
    CHECK_THAT(log, Catch::Contains("stopped by SIGINT after step"));
    Result<Checkpoint> ck = read_checkpoint(dir / "stopped.ckpt");
    REQUIRE(ck.ok());
    // Resumed, it ends exactly where an uninterrupted run does.
    const CommandResult resumed = run_bench(train + " --epochs 2 --resume " + sh_quoted(dir / "stopped.ckpt") +
                                            " --save " + sh_quoted(dir / "resumed.ckpt"));
    INFO(resumed.output);
    REQUIRE(resumed.exit_code == 0);
    REQUIRE(run_bench(train + " --epochs 2 --save " + sh_quoted(dir / "whole.ckpt")).exit_code == 0);
    CHECK(file_bytes(dir / "resumed.ckpt") == file_bytes(dir / "whole.ckpt"));
  }
}
