// The GPU bundle's test runner (scripts/bundle/run-tests) passes the tests' verdict on:
// gpu-check reads its exit status to mark the [gpu] stage PASS or FAIL. A fake bundle
// (the runner, empty env files, a stand-in noeira-tests) shows each case.
#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "tests/support/run_binary.h"
#include "tests/support/temp_dir.h"

namespace fs = std::filesystem;
using noeira::test::CommandResult;
using noeira::test::run_shell;
using noeira::test::TempDir;

namespace {

const fs::path kSource = NOEIRA_SOURCE_DIR;

void write_file(const fs::path& p, const std::string& text, bool executable = false) {
  std::ofstream(p) << text;
  if (executable) fs::permissions(p, fs::perms::owner_all, fs::perm_options::add);
}

// A bundle whose noeira-tests prints `summary` after a per-test timing line and exits `rc`.
CommandResult run_fake_bundle(const TempDir& dir, const std::string& summary, int rc) {
  fs::create_directories(dir / "bin");
  fs::copy_file(kSource / "scripts/bundle/run-tests", dir / "run-tests",
                fs::copy_options::overwrite_existing);
  write_file(dir / "env.sh", "");
  write_file(dir / "system-libs.sh", "is_system_lib() { :; }\nis_cuda_lib() { :; }\n");
  write_file(dir / "bin/noeira-tests",
             "#!/bin/sh\necho '0.01 s: a test'\necho '" + summary + "'\nexit " +
                 std::to_string(rc) + "\n",
             true);
  return run_shell("bash '" + (dir / "run-tests").string() + "' '[gpu]'");
}

}  // namespace

TEST_CASE("bundle runner: failed tests fail the run, passed tests pass it", "[bundle]") {
  SECTION("a failure exits non-zero and says how many") {
    TempDir dir;
    const CommandResult r =
        run_fake_bundle(dir, "test cases:   66 |   65 passed | 1 failed", 1);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains("bundle tests: 65 passed, 1 failed"));
    CHECK_THAT(r.output, !Catch::Contains("0.01 s: a test"));  // timing lines filtered
  }
  SECTION("all passed exits 0") {
    TempDir dir;
    const CommandResult r =
        run_fake_bundle(dir, "All tests passed (3 assertions in 2 test cases)", 0);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains("bundle tests: 2 passed, 0 failed"));
  }
  SECTION("no summary (a crash) is a failure") {
    TempDir dir;
    const CommandResult r = run_fake_bundle(dir, "Segmentation fault", 0);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains("no summary"));
  }
}
