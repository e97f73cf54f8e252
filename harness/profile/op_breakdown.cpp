#include "harness/profile/op_breakdown.h"

#include <algorithm>
#include <map>
#include <utility>

#include "kernels/profiling/op_category.h"

namespace noeira {

namespace {

std::vector<ProfileCategoryRecord> empty_categories() {
  std::vector<ProfileCategoryRecord> cats;
  for (size_t c = 0; c < kOpCategoryCount; ++c)
    cats.push_back({op_category_name(static_cast<OpCategory>(c)), 0, 0, 0});
  return cats;
}

}  // namespace

ProfileSideRecord our_breakdown(const OpProfiler& p, const std::string& side, size_t top) {
  ProfileSideRecord r;
  r.side = side;
  r.clock = p.clock();
  r.steps = static_cast<int64_t>(p.steps().size());
  r.categories = empty_categories();
  if (r.steps == 0) {
    r.available = false;
    r.reason = "no step was profiled";
    return r;
  }
  const double n = static_cast<double>(r.steps);
  double step_us = 0;
  for (const StepSpan& s : p.steps()) step_us += s.dur_us;
  r.step_ms = step_us / 1e3 / n;
  // (op, step-0 shapes) -> (microseconds, calls), over every step.
  std::map<std::pair<std::string, std::string>, std::pair<double, int64_t>> ops;
  const std::vector<std::string>& shapes = p.call_shapes();
  for (const OpEvent& e : p.events()) {
    ProfileCategoryRecord& c = r.categories[static_cast<size_t>(e.category)];
    c.ms_per_step += e.dur_us / 1e3 / n;
    c.flops_per_step += e.cost.flops / n;
    c.bytes_per_step += e.cost.bytes / n;
    r.attributed_ms += e.dur_us / 1e3 / n;
    const size_t call = static_cast<size_t>(e.call);
    auto& slot = ops[{e.op, call < shapes.size() ? shapes[call] : std::string()}];
    slot.first += e.dur_us;
    slot.second += 1;
  }
  std::vector<ProfileOpRecord> rows;
  for (const auto& [key, v] : ops)
    rows.push_back({key.first, key.second, op_category_name(op_category_of(key.first)),
                    v.first / 1e3 / n, static_cast<double>(v.second) / n});
  std::sort(rows.begin(), rows.end(), [](const ProfileOpRecord& a, const ProfileOpRecord& b) {
    return a.ms_per_step != b.ms_per_step ? a.ms_per_step > b.ms_per_step : a.op < b.op;
  });
  if (rows.size() > top) rows.resize(top);
  r.top_ops = std::move(rows);
  return r;
}

ProfileSideRecord twin_breakdown(const nlohmann::json& prof, const std::string& side) {
  ProfileSideRecord r;
  r.side = side;
  r.categories = empty_categories();
  if (!prof.is_object()) {
    r.available = false;
    r.reason = "the twin sent no profile";
    return r;
  }
  r.clock = prof.value("device_time", false) ? "device" : "host";
  r.steps = prof.value("steps", 0);
  std::vector<double> steps;
  if (prof.contains("step_ms") && prof["step_ms"].is_array())
    for (const auto& v : prof["step_ms"])
      if (v.is_number()) steps.push_back(v.get<double>());
  if (steps.empty()) {
    r.available = false;
    r.reason = "the twin's profile holds no step";
    return r;
  }
  double sum = 0;
  for (double s : steps) sum += s;
  r.step_ms = sum / static_cast<double>(steps.size());
  if (prof.contains("categories_ms") && prof["categories_ms"].is_object())
    for (const auto& [name, ms] : prof["categories_ms"].items()) {
      if (!ms.is_number()) continue;
      const OpCategory c = op_category_from_name(name);
      r.categories[static_cast<size_t>(c)].ms_per_step += ms.get<double>();
      r.attributed_ms += ms.get<double>();
    }
  if (prof.contains("top_ops") && prof["top_ops"].is_array())
    for (const auto& o : prof["top_ops"])
      r.top_ops.push_back({o.value("op", ""), o.value("shape", ""), o.value("category", "other"),
                           o.value("ms_per_step", 0.0), o.value("calls_per_step", 0.0)});
  if (prof.contains("unmapped") && prof["unmapped"].is_array())
    for (const auto& u : prof["unmapped"])
      if (u.is_string()) r.unmapped.push_back(u.get<std::string>());
  return r;
}

}  // namespace noeira
