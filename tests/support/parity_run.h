// `noeira-bench run --parity` as the parity tests run it: the command's output and the
// results file's parity object (docs/parity.md).
#pragma once
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "harness/results/results.h"
#include "tests/support/run_binary.h"
#include "tests/support/temp_dir.h"

namespace noeira::test {

struct ParityRun {
  CommandResult command;
  nlohmann::json parity;  // the first benchmark's "parity" object
};

// Runs `noeira-bench <args> --twin none --parity --out <temp>`; the parity object must be
// there.
inline ParityRun parity_run(const std::string& args) {
  TempDir dir;
  const auto out = dir / "p.json";
  ParityRun r;
  r.command = run_bench(args + " --twin none --parity --out '" + out.string() + "'");
  INFO(r.command.output);
  Result<nlohmann::json> res = read_results(out);
  REQUIRE(res.ok());
  r.parity = (*res)["benchmarks"][0]["parity"];
  REQUIRE(r.parity.is_object());
  return r;
}

}  // namespace noeira::test
