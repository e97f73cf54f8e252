// NVML's clock readings around a variant (harness/env/gpu_clocks.h): when a warning is due,
// and what a machine without the driver records.
#include <catch2/catch.hpp>

#include "harness/env/gpu_clocks.h"
#include "harness/results/records.h"

using namespace noeira;

namespace {

ClockReading reading(unsigned sm, uint64_t reasons, std::vector<std::string> active = {}) {
  ClockReading r;
  r.available = true;
  r.sm_mhz = sm;
  r.mem_mhz = 3201;
  r.reasons = reasons;
  r.active = std::move(active);
  return r;
}

}  // namespace

TEST_CASE("clock warnings: throttling at either end, or an SM clock that moved by > 5 %",
          "[clocks]") {
  CHECK(clock_warning(reading(1980, 0), reading(1980, 0)).empty());
  CHECK(clock_warning(reading(1980, 0x1), reading(1950, 0x1)).empty());  // idle, 1.5 %: fine
  CHECK_THAT(clock_warning(reading(1980, 0), reading(1980, 0x20, {"sw_thermal_slowdown"})),
             Catch::Contains("throttled (sw_thermal_slowdown)"));
  CHECK_THAT(clock_warning(reading(1980, 0x4, {"sw_power_cap"}), reading(1980, 0)),
             Catch::Contains("sw_power_cap"));
  CHECK_THAT(clock_warning(reading(1980, 0), reading(1600, 0)),
             Catch::Contains("SM clock changed 1980 -> 1600 MHz"));
  ClockReading none;
  none.why = "no NVML";
  CHECK(clock_warning(none, reading(1600, 0x40)).empty());
  const nlohmann::json j = none;
  CHECK(j["available"] == false);
  CHECK(j["why"] == "no NVML");
  CHECK(nlohmann::json(reading(1980, 0x20, {"sw_thermal_slowdown"}))["active"][0] == "sw_thermal_slowdown");
}

TEST_CASE("without an NVIDIA driver the reading says why", "[clocks]") {
  const ClockReading r = read_gpu_clocks();
  if (r.available) {
    WARN("this machine has NVML: SM " << r.sm_mhz << " MHz, memory " << r.mem_mhz << " MHz");
    CHECK(r.sm_mhz > 0);
  } else {
    CHECK_FALSE(r.why.empty());
  }
}
