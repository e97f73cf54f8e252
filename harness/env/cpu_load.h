// How busy the machine was while a run was timed: steal time (/proc/stat: the share of
// CPU time the hypervisor gave to other guests) and the 1-minute load average
// (/proc/loadavg) at the start and the end of the measured window. Read on Linux only;
// elsewhere, or where /proc cannot be read, every figure is absent. The parsers take the
// files' text, so they are tested on fake /proc contents.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace noeira {

// The aggregate "cpu" line of /proc/stat, in clock ticks.
struct CpuTimes {
  uint64_t total = 0;  // user + nice + system + idle + iowait + irq + softirq + steal
  uint64_t steal = 0;
};

// The first "cpu " line of /proc/stat's text; nothing when there is none or it has fewer
// than 4 numbers (steal counts as 0 on kernels that do not report it).
std::optional<CpuTimes> parse_proc_stat(std::string_view text);
// The first field of /proc/loadavg's text ("1.45 1.20 1.36 3/113 13466" -> 1.45).
std::optional<double> parse_loadavg(std::string_view text);

// One reading of both files.
struct CpuLoadSnapshot {
  std::optional<CpuTimes> times;
  std::optional<double> loadavg_1m;
};
// Reads <proc>/stat and <proc>/loadavg (the first line of stat only).
CpuLoadSnapshot read_cpu_load(const std::filesystem::path& proc = "/proc");
// The same from the two files' text (the twin reports its own readings as text).
CpuLoadSnapshot cpu_load_from_text(std::string_view stat, std::string_view loadavg);

// A measured window: the steal fraction of all CPU time between the two readings (null
// when either lacks /proc/stat, or no tick passed) and the load average at each end.
struct CpuLoadWindow {
  std::optional<double> steal_fraction;
  std::optional<double> loadavg_start, loadavg_end;
  bool empty() const { return !steal_fraction && !loadavg_start && !loadavg_end; }
};
CpuLoadWindow cpu_load_between(const CpuLoadSnapshot& start, const CpuLoadSnapshot& end);

// Above these a noisy ratio is put down to the machine (harness/run/ratio_interval.h):
// steal over 2% of CPU time, or a load average over the usable cores.
inline constexpr double kNoisySteal = 0.02;

}  // namespace noeira
