// Memory, time to target and energy (harness/results/resource_records.h): the records'
// JSON and validation, their summary over a variant, the NVML path through a fake function
// table, RAPL through a fake powercap tree (wraparound included), what this machine says,
// and the peak-RSS reset. No assertion reads a real time.
#include <catch2/catch.hpp>

#include <sys/mman.h>

#include <fstream>
#include <vector>

#include "harness/env/energy_meter.h"
#include "harness/env/process_memory.h"
#include "harness/results/results.h"
#include "harness/run/resource_table.h"
#include "tests/support/temp_dir.h"

using namespace noeira;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

// A fake NVML whose counter advances by `step_mj` per read.
struct FakeNvml {
  unsigned long long mj = 1000000;
  unsigned long long step_mj = 500;
  int energy_rc = 0, init_rc = 0;
  int inits = 0, shutdowns = 0;
  NvmlEnergyApi api() {
    NvmlEnergyApi a;
    a.init = [this] { ++inits; return init_rc; };
    a.shutdown = [this] { ++shutdowns; return 0; };
    a.handle_by_index = [](unsigned index, void** dev) {
      *dev = reinterpret_cast<void*>(0x1);
      return index == 0 ? 0 : 2;
    };
    a.total_energy = [this](void* dev, unsigned long long* out) {
      if (dev != reinterpret_cast<void*>(0x1)) return 4;
      if (energy_rc != 0) return energy_rc;
      *out = mj;
      mj += step_mj;
      return 0;
    };
    return a;
  }
};

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

RunRecord run_with(double ttt_seconds, bool reached, double jps) {
  RunRecord r;
  MemoryRecord m;
  m.plan_bytes = {{"parameters", 4096}, {"activations", 8192}};
  m.plan_total_bytes = 12288;
  m.peak_rss_bytes = 100 << 20;
  m.rss_method = "VmHWM";
  r.memory = m;
  TimeToTargetRecord t;
  t.metric = "test_top1";
  t.target = 90.0;
  t.reached = reached;
  if (reached) {
    t.seconds = ttt_seconds;
    t.step = 200;
    t.score = 95.0;
  }
  t.evaluations = 1;
  t.steps = 200;
  t.data_seconds = 0.5;
  r.time_to_target = t;
  r.energy = energy_record("nvml", "the GPU board", jps * 100, 100, 128, "sample");
  return r;
}

}  // namespace

TEST_CASE("energy: the NVML path reads the counter through its function table (a fake)", "[energy]") {
  FakeNvml fake;
  EnergyMeter m = EnergyMeter::nvml(fake.api(), "");
  REQUIRE(m.available());
  CHECK(m.source() == "nvml");
  CHECK(fake.inits == 1);
  // Each read advances the fake by 0.5 J: start, pause, resume, stop = 4 reads; the pause
  // (an evaluation) is left out. No minimum window here (the steps take no time).
  EnergyWindow w(m, 0.0);
  w.start();
  w.pause();
  w.resume();
  const std::optional<double> j = w.stop();
  REQUIRE(j);
  CHECK(*j == Approx(1.0));  // (stop - start) 1.5 J minus the 0.5 J paused

  const EnergyRecord e = energy_record(m.source(), m.scope(), *j, 4, 128, "sample");
  CHECK(*e.joules_per_step == Approx(0.25));
  CHECK(*e.joules_per_unit == Approx(0.25 / 128));

  // A window shorter than the counter can resolve (an H200 read 0 J over 6 ms of steps):
  // no figure, and why, rather than 0 J.
  EnergyWindow brief(m);
  brief.start();
  CHECK_FALSE(brief.stop());
  CHECK_THAT(brief.why(), Contains("under the 1.0 s the nvml counter needs"));

  FakeNvml old_gpu;
  old_gpu.energy_rc = 3;  // NVML_ERROR_NOT_SUPPORTED: before Volta
  const EnergyMeter none = EnergyMeter::nvml(old_gpu.api(), "");
  CHECK_FALSE(none.available());
  CHECK_THAT(none.why(), Contains("no total-energy counter"));
  CHECK(old_gpu.shutdowns == 1);

  FakeNvml broken;
  broken.init_rc = 1;
  CHECK_THAT(EnergyMeter::nvml(broken.api(), "").why(), Contains("nvmlInit failed"));
  CHECK_THAT(EnergyMeter::nvml(std::nullopt, "no NVML (libnvidia-ml.so.1 ...)").why(), Contains("no NVML"));

  // A counter that stops reading mid-window: no figure, and why.
  FakeNvml flaky;
  EnergyMeter f = EnergyMeter::nvml(flaky.api(), "");
  EnergyWindow fw(f);
  fw.start();
  flaky.energy_rc = 999;
  CHECK_FALSE(fw.stop());
  CHECK_FALSE(f.available());
  CHECK_THAT(f.why(), Contains("stopped"));
}

TEST_CASE("energy: RAPL sums the package zones, wraps at max_energy_range_uj", "[energy]") {
  test::TempDir dir;
  const fs::path pc = dir.path() / "powercap";
  write(pc / "intel-rapl:0" / "energy_uj", "900000");
  write(pc / "intel-rapl:0" / "max_energy_range_uj", "1000000");
  write(pc / "intel-rapl:0:0" / "energy_uj", "5");  // a sub-zone (core): not summed
  write(pc / "intel-rapl:1" / "energy_uj", "10");
  write(pc / "intel-rapl:1" / "max_energy_range_uj", "1000000");
  EnergyMeter m = EnergyMeter::rapl(pc);
  REQUIRE(m.available());
  CHECK(m.source() == "rapl");
  CHECK_THAT(m.scope(), Contains("intel-rapl:0, intel-rapl:1") && Contains("every process"));
  EnergyWindow w(m, 0.0);  // no minimum window (the test takes no time)
  w.start();
  write(pc / "intel-rapl:0" / "energy_uj", "100000");  // wrapped: 100000 + 1000000 - 900000
  write(pc / "intel-rapl:1" / "energy_uj", "1000010");  // +1 J
  const std::optional<double> j = w.stop();
  REQUIRE(j);
  CHECK(*j == Approx(0.2 + 1.0));

  CHECK_THAT(EnergyMeter::rapl(dir.path() / "absent").why(), Contains("no RAPL"));
  const fs::path empty = dir.path() / "empty";
  fs::create_directories(empty);
  CHECK_THAT(EnergyMeter::rapl(empty).why(), Contains("no intel-rapl"));
  // A zone whose counter is not readable (root-only since Linux 5.10): n/a, with the reason.
  const fs::path locked = dir.path() / "locked";
  fs::create_directories(locked / "intel-rapl:0");
  const EnergyMeter l = EnergyMeter::rapl(locked);
  CHECK_FALSE(l.available());
  CHECK_THAT(l.why(), Contains("RAPL is not readable") && Contains("energy_uj"));
}

TEST_CASE("energy: this machine's meter has a figure or says why not", "[energy]") {
  for (bool gpu : {false, true}) {
    EnergyMeter m = EnergyMeter::for_target(gpu);
    if (m.available()) {
      WARN((gpu ? "NVML" : "RAPL") << " energy is readable here: " << m.scope());
      CHECK(m.read().has_value());
    } else {
      INFO(m.why());
      CHECK_FALSE(m.why().empty());
      CHECK(nlohmann::json(energy_json(energy_unavailable(m.why())))["why"] == m.why());
    }
  }
}

TEST_CASE("memory: the resident-set peak is reset before a run and read after it", "[memory]") {
  const bool reset = reset_peak_rss();
  const PeakRss before = read_peak_rss(reset);
  REQUIRE(before.bytes);
  // Mapped directly, not through malloc: a sanitizer's allocator keeps freed blocks
  // resident (its quarantine), which is not what this test is about.
  const size_t bytes = size_t{64} << 20;
  void* mapped = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mapped != MAP_FAILED);
  char* block = static_cast<char*>(mapped);
  for (size_t i = 0; i < bytes; i += 4096) block[i] = static_cast<char>(i);
  const PeakRss after = read_peak_rss(reset);
  REQUIRE(after.bytes);
  CHECK(*after.bytes >= *before.bytes + (60 << 20));
  CHECK_FALSE(after.method.empty());
  if (reset) {
    munmap(mapped, bytes);
    mapped = nullptr;
    REQUIRE(reset_peak_rss());
    const PeakRss again = read_peak_rss(true);
    CHECK(*again.bytes < *after.bytes);  // the 64 MiB peak was forgotten
    CHECK_THAT(again.method, Contains("reset"));
  } else {
    WARN("/proc/self/clear_refs refused here: " << after.method);
  }
  if (mapped) munmap(mapped, bytes);
  const std::optional<int64_t> device = device_bytes_in_use();
  CHECK((!device || *device >= 0));
}

TEST_CASE("resources: runs' records write, validate, read back and summarise", "[results]") {
  VariantRecord v;
  v.name = "eager";
  v.impl = "noeira";
  v.runs = {run_with(3.0, true, 0.5), run_with(5.0, true, 1.5), run_with(0.0, false, 1.0)};
  for (size_t i = 0; i < v.runs.size(); ++i) v.runs[i].seed = i;
  const nlohmann::json j = v.runs[0];
  CHECK(j["memory"]["plan_bytes"]["activations"] == 8192);
  CHECK(j["time_to_target"]["reached"] == true);
  CHECK(j["energy"]["unit"] == "sample");
  CHECK(check_run_resources(j, "runs[0]").ok());
  const RunRecord back = j.get<RunRecord>();
  CHECK(nlohmann::json(back) == j);

  const VariantResources r = variant_resources(v);
  CHECK(*r.plan_total_bytes == 12288);
  CHECK(*r.peak_rss_bytes == (100 << 20));
  CHECK(*r.ttt_seconds == Approx(4.0));  // median of the two that reached it
  CHECK(r.ttt_reached == 2);
  CHECK(r.ttt_runs == 3);
  CHECK(*r.joules_per_step == Approx(1.0));
  CHECK(ttt_text(r) == "4 s (2/3 reached)");
  CHECK(format_bytes(int64_t{100} << 20) == "100.0 MiB");
  CHECK(format_bytes(std::nullopt) == "-");

  VariantRecord none = v;
  for (RunRecord& run : none.runs) run = run_with(0.0, false, 1.0);
  CHECK(ttt_text(variant_resources(none)) == "not reached in 200 steps");
  CHECK(energy_text(variant_resources(none)) == "1 J/step, 0.00781 J/sample");

  // Wrong types are refused with the field's path; absent objects are fine (older files).
  nlohmann::json bad = j;
  bad["time_to_target"]["seconds"] = "soon";
  CHECK_THAT(check_run_resources(bad, "runs[0]").error().message, Contains("runs[0].time_to_target.seconds"));
  bad = j;
  bad["memory"]["plan_bytes"]["parameters"] = 1.5;
  CHECK_FALSE(check_run_resources(bad, "r").ok());
  bad = j;
  bad["energy"] = {{"available", false}};
  CHECK_THAT(check_run_resources(bad, "r").error().message, Contains("r.energy.why"));
  bad = j;
  bad["time_to_target"]["metric"] = "top5";
  CHECK_FALSE(check_run_resources(bad, "r").ok());
  CHECK(check_run_resources(nlohmann::json::object(), "r").ok());
}

TEST_CASE("resources: the run table's block shows memory, time to target and energy", "[results]") {
  BenchmarkRecord b;
  VariantRecord ours;
  ours.name = "eager";
  ours.impl = "noeira";
  ours.runs = {run_with(3.0, true, 0.5)};
  ours.summary.timers.wall = TimerStats{1.5, 1.0, 2.0, 0.1, 10};
  VariantRecord twin = ours;
  twin.name = "twin:eager";
  twin.impl = "torch";
  twin.runs[0].memory->plan_bytes.clear();
  twin.runs[0].memory->plan_total_bytes.reset();
  twin.runs[0].energy = energy_unavailable("no RAPL: /sys/class/powercap does not exist");
  b.variants = {ours, twin};
  const std::string table = render_resource_table(b, "cpu");
  INFO(table);
  CHECK_THAT(table, Contains("peak RSS") && Contains("time to target") && Contains("energy"));
  CHECK_THAT(table, Contains("12.0 KiB") && Contains("100.0 MiB") && Contains("3 s (1/1)"));
  CHECK_THAT(table, Contains("energy n/a: twin: no RAPL"));
  CHECK_THAT(table, Contains("test top-1 >= 90 %"));
}
