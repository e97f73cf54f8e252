// A 95% confidence interval for the ratio of two medians of step times (ours / twin,
// variant / eager, new / base), by bootstrap (docs/measurement.md says why this one):
//
// - The statistic is what the tables print: the median of one side's samples pooled over
//   its seeds, over the same of the other side.
// - Consecutive step times are correlated (a slow stretch of the machine slows several
//   steps), so the samples of a seed are not resampled one by one, which would make the
//   interval too narrow, but in blocks: a circular block bootstrap (Politis & Romano
//   1992) of each seed's series, blocks of ceil(sqrt(n)) consecutive samples with random
//   starts, wrapping at the end, until the seed's n samples are drawn again.
// - With at least 3 seeds on a side the seeds are resampled first (with replacement),
//   then blocks within each drawn seed: a hierarchical (two-stage) bootstrap, so the
//   run-to-run spread (a seed started while the machine was busier) is in the interval.
//   With fewer seeds there is too little to resample: each seed keeps its place and only
//   its blocks are resampled, and the interval covers the within-run noise only.
// - Percentile interval of the resampled ratios; a fixed RNG (mt19937_64, whose output the
//   C++ standard fixes, seeded with a constant), so the same inputs give the same interval
//   on every machine and every call.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace noeira {

struct IntervalOptions {
  double confidence = 0.95;
  int resamples = 2000;
  uint64_t rng_seed = 0x6e6f65697261ULL;  // "noeira"
  int min_seeds_to_resample = 3;          // resample seeds when each side has this many
  int64_t min_samples = 5;                // fewer on a side: no interval
};

struct RatioInterval {
  double ratio = 0;      // median(num) / median(den), samples pooled over seeds
  double lo = 0, hi = 0;  // the interval
  bool seeds_resampled = false;  // hierarchical on both sides (each had >= min_seeds_to_resample)
  int64_t n_num = 0, n_den = 0;  // samples pooled on each side
  // The larger distance of an end from the ratio, relative to it: 0.1 = the interval
  // reaches 10% below or above the ratio.
  double half_width() const;
  // Wider than +-`tolerance` around the ratio (default 10%: the `noisy` mark).
  bool wide(double tolerance = kNoisyHalfWidth) const { return half_width() > tolerance; }
  static constexpr double kNoisyHalfWidth = 0.10;
};

// Block length of the circular block bootstrap for a series of n samples: ceil(sqrt(n)),
// at least 1 and at most n.
int64_t bootstrap_block_length(size_t n);

// The interval of median(num) / median(den), `num` and `den` one vector of samples per
// seed (in step order). Nothing when a side has fewer than min_samples samples or a
// median that is not positive.
std::optional<RatioInterval> ratio_interval(const std::vector<std::vector<double>>& num,
                                            const std::vector<std::vector<double>>& den,
                                            const IntervalOptions& o = {});

// "0.23x [0.22-0.24]" (the ratio and the interval, 2 decimals; 3 significant digits
// when the ratio is below 0.1).
std::string format_ratio_interval(const RatioInterval& r);

// How far the interval reaches from the ratio, each way: "-14%/+295%".
std::string interval_extent_text(const RatioInterval& r);

// One sentence for the docs and the tables' footnotes on how the intervals were made.
std::string interval_method_note();

}  // namespace noeira
