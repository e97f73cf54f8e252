#include "harness/gate/compare_gate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>

#include "harness/run/ratio_interval.h"
#include "harness/run/stats.h"
#include "harness/run/variant_ratio.h"

namespace noeira {

namespace {

const VariantRecord* find_variant(const ResultsRecord& results, const std::string& model,
                                  const std::string& dataset, const std::string& variant) {
  for (const BenchmarkRecord& b : results.benchmarks) {
    if (b.model != model || b.dataset != dataset) continue;
    if (const VariantRecord* v = b.variant(variant)) return v;
  }
  return nullptr;
}

std::string why_not_run(const VariantRecord& variant) {
  if (!variant.available) {
    const std::string r = variant.unavailable_reason.value_or("");
    return "unavailable" + (r.empty() ? "" : ": " + r);
  }
  if (variant.error.value_or("").empty()) return "pending: the run stopped before it";
  return "failed: " + *variant.error;
}

// The timer both sides have samples for: the requested one, or for "auto" the most
// precise (device, then event, then wall). Nothing when there is none.
std::optional<TimerKind> shared_timer(const VariantRecord& base, const VariantRecord& next,
                                      const std::string& requested) {
  auto both = [&](TimerKind t) {
    return !base.pooled_samples(t).empty() && !next.pooled_samples(t).empty();
  };
  if (requested != "auto") {
    const std::optional<TimerKind> t = parse_timer(requested);
    return t && both(*t) ? t : std::nullopt;
  }
  for (TimerKind t : kTimersByPreference)
    if (both(t)) return t;
  return std::nullopt;
}

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * fraction);
  return buf;
}

TimingComparison compare_timing(const VariantRecord& base, const VariantRecord& next,
                                TimingComparison c, const GateOptions& o, int64_t cores) {
  if (!base.ran()) {
    c.note = "base " + why_not_run(base);
    return c;
  }
  if (!next.ran()) {
    c.note = "new " + why_not_run(next);
    return c;
  }
  const std::optional<TimerKind> timer = shared_timer(base, next, o.timer);
  if (!timer) {
    c.note = o.timer == "auto" ? "no timer with samples on both sides"
                               : "no " + o.timer + " samples on both sides";
    return c;
  }
  c.timer = timer_name(*timer);
  const std::vector<double> a = base.pooled_samples(*timer);
  const std::vector<double> b = next.pooled_samples(*timer);
  c.compared = true;
  c.base_n = static_cast<int64_t>(a.size());
  c.new_n = static_cast<int64_t>(b.size());
  c.base_median_ms = median(a);
  c.new_median_ms = median(b);
  c.ratio = c.new_median_ms / c.base_median_ms;
  c.p = mann_whitney_u(a, b).p;  // shown beside the interval; the verdict uses the interval
  const double cv_a = coefficient_of_variation(a), cv_b = coefficient_of_variation(b);
  c.noise = std::isnan(cv_a) || std::isnan(cv_b) ? std::numeric_limits<double>::infinity()
                                                 : std::max(cv_a, cv_b);
  IntervalOptions io;
  io.confidence = 1.0 - o.alpha;
  io.min_samples = kMinSamplesForVerdict;
  const std::optional<RatioInterval> interval =
      ratio_interval(seed_samples(next, *timer), seed_samples(base, *timer), io);
  if (interval) {
    c.has_interval = true;
    c.seeds_resampled = interval->seeds_resampled;
    c.lo = interval->lo;
    c.hi = interval->hi;
    c.noisy = interval->wide();
  } else {
    c.noisy = true;
  }
  if (c.noisy) c.noisy_reason = noisy_reason(next, base, *timer, cores);
  c.verdict = c.has_interval ? timing_verdict(c.base_n, c.new_n, c.lo, c.hi, o) : Verdict::kAmbiguous;
  if (c.verdict == Verdict::kAmbiguous) {
    if (std::min(c.base_n, c.new_n) < kMinSamplesForVerdict)
      c.note = "fewer than " + std::to_string(kMinSamplesForVerdict) + " samples";
    else if (!c.has_interval)
      c.note = "no interval (a median of 0)";
    else
      c.note = "interval straddles the " + percent(o.max_slowdown) + " threshold (noise " +
               percent(c.noise) + ")";
  } else if (c.verdict == Verdict::kSame && c.has_interval && (c.lo > 1.0 || c.hi < 1.0)) {
    c.note = "a real change, within the threshold";
  }
  if (c.noisy && c.has_interval)
    c.note += std::string(c.note.empty() ? "" : "; ") + "noisy: " + c.noisy_reason;
  return c;
}

std::optional<AccuracyComparison> compare_accuracy(const VariantRecord& base,
                                                   const VariantRecord& next, AccuracyComparison c) {
  if (!base.ran() || !next.ran()) return std::nullopt;
  const std::vector<double> a = base.seed_scores(SeedScore::kTestTop1);
  const std::vector<double> b = next.seed_scores(SeedScore::kTestTop1);
  if (a.empty() || b.empty()) return std::nullopt;
  c.base_n = static_cast<int64_t>(a.size());
  c.new_n = static_cast<int64_t>(b.size());
  c.base_mean = mean(a);
  c.base_std = sample_std(a);
  c.new_mean = mean(b);
  c.new_std = sample_std(b);
  c.change_pp = c.new_mean - c.base_mean;
  c.tolerance_pp = accuracy_tolerance_pp(c.base_std, c.base_n, c.new_std, c.new_n);
  c.regression = -c.change_pp > c.tolerance_pp;
  return c;
}

}  // namespace

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kSame:
      return "SAME";
    case Verdict::kSlower:
      return "SLOWER";
    case Verdict::kFaster:
      return "FASTER";
    case Verdict::kAmbiguous:
      return "AMBIGUOUS";
  }
  return "?";
}

Verdict timing_verdict(int64_t n_base, int64_t n_new, double lo, double hi, const GateOptions& o) {
  if (n_base < kMinSamplesForVerdict || n_new < kMinSamplesForVerdict) return Verdict::kAmbiguous;
  if (lo > 1.0 + o.max_slowdown) return Verdict::kSlower;
  if (hi < 1.0 - o.max_slowdown) return Verdict::kFaster;
  if (lo >= 1.0 - o.max_slowdown && hi <= 1.0 + o.max_slowdown) return Verdict::kSame;
  // The interval reaches past a threshold without lying beyond it: a change of the
  // threshold's size can neither be claimed nor ruled out.
  return Verdict::kAmbiguous;
}

double accuracy_tolerance_pp(double std_base, int64_t n_base, double std_new, int64_t n_new) {
  constexpr double kSingleSeedTolerancePp = 0.5;
  constexpr double kFloorPp = 0.1;
  if (n_base <= 1 || n_new <= 1) return kSingleSeedTolerancePp;
  const double se = std::sqrt(std_base * std_base / static_cast<double>(n_base) +
                              std_new * std_new / static_cast<double>(n_new));
  return std::max(3.0 * se, kFloorPp);
}

int GateReport::count(Verdict v) const {
  return static_cast<int>(std::count_if(
      timings.begin(), timings.end(), [v](const auto& t) { return t.compared && t.verdict == v; }));
}

int GateReport::regressions() const {
  return static_cast<int>(
      std::count_if(accuracy.begin(), accuracy.end(), [](const auto& a) { return a.regression; }));
}

Result<GateReport> compare_results(const ResultsRecord& base, const ResultsRecord& next,
                                   const GateOptions& o) {
  const std::string base_on = base.measured_on(), next_on = next.measured_on();
  if (base_on != next_on && !o.ignore_device)
    return make_error("the files were measured on different devices (base: " + base_on +
                      "; new: " + next_on + "): pass --ignore-device to compare anyway");
  GateReport report;
  report.allow_missing = o.allow_missing;
  // The cores against which a load average is judged: the smaller host's (both are the
  // same machine kind unless --ignore-device).
  const int64_t cores = std::min(base.context.host.cores > 0 ? base.context.host.cores : next.context.host.cores,
                                 next.context.host.cores > 0 ? next.context.host.cores : base.context.host.cores);
  for (const BenchmarkRecord& b : base.benchmarks) {
    const std::string& model = b.model;
    const std::string& dataset = b.dataset;
    for (const VariantRecord& v : b.variants) {
      const std::string& name = v.name;
      const VariantRecord* other = find_variant(next, model, dataset, name);
      if (v.ran() && (!other || !other->ran()))
        report.missing.push_back({model, dataset, name,
                                  other ? why_not_run(*other) : "missing from the new file"});
      if (!other) continue;
      TimingComparison t;
      t.model = model;
      t.dataset = dataset;
      t.variant = name;
      report.timings.push_back(compare_timing(v, *other, t, o, cores));
      AccuracyComparison a;
      a.model = model;
      a.dataset = dataset;
      a.variant = name;
      if (auto acc = compare_accuracy(v, *other, a)) report.accuracy.push_back(*acc);
    }
  }
  const bool any = std::any_of(report.timings.begin(), report.timings.end(),
                               [](const TimingComparison& t) { return t.compared; });
  // Nothing in common at all: not two runs of one benchmark (exit 2), whatever is missing.
  if (report.timings.empty() || (!any && report.missing.empty()))
    return make_error(report.timings.empty()
                          ? "no (model, variant) in common between the two files"
                          : "no (model, variant) has timing samples in both files");
  return report;
}

Result<double> parse_slowdown_threshold(const std::string& text) {
  std::string number = text;
  const bool is_percent = !number.empty() && number.back() == '%';
  if (is_percent) number.pop_back();
  char* end = nullptr;
  const double v =
      number.empty() ? std::numeric_limits<double>::quiet_NaN() : std::strtod(number.c_str(), &end);
  if (std::isnan(v) || end != number.c_str() + number.size() || v < 0.0)
    return make_error("--max-slowdown '" + text + "' is not a threshold: write 5% or 0.05");
  if (!is_percent && v >= 1.0)
    return make_error("--max-slowdown '" + text + "' is ambiguous: write " + text + "% or " +
                      "a fraction below 1 such as 0.05");
  const double fraction = is_percent ? v / 100.0 : v;
  if (fraction >= 1.0) return make_error("--max-slowdown '" + text + "' must be below 100%");
  return fraction;
}

}  // namespace noeira
