#include "harness/run/ratio_interval.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "harness/run/stats.h"

namespace noeira {

namespace {

// A uniform index in [0, n) from one 64-bit draw (Lemire's multiply-shift; its bias is
// below 2^-40 for the n here), so the sequence does not depend on the standard library's
// distributions, which differ between implementations.
size_t draw_index(std::mt19937_64& rng, size_t n) {
  return static_cast<size_t>((static_cast<unsigned __int128>(rng()) * n) >> 64);
}

// Appends one circular-block-bootstrap replicate of `x` (x.size() values) to `out`.
void block_resample(const std::vector<double>& x, std::mt19937_64& rng, std::vector<double>& out) {
  const size_t n = x.size();
  if (n == 0) return;
  const size_t block = static_cast<size_t>(bootstrap_block_length(n));
  for (size_t drawn = 0; drawn < n;) {
    size_t i = draw_index(rng, n);
    for (size_t k = 0; k < block && drawn < n; ++k, ++drawn) {
      out.push_back(x[i]);
      if (++i == n) i = 0;
    }
  }
}

double median_in_place(std::vector<double>& v) {
  const size_t n = v.size();
  const auto mid = v.begin() + static_cast<long>(n / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (n % 2 == 1) return *mid;
  const double upper = *mid;
  const double lower = *std::max_element(v.begin(), mid);
  return 0.5 * (lower + upper);
}

// The median of one bootstrap replicate of a side.
double replicate_median(const std::vector<std::vector<double>>& seeds, bool resample_seeds,
                        std::mt19937_64& rng, std::vector<double>& buffer) {
  buffer.clear();
  for (size_t s = 0; s < seeds.size(); ++s) {
    const std::vector<double>& series = resample_seeds ? seeds[draw_index(rng, seeds.size())] : seeds[s];
    block_resample(series, rng, buffer);
  }
  return buffer.empty() ? std::nan("") : median_in_place(buffer);
}

std::vector<double> pooled(const std::vector<std::vector<double>>& seeds) {
  std::vector<double> all;
  for (const auto& s : seeds) all.insert(all.end(), s.begin(), s.end());
  return all;
}

std::vector<std::vector<double>> non_empty(const std::vector<std::vector<double>>& seeds) {
  std::vector<std::vector<double>> out;
  for (const auto& s : seeds)
    if (!s.empty()) out.push_back(s);
  return out;
}

}  // namespace

double RatioInterval::half_width() const {
  if (!(ratio > 0.0)) return INFINITY;
  return std::max(hi / ratio - 1.0, 1.0 - lo / ratio);
}

int64_t bootstrap_block_length(size_t n) {
  if (n <= 1) return 1;
  const auto b = static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(n))));
  return std::clamp<int64_t>(b, 1, static_cast<int64_t>(n));
}

std::optional<RatioInterval> ratio_interval(const std::vector<std::vector<double>>& num_in,
                                            const std::vector<std::vector<double>>& den_in,
                                            const IntervalOptions& o) {
  const std::vector<std::vector<double>> num = non_empty(num_in), den = non_empty(den_in);
  const std::vector<double> all_num = pooled(num), all_den = pooled(den);
  if (static_cast<int64_t>(all_num.size()) < o.min_samples ||
      static_cast<int64_t>(all_den.size()) < o.min_samples)
    return std::nullopt;
  const double m_num = median(all_num), m_den = median(all_den);
  if (!(m_num > 0.0) || !(m_den > 0.0)) return std::nullopt;
  RatioInterval r;
  r.ratio = m_num / m_den;
  r.n_num = static_cast<int64_t>(all_num.size());
  r.n_den = static_cast<int64_t>(all_den.size());
  const bool resample_seeds = static_cast<int>(num.size()) >= o.min_seeds_to_resample &&
                              static_cast<int>(den.size()) >= o.min_seeds_to_resample;
  r.seeds_resampled = resample_seeds;
  std::mt19937_64 rng(o.rng_seed);
  std::vector<double> ratios, buffer;
  ratios.reserve(static_cast<size_t>(std::max(o.resamples, 1)));
  buffer.reserve(std::max(all_num.size(), all_den.size()) * 2);
  for (int b = 0; b < std::max(o.resamples, 1); ++b) {
    const double a = replicate_median(num, resample_seeds, rng, buffer);
    const double d = replicate_median(den, resample_seeds, rng, buffer);
    if (a > 0.0 && d > 0.0) ratios.push_back(a / d);
  }
  if (ratios.empty()) return std::nullopt;
  const double tail = (1.0 - o.confidence) / 2.0;
  r.lo = quantile(ratios, tail);
  r.hi = quantile(ratios, 1.0 - tail);
  // The percentile interval of a median can, with few distinct values, sit on one side of
  // the point estimate; it always contains it here.
  r.lo = std::min(r.lo, r.ratio);
  r.hi = std::max(r.hi, r.ratio);
  return r;
}

std::string format_ratio_interval(const RatioInterval& r) {
  const char* fmt = r.ratio < 0.1 ? "%.3g" : "%.2f";
  auto num = [fmt](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, fmt, v);
    return std::string(buf);
  };
  return num(r.ratio) + "x [" + num(r.lo) + "-" + num(r.hi) + "]";
}

std::string interval_extent_text(const RatioInterval& r) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "-%.0f%%/+%.0f%%", 100.0 * (1.0 - r.lo / r.ratio), 100.0 * (r.hi / r.ratio - 1.0));
  return buf;
}

std::string interval_method_note() {
  return "[lo-hi] = 95% bootstrap interval of the ratio of medians: blocks of ceil(sqrt(n)) "
         "consecutive steps resampled within each seed (step times are correlated), seeds "
         "resampled too where both sides have >= 3; noisy = the interval reaches more than "
         "10% from the ratio (docs/measurement.md)";
}

}  // namespace noeira
