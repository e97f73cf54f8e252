// The GPU regression workflow (.github/workflows/gpu-regression.yml) is valid YAML, and
// every command it runs is one the README documents and that exists: scripts/ files that
// are executable, and noeira-bench subcommands that answer --help.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/support/run_binary.h"

using namespace noeira::test;

namespace {

const std::filesystem::path kSource = NOEIRA_SOURCE_DIR;

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

TEST_CASE("the GPU regression workflow is valid YAML and runs only the README's commands, "
          "which exist", "[workflow]") {
  const std::filesystem::path wf = kSource / ".github/workflows/gpu-regression.yml";
  REQUIRE(std::filesystem::exists(wf));
  // PyYAML (python3-yaml, installed by scripts/setup) parses it; JSON comes back.
  const CommandResult parsed = run_shell(
      "python3 -c 'import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))' '" +
      wf.string() + "' 2>&1");
  INFO(parsed.output);
  REQUIRE(parsed.exit_code == 0);
  const nlohmann::json doc = nlohmann::json::parse(parsed.output);
  // YAML 1.1 reads the key `on` as true.
  CHECK((doc.contains("on") || doc.contains("true")));
  REQUIRE(doc.contains("jobs"));
  const std::string readme = slurp(kSource / "README.md");
  int commands = 0;
  for (const auto& [name, job] : doc["jobs"].items()) {
    INFO("job " << name);
    REQUIRE(job.contains("runs-on"));
    const std::string runs_on = job["runs-on"].dump();
    CHECK_THAT(runs_on, Catch::Contains("self-hosted"));
    for (const nlohmann::json& step : job["steps"]) {
      if (step.contains("uses")) {
        const std::string uses = step["uses"];
        CHECK((uses.rfind("actions/checkout@", 0) == 0 || uses.rfind("actions/upload-artifact@", 0) == 0));
        continue;
      }
      REQUIRE(step.contains("run"));
      std::istringstream lines(step["run"].get<std::string>());
      for (std::string line; std::getline(lines, line);) {
        const std::vector<std::string> w = words(line);
        if (w.empty() || w[0][0] == '#') continue;
        INFO("run: " << line);
        ++commands;
        // The README shows the command with <gpu> for the matrix's label.
        std::string documented = line.substr(line.find_first_not_of(' '));
        if (const auto at = documented.find("${{ matrix.gpu }}"); at != std::string::npos)
          documented.replace(at, 17, "<gpu>");
        CHECK_THAT(readme, Catch::Contains(documented));
        if (w[0] == "build/noeira-bench") {
          REQUIRE(w.size() >= 2);
          const CommandResult help = run_bench(w[1] + " --help");
          CHECK(help.exit_code == 0);
          CHECK_THAT(help.output, Catch::Contains("Usage: noeira-bench " + w[1]));
        } else {
          CHECK(w[0].rfind("scripts/", 0) == 0);
          const auto script = kSource / w[0];
          CHECK(std::filesystem::exists(script));
          CHECK((std::filesystem::status(script).permissions() & std::filesystem::perms::owner_exec) !=
                std::filesystem::perms::none);
        }
      }
    }
  }
  CHECK(commands >= 5);
}
