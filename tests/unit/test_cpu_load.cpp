// Steal time and load average over a measured window (harness/env/cpu_load.h), read from
// fake /proc text: no assertion depends on the machine the test runs on.
#include <catch2/catch.hpp>

#include <fstream>

#include "harness/env/cpu_load.h"
#include "tests/support/temp_dir.h"

using namespace noeira;
using namespace noeira::test;

TEST_CASE("/proc/stat's cpu line gives the total and the steal ticks", "[cpu_load]") {
  // user nice system idle iowait irq softirq steal guest guest_nice
  const char* stat =
      "cpu  2475901 45342 337253 958335 3165 0 1055 10052 7 3\n"
      "cpu0 1192691 22665 157287 535850 1465 0 110 4919 0 0\n"
      "intr 12345\n";
  const std::optional<CpuTimes> t = parse_proc_stat(stat);
  REQUIRE(t);
  CHECK(t->steal == 10052);
  CHECK(t->total == 2475901ULL + 45342 + 337253 + 958335 + 3165 + 0 + 1055 + 10052);  // guests left out
  // An old kernel without the steal column; the aggregate line after a per-core one.
  const std::optional<CpuTimes> old = parse_proc_stat("cpu0 1 2 3 4\ncpu  10 20 30 40\n");
  REQUIRE(old);
  CHECK(old->total == 100);
  CHECK(old->steal == 0);
  CHECK_FALSE(parse_proc_stat(""));
  CHECK_FALSE(parse_proc_stat("cpu0 1 2 3 4\n"));
  CHECK_FALSE(parse_proc_stat("cpu  1 2\n"));
  CHECK_FALSE(parse_proc_stat("cpu  1 x 3 4\n"));
}

TEST_CASE("/proc/loadavg's first field is the 1-minute load", "[cpu_load]") {
  CHECK(parse_loadavg("1.45 1.20 1.36 3/113 13466\n") == Approx(1.45));
  CHECK(parse_loadavg("0.00 0.01 0.05 1/1 1") == Approx(0.0));
  CHECK_FALSE(parse_loadavg(""));
  CHECK_FALSE(parse_loadavg("busy 1 2"));
  CHECK_FALSE(parse_loadavg("-1 0 0"));
}

TEST_CASE("The steal fraction over a window and the load at its ends", "[cpu_load]") {
  const CpuLoadSnapshot a = cpu_load_from_text("cpu  100 0 0 900 0 0 0 0 0 0", "0.50 0.4 0.3 1/1 1");
  const CpuLoadSnapshot b = cpu_load_from_text("cpu  200 0 0 1700 0 0 0 100 0 0", "1.50 0.4 0.3 1/1 1");
  const CpuLoadWindow w = cpu_load_between(a, b);
  REQUIRE(w.steal_fraction);
  CHECK(*w.steal_fraction == Approx(0.1));  // 100 of 1000 ticks
  CHECK(w.loadavg_start == Approx(0.5));
  CHECK(w.loadavg_end == Approx(1.5));
  // No tick between the readings, or counters that went backwards: no fraction.
  CHECK_FALSE(cpu_load_between(a, a).steal_fraction);
  CHECK_FALSE(cpu_load_between(b, a).steal_fraction);
  // Nothing readable: an empty window.
  CHECK(cpu_load_between(CpuLoadSnapshot{}, CpuLoadSnapshot{}).empty());
}

TEST_CASE("read_cpu_load reads the two files of a /proc folder", "[cpu_load]") {
  TempDir dir;
  std::ofstream(dir / "stat") << "cpu  10 0 10 80 0 0 0 5 0 0\ncpu0 10 0 10 80 0 0 0 5 0 0\n";
  std::ofstream(dir / "loadavg") << "2.25 1.00 0.50 2/200 999\n";
  const CpuLoadSnapshot s = read_cpu_load(dir.path());
  REQUIRE(s.times);
  CHECK(s.times->total == 105);
  CHECK(s.times->steal == 5);
  CHECK(s.loadavg_1m == Approx(2.25));
  const CpuLoadSnapshot none = read_cpu_load(dir / "missing");
  CHECK_FALSE(none.times);
  CHECK_FALSE(none.loadavg_1m);
}
