// `noeira-bench suite` (harness/suite/suite_runner.h) on two small models, CPU, one seed, no
// twin: a straight run writes a results file per model and a report whose first table has
// one row per model; a suite killed after its first model keeps that model's results and
// `--resume` finishes it with the same model list, the first model's samples untouched.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "harness/results/results.h"
#include "tests/support/background_process.h"
#include "tests/support/chromium_check.h"
#include "tests/support/mnist_fixture.h"
#include "tests/support/run_binary.h"
#include "tests/support/temp_dir.h"

using namespace noeira;
using namespace noeira::test;

namespace {

const char* kSuite = "suite --models mlp,conv2d-mnist --dtype-list fp32 --quick --seeds 1 "
                     "--twin none --target cpu --threads 1 ";

nlohmann::json manifest(const std::filesystem::path& dir) {
  std::ifstream in(dir / "suite.json");
  return nlohmann::json::parse(in, nullptr, false);
}

// The first table's model cells ("mlp fp32 (mnist)", ...), in order.
std::vector<std::string> summary_models(const std::filesystem::path& dir) {
  std::ifstream in(dir / "report.md");
  std::string line;
  std::vector<std::string> out;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (line.rfind("## The comparison", 0) == 0) in_table = true;
    else if (in_table && line.rfind("## ", 0) == 0) break;
    else if (in_table && line.rfind("| ", 0) == 0 && line.find("| model") != 0 &&
             line.find("---") == std::string::npos)
      out.push_back(line.substr(2, line.find(" |", 2) - 2));
  }
  return out;
}

}  // namespace

TEST_CASE("suite: a straight run, and one killed after its first model then resumed, give "
          "the same model list; the first model's results survive", "[suite][slow]") {
  TempDir tmp;
  const auto straight = tmp / "straight", cut = tmp / "cut";
  const CommandResult a = run_bench(std::string(kSuite) + "--out-dir '" + straight.string() + "'");
  INFO(a.output);
  REQUIRE(a.exit_code == 0);
  CHECK_THAT(a.output, Catch::Contains("[1/2] mlp") && Catch::Contains("[2/2] conv2d-mnist") &&
                           Catch::Contains("left"));  // the estimate, once one run finished
  const std::vector<std::string> models = summary_models(straight);
  CHECK(models == std::vector<std::string>{"mlp fp32 (mnist)", "conv2d-mnist fp32 (mnist)"});
  CHECK(std::filesystem::exists(straight / "report.html"));
  // The HTML report in a real browser; the screenshot stays next to it (report.png).
  const BrowserCheck browser = check_in_chromium(straight / "report.html");
  if (browser.skipped) {
    WARN("SKIP the browser check: " << browser.why);
  } else {
    for (const std::string& p : browser.problems) FAIL_CHECK("report.html: " << p);
    CHECK(std::filesystem::exists(straight / "report.png"));
  }

  // Started in the background; killed (with its runs) once the first model is done.
  const std::string log = (tmp / "cut.log").string();
  std::string cmd(1, '\'');  // (not "'" + string: GCC 12 warns falsely about that)
  cmd += bench_binary();
  cmd += "' ";
  cmd += kSuite;
  cmd += "--out-dir '" + cut.string() + "' > '" + log + "' 2>&1 & echo $!";
  const CommandResult started = run_shell(cmd);
  const std::string pid = started.output.substr(0, started.output.find('\n'));
  bool first_done = false;
  for (int i = 0; i < 600 && !first_done; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const nlohmann::json m = manifest(cut);
    first_done = m.is_object() && m["entries"][0]["status"] == "done";
  }
  REQUIRE(first_done);
  run_shell("kill -9 " + pid + "; sleep 0.5");
  // Its run dies with it (no orphan keeps training); the pattern does not match itself.
  CHECK(run_shell("pgrep -f -- '" + cut.string() + "/[c]onv2d'").exit_code == 1);
  const nlohmann::json killed = manifest(cut);
  CHECK(killed["entries"][0]["status"] == "done");
  CHECK(killed["entries"][1]["status"] != "done");
  const std::vector<char> first = file_bytes(cut / "mlp-fp32.json");

  const CommandResult b = run_bench("suite --resume '" + cut.string() + "'");
  INFO(b.output);
  REQUIRE(b.exit_code == 0);
  CHECK_THAT(b.output, Catch::Contains("1 to do"));
  CHECK(summary_models(cut) == models);
  CHECK(file_bytes(cut / "mlp-fp32.json") == first);
  CHECK(manifest(cut)["entries"][1]["status"] == "done");
}

TEST_CASE("suite: a model that fails is a row with its reason; the others go on",
          "[suite]") {
  TempDir tmp;
  // A data directory whose MNIST files are broken: mlp fails; gpt-tiny reads the real
  // TinyShakespeare through a link.
  const std::filesystem::path data = tmp / "data";
  std::filesystem::create_directories(data / "mnist");
  for (const char* f : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                        "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"})
    std::ofstream(data / "mnist" / f) << "not an IDX file";
  const char* shared = std::getenv("NOEIRA_DATA");
  REQUIRE(shared != nullptr);  // the tests read the data from there
  std::filesystem::create_directory_symlink(std::filesystem::path(shared) / "tinyshakespeare",
                                            data / "tinyshakespeare");
  const CommandResult r = run_bench(
      "suite --models mlp,gpt-tiny --dtype-list fp32 --quick --seeds 1 --twin none --target cpu "
      "--threads 1 --data-dir '" + data.string() + "' --out-dir '" + (tmp / "s").string() + "'");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("mlp (fp32): FAILED"));
  std::ifstream in(tmp / "s" / "report.md");
  const std::string md((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_THAT(md, Catch::Contains("| mlp fp32 | failed |") && Catch::Contains("mlp fp32 failed: "));
  CHECK_THAT(md, Catch::Contains("gpt-tiny fp32 (tinyshakespeare)"));
}

TEST_CASE("suite: --resume of a directory without a manifest, and an existing suite without "
          "--resume, are refused clearly", "[suite]") {
  TempDir tmp;
  const CommandResult a = run_bench("suite --resume '" + tmp.path().string() + "'");
  CHECK(a.exit_code == 2);
  CHECK_THAT(a.output, Catch::Contains("holds no readable suite manifest"));
  std::ofstream(tmp / "suite.json") << R"({"schema": "noeira-suite/1"})";
  const CommandResult b = run_bench("suite --models mlp --out-dir '" + tmp.path().string() + "'");
  CHECK(b.exit_code == 2);
  CHECK_THAT(b.output, Catch::Contains("resume it with --resume"));
}

TEST_CASE("suite: Ctrl-C stops the running model keeping its finished seeds; --resume runs it "
          "again and keeps the partial file", "[suite][partial][slow]") {
  TempDir tmp;
  const auto dir = tmp / "s";
  std::string cmd(1, '\'');
  cmd += bench_binary();
  cmd += "' suite --models mlp,conv2d-mnist --dtype-list fp32 --quick --seeds 3 --twin none "
         "--target cpu --threads 1 --out-dir '" + dir.string() + "' > '" + (tmp / "log").string() +
         "' 2>&1";
  BackgroundProcess suite(cmd);
  const auto results = dir / "mlp-fp32.json";
  REQUIRE(wait_until([&] {
    Result<nlohmann::json> r = read_results(results);
    return r && !(*r)["benchmarks"][0]["variants"][0]["runs"].empty();
  }, 120));
  suite.signal(SIGINT);
  CHECK(suite.wait() == 130);
  std::ifstream in(tmp / "log");
  const std::string log((std::istreambuf_iterator<char>(in)), {});
  INFO(log);
  CHECK_THAT(log, Catch::Contains("mlp (fp32): stopped by SIGINT; its finished seeds are in"));
  CHECK_THAT(log, Catch::Contains("resume it with noeira-bench suite --resume"));
  const nlohmann::json m = manifest(dir);
  CHECK(m["entries"][0]["status"] == "interrupted");
  CHECK(m["entries"][1]["status"] == "pending");
  Result<nlohmann::json> partial = read_results(results);
  REQUIRE(partial.ok());
  CHECK((*partial)["status"] == "partial");
  CHECK((*partial)["stopped_by"] == "SIGINT");
  std::ifstream md(dir / "report.md");
  CHECK_THAT(std::string((std::istreambuf_iterator<char>(md)), {}), Catch::Contains("**PARTIAL**"));

  const CommandResult b = run_bench("suite --resume '" + dir.string() + "'");
  INFO(b.output);
  REQUIRE(b.exit_code == 0);
  CHECK_THAT(b.output, Catch::Contains("2 to do"));
  Result<nlohmann::json> kept = read_results(dir / "mlp-fp32.interrupted-1.json");
  REQUIRE(kept.ok());
  CHECK((*kept)["status"] == "partial");
  Result<nlohmann::json> done = read_results(results);
  REQUIRE(done.ok());
  CHECK((*done)["status"] == "complete");
  CHECK(manifest(dir)["entries"][1]["status"] == "done");
}
