#include "harness/results/results_access.h"

namespace noeira {

using nlohmann::json;

std::vector<double> pooled_samples(const json& variant, std::string_view timer) {
  std::vector<double> pooled;
  const auto runs = variant.find("runs");
  if (runs == variant.end() || !runs->is_array()) return pooled;
  for (const json& run : *runs) {
    const json* t = nullptr;
    if (const auto timers = run.find("timers"); timers != run.end() && timers->is_object())
      if (const auto it = timers->find(timer); it != timers->end() && it->is_object()) t = &*it;
    if (!t) continue;
    const auto samples = t->find("samples_ms");
    if (samples == t->end() || !samples->is_array()) continue;
    for (const json& s : *samples)
      if (s.is_number()) pooled.push_back(s.get<double>());
  }
  return pooled;
}

const json* summary_timer(const json& variant, std::string_view timer) {
  const auto summary = variant.find("summary");
  if (summary == variant.end() || !summary->is_object()) return nullptr;
  const auto timers = summary->find("timers");
  if (timers == summary->end() || !timers->is_object()) return nullptr;
  const auto t = timers->find(timer);
  return t != timers->end() && t->is_object() ? &*t : nullptr;
}

std::string best_summary_timer(const json& variant) {
  for (std::string_view t : kTimersByPreference)
    if (summary_timer(variant, t)) return std::string(t);
  return "";
}

std::vector<double> seed_scores(const json& variant, std::string_view metric) {
  std::vector<double> scores;
  const auto runs = variant.find("runs");
  if (runs == variant.end() || !runs->is_array()) return scores;
  for (const json& run : *runs)
    if (const auto v = run.find(metric); v != run.end() && v->is_number())
      scores.push_back(v->get<double>());
  return scores;
}

bool variant_ran(const json& variant) {
  if (!variant.value("available", false) || !text_of(variant, "error").empty()) return false;
  // A stopped run's variant that never started (harness/results/partial_results.h).
  const auto pending = variant.find("pending_seeds");
  return !(pending != variant.end() && pending->is_array() && !pending->empty() &&
           variant.at("runs").empty());
}

std::string measured_on(const json& results) {
  const json& context = results.at("context");
  if (results.at("config").value("target", "") == "cpu")
    return "cpu " + text_of(context.at("host"), "cpu_model");
  const std::string name = text_of(context.at("device"), "name");
  return "gpu " + (name.empty() ? std::string("(unknown device)") : name);
}

std::string text_of(const json& obj, std::string_view key) {
  if (!obj.is_object()) return "";
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

}  // namespace noeira
