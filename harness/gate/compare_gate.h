// The regression gate behind `noeira-bench compare`: pure decisions over two validated
// results files, no printing.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "harness/results/records.h"
#include "nn/error.h"

namespace noeira {

enum class Verdict { kSame, kSlower, kFaster, kAmbiguous };
const char* verdict_name(Verdict v);  // "SAME", "SLOWER", "FASTER", "AMBIGUOUS"

struct GateOptions {
  double max_slowdown = 0.05;  // relative: 0.05 = 5 %
  double alpha = 0.05;         // the interval's confidence is 1 - alpha (95%)
  std::string timer = "auto";  // auto | wall | device | event
  bool ignore_device = false;
  // A variant that ran in the base but is missing, failed or unavailable in the new file
  // fails the gate unless this is set (then it is only listed).
  bool allow_missing = false;
};

// Fewer samples than this on either side and no verdict is trusted.
inline constexpr int64_t kMinSamplesForVerdict = 5;

// The timing rule, from the (1 - alpha) bootstrap interval [lo, hi] of new median / base
// median (harness/run/ratio_interval.h: blocks of steps within seeds, seeds resampled
// where both sides have >= 3), T = max_slowdown:
//   n_base or n_new < 5 (no interval)        -> AMBIGUOUS
//   lo > 1 + T                               -> SLOWER  (the whole interval above the band)
//   hi < 1 - T                               -> FASTER  (the whole interval below it)
//   1 - T <= lo and hi <= 1 + T              -> SAME    (inside the band around 1)
//   otherwise                                -> AMBIGUOUS (it straddles 1 + T or 1 - T)
Verdict timing_verdict(int64_t n_base, int64_t n_new, double lo, double hi, const GateOptions& o);

// Accuracy regression: new mean top-1 below base by more than the tolerance:
// max(3 * sqrt(s_base^2 / n_base + s_new^2 / n_new), 0.1) percentage points, or a fixed
// 0.5 pp when either side has a single seed (no spread to estimate).
double accuracy_tolerance_pp(double std_base, int64_t n_base, double std_new, int64_t n_new);

struct TimingComparison {
  std::string model, dataset, variant;
  bool compared = false;  // false: one side has no samples; `note` says why
  std::string timer;
  int64_t base_n = 0, new_n = 0;
  double base_median_ms = 0, new_median_ms = 0, ratio = 0, p = 1, noise = 0;
  // The interval of `ratio` (none with fewer than 5 samples on a side) and whether it was
  // hierarchical (seeds resampled); noisy: wider than +-10%, `noisy_reason` says why.
  bool has_interval = false, seeds_resampled = false;
  double lo = 0, hi = 0;
  bool noisy = false;
  std::string noisy_reason;
  Verdict verdict = Verdict::kAmbiguous;
  std::string note;
};

struct AccuracyComparison {
  std::string model, dataset, variant;
  double base_mean = 0, base_std = 0, new_mean = 0, new_std = 0;
  int64_t base_n = 0, new_n = 0;
  double change_pp = 0, tolerance_pp = 0;
  bool regression = false;
};

// A variant that ran in the base and did not in the new file.
struct MissingVariant {
  std::string model, dataset, variant;
  std::string why;  // "missing from the new file" or the new file's failure / reason
};

struct GateReport {
  std::vector<TimingComparison> timings;
  std::vector<AccuracyComparison> accuracy;
  std::vector<MissingVariant> missing;
  bool allow_missing = false;
  int count(Verdict v) const;
  int regressions() const;
  bool failed() const {
    return count(Verdict::kSlower) > 0 || regressions() > 0 || (!missing.empty() && !allow_missing);
  }
};

// Pairs every (model, dataset, variant) of `base` with the same in `next` and judges
// it; a variant that ran in the base but is absent or did not run in `next` is listed in
// `missing`. Errors (exit 2 material): different devices without ignore_device, no
// (model, variant) in common at all, or no pair with samples on both sides and nothing
// missing.
Result<GateReport> compare_results(const ResultsRecord& base, const ResultsRecord& next,
                                   const GateOptions& o);

// "5%" -> 0.05, "0.05" -> 0.05; a bare number >= 1 is refused as ambiguous.
Result<double> parse_slowdown_threshold(const std::string& text);

}  // namespace noeira
