// The suite's manifest (harness/suite/suite_manifest.h): what `suite` writes, `suite --resume`
// reads back as it was; a hand-edited one is refused with the field named, never cast
// (seeds 2.5, 1e300) or used as a path (a model "../x" names the results file).
#include <catch2/catch.hpp>

#include <fstream>

#include "harness/suite/suite_manifest.h"
#include "tests/support/temp_dir.h"

using namespace noeira;
using noeira::test::TempDir;
using Catch::Matchers::Contains;

namespace {

SuiteManifest sample() {
  SuiteManifest m;
  m.options.models = {"mlp", "gpt-tiny"};
  m.options.seeds = 2;
  m.options.target = "cpu";
  m.options.threads = 2;
  m.options.twin_timeout = 120;
  m.created = "2026-12-02T08:00:00Z";
  SuiteEntry mlp;
  mlp.model = "mlp";
  mlp.dtype = "bf16";
  mlp.status = "done";
  mlp.seconds = 12.5;
  SuiteEntry gpt;
  gpt.model = "gpt-tiny";
  gpt.dtype = "fp32";
  gpt.variants = "fp32";
  gpt.run_variants = {"fp32"};
  gpt.status = "interrupted";
  gpt.reason = "stopped by SIGINT";
  m.entries = {mlp, gpt};
  return m;
}

// The manifest with one field of its JSON replaced.
std::string edited(const TempDir& dir, const std::string& pointer, const nlohmann::json& value) {
  REQUIRE(write_suite_manifest(dir.path(), sample()).ok());
  nlohmann::json j;
  std::ifstream(dir / "suite.json") >> j;
  j[nlohmann::json::json_pointer(pointer)] = value;
  std::ofstream(dir / "suite.json") << j.dump();
  Result<SuiteManifest> r = read_suite_manifest(dir.path(), {});
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Contains((dir / "suite.json").string()));
  CHECK(r.error().message.find('\n') == std::string::npos);
  return r.error().message;
}

}  // namespace

TEST_CASE("suite manifest: what is written is read back", "[suite]") {
  TempDir dir;
  REQUIRE(write_suite_manifest(dir.path(), sample()).ok());
  SuiteOptions defaults;
  defaults.resume = dir.path().string();
  Result<SuiteManifest> r = read_suite_manifest(dir.path(), defaults);
  REQUIRE(r.ok());
  CHECK(r->created == "2026-12-02T08:00:00Z");
  CHECK(r->options.models == std::vector<std::string>{"mlp", "gpt-tiny"});
  CHECK(r->options.seeds == 2);
  CHECK(r->options.threads == 2);
  CHECK(r->options.twin_timeout == 120);
  CHECK(r->options.resume == dir.path().string());  // from the command line, not the file
  REQUIRE(r->entries.size() == 2);
  CHECK(r->entries[0].name() == "mlp-bf16");
  CHECK(r->entries[0].seconds == 12.5);
  CHECK(r->entries[1].label() == "gpt-tiny fp32");
  CHECK(r->entries[1].run_variants == std::vector<std::string>{"fp32"});
  CHECK(r->entries[1].status == "interrupted");
}

TEST_CASE("suite manifest: hand edits that would be cast, or become paths, are refused",
          "[suite]") {
  TempDir dir;
  CHECK_THAT(edited(dir, "/options/seeds", 2.5), Contains("seeds must be an integer"));
  CHECK_THAT(edited(dir, "/options/seeds", 1e300), Contains("seeds must be an integer"));
  CHECK_THAT(edited(dir, "/options/seeds", 0), Contains("seeds must be at least 1"));
  CHECK_THAT(edited(dir, "/options/threads", -1), Contains("threads"));
  CHECK_THAT(edited(dir, "/options/target", "tpu"), Contains("target must be cpu or gpu"));
  CHECK_THAT(edited(dir, "/options/twin_timeout", "soon"), Contains("twin_timeout"));
  CHECK_THAT(edited(dir, "/entries/0/model", "../../etc/x"),
             Contains("model '../../etc/x' is not a plain name"));
  CHECK_THAT(edited(dir, "/entries/0/dtype", "fp16"), Contains("dtype must be fp32 or bf16"));
  CHECK_THAT(edited(dir, "/entries/1/status", "finished"), Contains("status 'finished'"));
  CHECK_THAT(edited(dir, "/entries/1/seconds", -3), Contains("seconds"));
  CHECK_THAT(edited(dir, "/entries", "none"), Contains("entries must be a list"));
  CHECK_THAT(edited(dir, "/schema", "noeira-suite/0"), Contains("not a suite manifest"));
}

TEST_CASE("suite manifest: a missing or broken file is named with the fix", "[suite]") {
  TempDir dir;
  Result<SuiteManifest> missing = read_suite_manifest(dir.path(), {});
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.error().message, Contains("holds no readable suite manifest") &&
                                          Contains("--out-dir"));
  std::ofstream(dir / "suite.json") << R"({"schema": "noeira-suite/1", "entries": [)";
  Result<SuiteManifest> broken = read_suite_manifest(dir.path(), {});
  REQUIRE_FALSE(broken.ok());
  CHECK_THAT(broken.error().message, Contains((dir / "suite.json").string()));
}
