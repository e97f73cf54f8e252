// Writing into the repository's results/ folder (harness/env/publish_guard.h): refused
// from a dirty tree, allowed with --allow-dirty and then said in the report. The decision
// with an injected tree state, then `report` and `suite` on a scratch git checkout.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/env/publish_guard.h"
#include "tests/support/run_binary.h"
#include "tests/support/synthetic_results.h"
#include "tests/support/temp_dir.h"

using namespace noeira;
using namespace noeira::test;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

// A checkout of "this project" as the guard recognises one: .git and results/SCHEMA.md.
void fake_checkout(const fs::path& root) {
  fs::create_directories(root / ".git");
  fs::create_directories(root / "results");
  std::ofstream(root / "results" / "SCHEMA.md") << "# schema\n";
}

TreeStateFn state_of(TreeState s, int* calls = nullptr) {
  return [s, calls](const fs::path&, const fs::path&) {
    if (calls) ++*calls;
    return s;
  };
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("publish guard: a dirty tree is refused into results/, unless --allow-dirty", "[report][publish]") {
  TempDir tmp;
  const fs::path repo = tmp / "repo";
  fake_checkout(repo);
  const fs::path target = repo / "results" / "intel-fam6-m207-2core";
  CHECK(published_checkout(target) == fs::weakly_canonical(repo));
  CHECK_FALSE(published_checkout(repo / "suite-pr"));
  CHECK_FALSE(published_checkout(tmp / "elsewhere" / "results" / "x"));

  TreeState clean;
  Result<std::vector<std::string>> ok = guard_publish(target, false, state_of(clean));
  REQUIRE(ok.ok());
  CHECK(ok->empty());

  TreeState binary;
  binary.binary_dirty = true;
  binary.binary_sha = "2a0b8add0cf2723ca52f0a62805014c45ffdc228";
  Result<std::vector<std::string>> refused = guard_publish(target, false, state_of(binary));
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message, Contains("refusing to write into " + target.string()) &&
                                          Contains("built from a dirty tree (uncommitted changes; git 2a0b8add0cf2)") &&
                                          Contains("commit first (and rebuild), or pass --allow-dirty"));

  TreeState tree;
  tree.changed = {"M harness/report/report_html.cpp", "M README.md"};
  refused = guard_publish(target, false, state_of(tree));
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message, Contains("uncommitted changes to tracked files (M harness/report/report_html.cpp, "
                                               "M README.md)"));
  TreeState unknown;
  unknown.error = "git: not found";
  CHECK_FALSE(guard_publish(target, false, state_of(unknown)).ok());

  Result<std::vector<std::string>> allowed = guard_publish(target, true, state_of(tree));
  REQUIRE(allowed.ok());
  REQUIRE(allowed->size() == 1);
  CHECK_THAT((*allowed)[0], Contains("--allow-dirty from a dirty tree (uncommitted changes)"));

  // Outside a results/ folder nothing is asked.
  int calls = 0;
  CHECK(guard_publish(tmp / "noeira-suite-cpu", false, state_of(binary, &calls)).ok());
  CHECK(calls == 0);
}

TEST_CASE("publish guard: the machine's folder name", "[report][publish]") {
  const nlohmann::json intel = {{"cpu_model", "Intel(R) Xeon(R) Processor"},
                                {"cpu_id", "GenuineIntel family 6 model 207"}, {"cores", 2}};
  CHECK(machine_slug(intel, {}, false) == "intel-fam6-m207-2core");
  const nlohmann::json amd = {{"cpu_id", "AuthenticAMD family 26 model 17"}, {"cores", 4}};
  CHECK(machine_slug(amd, {}, false) == "amd-fam26-m17-4core");
  CHECK(machine_slug({{"cpu_model", "Some CPU @ 3.0GHz"}, {"cores", 8}}, {}, false) == "some-cpu-3-0ghz-8core");
  CHECK(machine_slug(intel, {{"name", "NVIDIA H200"}}, true) == "nvidia-h200");
}

TEST_CASE("publish guard: report and suite refuse a dirty checkout's results/; --allow-dirty "
          "writes with the warning", "[report][publish]") {
  if (run_shell("git --version").exit_code != 0) {
    WARN("SKIP: no git");
    return;
  }
  TempDir tmp;
  const fs::path repo = tmp / "repo";
  fs::create_directories(repo / "results");
  std::ofstream(repo / "results" / "SCHEMA.md") << "# schema\n";
  std::ofstream(repo / "tracked.txt") << "one\n";
  const std::string git = "git -C '" + repo.string() + "' -c user.name=t -c user.email=t@example.com ";
  REQUIRE(run_shell(git + "init -q && " + git + "add -A && " + git + "commit -qm init").exit_code == 0);
  std::ofstream(repo / "tracked.txt") << "two\n";  // an uncommitted change to a tracked file

  const fs::path in = tmp / "r.json";
  REQUIRE(write_results(in, synthetic_results()).ok());
  const fs::path md = repo / "results" / "test-machine" / "report.md";
  fs::create_directories(md.parent_path());  // (report writes files, not folders)
  const CommandResult refused = run_bench("report '" + in.string() + "' --md '" + md.string() + "'");
  INFO(refused.output);
  CHECK(refused.exit_code == 2);
  CHECK_THAT(refused.output, Contains("refusing to write into") && Contains("M tracked.txt") &&
                                 Contains("commit first (and rebuild), or pass --allow-dirty"));
  CHECK_FALSE(fs::exists(md));

  const CommandResult allowed = run_bench("report '" + in.string() + "' --md '" + md.string() + "' --allow-dirty");
  INFO(allowed.output);
  REQUIRE(allowed.exit_code == 0);
  CHECK_THAT(read(md), Contains("> **WARNING** written with --allow-dirty from a dirty tree (uncommitted changes)") &&
                           Contains("M tracked.txt"));

  // Outside results/ the same checkout is no matter.
  CHECK(run_bench("report '" + in.string() + "' --md '" + (repo / "elsewhere.md").string() + "'").exit_code == 0);

  // The suite refuses before it runs anything.
  const fs::path suite_dir = repo / "results" / "suite-machine";
  const CommandResult suite = run_bench("suite --models mlp --dtype-list fp32 --quick --seeds 1 --twin none "
                                        "--target cpu --threads 1 --out-dir '" + suite_dir.string() + "'");
  INFO(suite.output);
  CHECK(suite.exit_code == 2);
  CHECK_THAT(suite.output, Contains("pass --allow-dirty"));
  CHECK_FALSE(fs::exists(suite_dir / "suite.json"));
}
