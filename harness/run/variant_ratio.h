// The ratio of two variants' step times with its interval (harness/run/ratio_interval.h)
// and, when the interval is wider than +-10%, the `noisy` mark with what the results say
// about why: steal time or a load average above the cores during the measured windows
// (runs[].cpu_load), too few samples, or step times that simply vary. Used by the run
// table (ours / twin, variant / eager), the report and `compare` (new / base).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/results/records.h"
#include "harness/run/ratio_interval.h"

namespace noeira {

// Fewer samples than this on a side is named as a reason for a noisy ratio.
inline constexpr int64_t kFewSamples = 30;

// The per-seed samples of timer `t` in a variant's runs (runs without it left out).
std::vector<std::vector<double>> seed_samples(const VariantRecord& v, TimerKind t);

// The worst machine load recorded over a variant's runs.
struct LoadSeen {
  std::optional<double> max_steal;    // fraction
  std::optional<double> max_loadavg;  // 1-minute load average at either end of a window
};
LoadSeen load_seen(const VariantRecord& v);
LoadSeen load_seen(const std::vector<const VariantRecord*>& variants);

// Why a ratio between `a` and `b` is noisy: "steal up to 3.1%", "load average up to 3.4
// on 2 cores", "too few samples (n = 12)", joined with "; ", else "step times vary (cv
// 14.2%)". `cores` 0: unknown, the load is not judged.
std::string noisy_reason(const VariantRecord& a, const VariantRecord& b, TimerKind t, int64_t cores);
// The same from what was seen: the load over both sides' runs, the smaller side's sample
// count and the larger coefficient of variation.
std::string noisy_reason(const LoadSeen& load, int64_t n, double cv, int64_t cores);

struct VariantRatio {
  TimerKind timer = TimerKind::kWall;
  double ratio = 0;                       // num / den medians, pooled over seeds
  std::optional<RatioInterval> interval;  // none: too few samples on a side
  bool noisy = false;                     // no interval, or one wider than +-10%
  std::string reason;                     // why noisy ("" when not)
};

// num / den on timer `timer`, or on the most precise timer both have with more than one
// sample on each side; nothing when there is none.
std::optional<VariantRatio> variant_ratio(const VariantRecord& num, const VariantRecord& den,
                                          int64_t cores, std::optional<TimerKind> timer = std::nullopt,
                                          const IntervalOptions& o = {});

// "0.23x [0.22-0.24]" plus " noisy" when marked; "0.23x" when there is no interval.
std::string ratio_text(const VariantRatio& r);

}  // namespace noeira
