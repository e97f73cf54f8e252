#include "harness/results/summary.h"

#include <cmath>

#include "harness/run/stats.h"

namespace noeira {

namespace {

Nullable<ScoreStats> seed_stats(const std::vector<double>& v) {
  if (v.empty()) return std::nullopt;
  return ScoreStats{mean(v), finite_or_null(sample_std(v)), static_cast<int64_t>(v.size()), olympic_mean(v)};
}

}  // namespace

Nullable<TimerRecord> timer_record(const std::vector<double>& samples_ms) {
  if (samples_ms.empty()) return std::nullopt;
  const SampleSummary s = summarize(samples_ms);
  return TimerRecord{samples_ms, {s.median, s.q1, s.q3, finite_or_null(s.cv), s.n}, std::nullopt};
}

Nullable<CuptiOverhead> cupti_overhead(const std::vector<double>& wall_on_ms,
                                       const std::vector<double>& wall_off_ms) {
  if (wall_on_ms.empty() || wall_off_ms.empty()) return std::nullopt;
  const double on = median(wall_on_ms), off = median(wall_off_ms);
  return CuptiOverhead{{on, off, off > 0.0 ? finite_or_null(on / off) : std::nullopt}, wall_on_ms};
}

VariantSummary summarize_runs(const std::vector<RunRecord>& runs) {
  VariantSummary s;
  for (TimerKind t : {TimerKind::kWall, TimerKind::kDevice, TimerKind::kEvent}) {
    std::vector<double> pooled;
    for (const RunRecord& r : runs)
      if (const Nullable<TimerRecord>& timer = r.timers[t])
        pooled.insert(pooled.end(), timer->samples_ms.begin(), timer->samples_ms.end());
    if (const Nullable<TimerRecord> pooled_timer = timer_record(pooled)) s.timers[t] = pooled_timer->stats;
  }
  // The traced passes pooled against the untraced samples of the same runs.
  std::vector<double> on, off;
  for (const RunRecord& r : runs) {
    if (!r.cupti_overhead || !*r.cupti_overhead) continue;
    const CuptiOverhead& o = **r.cupti_overhead;
    on.insert(on.end(), o.samples_on_ms.begin(), o.samples_on_ms.end());
    if (r.timers.wall) off.insert(off.end(), r.timers.wall->samples_ms.begin(), r.timers.wall->samples_ms.end());
  }
  if (const Nullable<CuptiOverhead> o = cupti_overhead(on, off)) s.cupti_overhead = o->stats;
  std::vector<double> top1, loss;
  for (const RunRecord& r : runs) {
    if (r.test_top1) top1.push_back(*r.test_top1);
    if (r.test_loss) loss.push_back(*r.test_loss);
  }
  s.test_top1 = seed_stats(top1);
  s.test_loss = seed_stats(loss);
  return s;
}

VariantRecord new_variant(const std::string& name, const std::string& impl,
                          const std::string& dtype, const std::string& target) {
  VariantRecord v;
  v.name = name;
  v.impl = impl;
  v.dtype = dtype;
  v.target = target;
  v.summary = summarize_runs(v.runs);
  return v;
}

VariantRecord unavailable_variant(const std::string& name, const std::string& dtype,
                                  const std::string& target, const std::string& why) {
  VariantRecord v = new_variant(name, "noeira", dtype, target);
  v.available = false;
  v.unavailable_reason = why;
  return v;
}

}  // namespace noeira
