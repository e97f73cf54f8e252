#include "harness/results/records.h"

#include <utility>

namespace noeira {

const char* timer_name(TimerKind t) {
  static constexpr const char* kNames[] = {"wall", "device", "event"};  // TimerKind's order
  return kNames[static_cast<int>(t)];
}

std::optional<TimerKind> parse_timer(std::string_view name) {
  for (TimerKind t : kTimersByPreference)
    if (name == timer_name(t)) return t;
  return std::nullopt;
}

bool VariantRecord::ran() const {
  if (!available || (error && !error->empty())) return false;
  // A stopped run's variant that never started (harness/results/partial_results.h).
  return !(pending_seeds && !pending_seeds->empty() && runs.empty());
}

std::vector<double> VariantRecord::pooled_samples(TimerKind t) const {
  std::vector<double> pooled;
  for (const RunRecord& r : runs)
    if (const Nullable<TimerRecord>& timer = r.timers[t])
      pooled.insert(pooled.end(), timer->samples_ms.begin(), timer->samples_ms.end());
  return pooled;
}

std::optional<TimerKind> VariantRecord::best_timer() const {
  for (TimerKind t : kTimersByPreference)
    if (summary.timers[t]) return t;
  return std::nullopt;
}

std::vector<double> VariantRecord::seed_scores(SeedScore score) const {
  std::vector<double> scores;
  for (const RunRecord& r : runs)
    if (const Nullable<double>& s = score == SeedScore::kTestTop1 ? r.test_top1 : r.test_loss)
      scores.push_back(*s);
  return scores;
}

const VariantRecord* BenchmarkRecord::variant(std::string_view name) const {
  for (const VariantRecord& v : variants)
    if (v.name == name) return &v;
  return nullptr;
}

VariantRecord* BenchmarkRecord::variant(std::string_view name) {
  return const_cast<VariantRecord*>(std::as_const(*this).variant(name));
}

std::string ResultsRecord::measured_on() const {
  if (config.target == "cpu") return "cpu " + context.host.cpu_model;
  const std::string& name = context.device.name;
  return "gpu " + (name.empty() ? std::string("(unknown device)") : name);
}

}  // namespace noeira
