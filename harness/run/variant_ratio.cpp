#include "harness/run/variant_ratio.h"

#include <algorithm>

#include "harness/report/number_format.h"
#include "harness/run/stats.h"

namespace noeira {

namespace {

void take_max(std::optional<double>& m, const std::optional<double>& v) {
  if (v && (!m || *v > *m)) m = v;
}

}  // namespace

std::vector<std::vector<double>> seed_samples(const VariantRecord& v, TimerKind t) {
  std::vector<std::vector<double>> out;
  for (const RunRecord& r : v.runs)
    if (const Nullable<TimerRecord>& timer = r.timers[t]; timer && !timer->samples_ms.empty())
      out.push_back(timer->samples_ms);
  return out;
}

LoadSeen load_seen(const VariantRecord& v) { return load_seen(std::vector<const VariantRecord*>{&v}); }

LoadSeen load_seen(const std::vector<const VariantRecord*>& variants) {
  LoadSeen s;
  for (const VariantRecord* v : variants)
    for (const RunRecord& r : v->runs) {
      if (!r.cpu_load) continue;
      take_max(s.max_steal, r.cpu_load->steal_fraction);
      take_max(s.max_loadavg, r.cpu_load->loadavg_start);
      take_max(s.max_loadavg, r.cpu_load->loadavg_end);
    }
  return s;
}

std::string noisy_reason(const LoadSeen& load, int64_t n, double cv, int64_t cores) {
  std::vector<std::string> why;
  if (load.max_steal && *load.max_steal > kNoisySteal)
    why.push_back("steal up to " + format_number("%.1f%%", 100.0 * *load.max_steal));
  if (cores > 0 && load.max_loadavg && *load.max_loadavg > static_cast<double>(cores))
    why.push_back("load average up to " + format_number("%.1f", *load.max_loadavg) + " on " +
                  std::to_string(cores) + " cores");
  if (n < kFewSamples) why.push_back("too few samples (n = " + std::to_string(n) + ")");
  if (why.empty()) why.push_back("step times vary (cv up to " + format_number("%.1f%%", 100.0 * cv) + ")");
  std::string out;
  for (const std::string& w : why) out += (out.empty() ? "" : "; ") + w;
  return out;
}

std::string noisy_reason(const VariantRecord& a, const VariantRecord& b, TimerKind t, int64_t cores) {
  const std::vector<double> sa = a.pooled_samples(t), sb = b.pooled_samples(t);
  const int64_t n = static_cast<int64_t>(std::min(sa.size(), sb.size()));
  const double cv = std::max(coefficient_of_variation(sa), coefficient_of_variation(sb));
  return noisy_reason(load_seen(std::vector<const VariantRecord*>{&a, &b}), n, cv, cores);
}

std::optional<VariantRatio> variant_ratio(const VariantRecord& num, const VariantRecord& den,
                                          int64_t cores, std::optional<TimerKind> timer,
                                          const IntervalOptions& o) {
  std::optional<TimerKind> t = timer;
  if (!t)
    for (TimerKind k : kTimersByPreference) {
      const Nullable<TimerStats>&a = num.summary.timers[k], &d = den.summary.timers[k];
      if (a && d && a->n > 1 && d->n > 1) {
        t = k;
        break;
      }
    }
  if (!t) return std::nullopt;
  const Nullable<TimerStats>&a = num.summary.timers[*t], &d = den.summary.timers[*t];
  if (!a || !d || !(d->median_ms > 0.0)) return std::nullopt;
  VariantRatio r;
  r.timer = *t;
  r.ratio = a->median_ms / d->median_ms;
  r.interval = ratio_interval(seed_samples(num, *t), seed_samples(den, *t), o);
  if (r.interval) r.ratio = r.interval->ratio;  // the same, from the samples themselves
  r.noisy = !r.interval || r.interval->wide();
  if (r.noisy) r.reason = noisy_reason(num, den, *t, cores);
  return r;
}

std::string ratio_text(const VariantRatio& r) {
  std::string s = r.interval ? format_ratio_interval(*r.interval) : format_number("%.2fx", r.ratio);
  if (r.noisy) s += " noisy";
  return s;
}

}  // namespace noeira
