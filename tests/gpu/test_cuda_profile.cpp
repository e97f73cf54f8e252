// noeira-bench profile on the GPU: each op call's device time from CUPTI (one external
// correlation id per call), NVTX ranges compiled in; the result keeps its unattributed
// remainder (launch gaps), printed, not bounded.
#include <catch2/catch.hpp>

#include <cstdio>

#include "harness/results/results.h"
#include "tests/support/gpu_guard.h"
#include "tests/support/run_binary.h"
#include "tests/support/temp_dir.h"

using namespace noeira;
using namespace noeira::test;

TEST_CASE("cuda: profile attributes device time to our ops with CUPTI", "[gpu]") {
  if (!gpu_or_skip(current_test_name().c_str())) return;
  TempDir dir;
  const auto out = dir / "mlp.json";
  const CommandResult r = run_bench("profile --target gpu --model mlp --twin none --steps 5 --warmup 3 "
                                    "--out '" + out.string() + "'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  Result<ResultsRecord> rec = read_results_record(out);
  REQUIRE(rec);
  REQUIRE(rec->benchmarks[0].profile);
  const ProfileSideRecord& ours = rec->benchmarks[0].profile->sides.at(0);
  CHECK(ours.clock == "device");
  CHECK(ours.category("gemm")->ms_per_step > 0);
  CHECK(ours.attributed_ms > 0);
  CHECK(ours.attributed_ms <= ours.step_ms * 1.05);
  std::printf("cuda profile mlp: step %.3f ms, attributed (device) %.3f ms\n", ours.step_ms,
              ours.attributed_ms);
}
