// runs[].memory, .time_to_target, .energy to and from JSON, their validation, and their
// summary over a variant's runs (results/SCHEMA.md, "Memory, time to target, energy").
#include "harness/results/resource_records.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "harness/results/records.h"

namespace noeira {

namespace {

using nlohmann::json;

const json* field(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}
std::optional<double> number(const json& obj, const char* key) {
  const json* v = field(obj, key);
  return v && v->is_number() && std::isfinite(v->get<double>()) ? std::optional(v->get<double>()) : std::nullopt;
}
std::optional<int64_t> integer(const json& obj, const char* key) {
  const json* v = field(obj, key);
  return v && v->is_number_integer() ? std::optional(v->get<int64_t>()) : std::nullopt;
}
std::string text(const json& obj, const char* key) {
  const json* v = field(obj, key);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}
template <class T>
json or_null(const std::optional<T>& v) {
  if constexpr (std::is_floating_point_v<T>)
    return v && std::isfinite(*v) ? json(*v) : json(nullptr);
  else
    return v ? json(*v) : json(nullptr);
}

// ---- Validation (types only, as results_validate.cpp) ----

enum class T { kString, kBool, kInteger, kNumber, kObject };
const char* describe(T t) {
  switch (t) {
    case T::kString: return "a string";
    case T::kBool: return "true or false";
    case T::kInteger: return "an integer";
    case T::kNumber: return "a number";
    case T::kObject: return "an object";
  }
  return "?";
}
bool has(const json& v, T t) {
  switch (t) {
    case T::kString: return v.is_string();
    case T::kBool: return v.is_boolean();
    case T::kInteger: return v.is_number_integer();
    case T::kNumber: return v.is_number();
    case T::kObject: return v.is_object();
  }
  return false;
}
// obj[key]: required or optional, nullable or not.
Status check(const json& obj, const std::string& path, const char* key, T t, bool required,
             bool nullable) {
  const std::string p = path + "." + key;
  const auto it = obj.find(key);
  if (it == obj.end())
    return required ? make_error(p + ": missing (" + describe(t) + (nullable ? " or null" : "") + ")")
                    : Status{};
  if ((it->is_null() && nullable) || has(*it, t)) return {};
  return make_error(p + ": must be " + describe(t) + (nullable ? " or null" : "") + " (found " +
                    it->type_name() + ")");
}

Status check_memory(const json& m, const std::string& p) {
  NOEIRA_TRY(check(m, p, "peak_rss_bytes", T::kInteger, true, true));
  NOEIRA_TRY(check(m, p, "rss_method", T::kString, true, false));
  for (const char* k : {"plan_total_bytes", "device_bytes_in_use", "device_bytes_run",
                        "torch_max_allocated_bytes", "torch_max_reserved_bytes"})
    NOEIRA_TRY(check(m, p, k, T::kInteger, false, true));
  NOEIRA_TRY(check(m, p, "note", T::kString, false, false));
  NOEIRA_TRY(check(m, p, "plan_bytes", T::kObject, false, false));
  if (const auto it = m.find("plan_bytes"); it != m.end())
    for (const auto& [k, v] : it->items())
      if (!v.is_number_integer()) return make_error(p + ".plan_bytes." + k + ": must be an integer");
  return {};
}

Status check_ttt(const json& t, const std::string& p) {
  NOEIRA_TRY(check(t, p, "metric", T::kString, true, false));
  const std::string metric = t.at("metric").get<std::string>();
  if (metric != "test_top1" && metric != "val_loss")
    return make_error(p + ".metric: '" + metric + "' is not one of test_top1, val_loss");
  NOEIRA_TRY(check(t, p, "target", T::kNumber, true, false));
  NOEIRA_TRY(check(t, p, "reached", T::kBool, true, false));
  NOEIRA_TRY(check(t, p, "seconds", T::kNumber, true, true));
  NOEIRA_TRY(check(t, p, "step", T::kInteger, true, true));
  NOEIRA_TRY(check(t, p, "score", T::kNumber, true, true));
  NOEIRA_TRY(check(t, p, "evaluations", T::kInteger, true, false));
  NOEIRA_TRY(check(t, p, "steps", T::kInteger, true, false));
  return check(t, p, "data_seconds", T::kNumber, false, true);
}

Status check_energy(const json& e, const std::string& p) {
  NOEIRA_TRY(check(e, p, "available", T::kBool, true, false));
  if (!e.at("available").get<bool>()) return check(e, p, "why", T::kString, true, false);
  NOEIRA_TRY(check(e, p, "source", T::kString, true, false));
  NOEIRA_TRY(check(e, p, "scope", T::kString, false, false));
  NOEIRA_TRY(check(e, p, "joules", T::kNumber, true, true));
  NOEIRA_TRY(check(e, p, "steps", T::kInteger, true, false));
  NOEIRA_TRY(check(e, p, "joules_per_step", T::kNumber, true, true));
  NOEIRA_TRY(check(e, p, "joules_per_unit", T::kNumber, true, true));
  return check(e, p, "unit", T::kString, true, false);
}

std::string plan_key(std::string name) {
  std::replace(name.begin(), name.end(), ' ', '_');
  return name;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

EnergyRecord energy_record(const std::string& source, const std::string& scope, double joules,
                           int64_t steps, int64_t units_per_step, const std::string& unit) {
  EnergyRecord e;
  e.available = true;
  e.source = source;
  e.scope = scope;
  e.steps = steps;
  e.unit = unit;
  if (!std::isfinite(joules) || joules < 0) return e;
  e.joules = joules;
  if (steps > 0) {
    e.joules_per_step = joules / static_cast<double>(steps);
    if (units_per_step > 0) e.joules_per_unit = *e.joules_per_step / static_cast<double>(units_per_step);
  }
  return e;
}

EnergyRecord energy_unavailable(const std::string& why) {
  EnergyRecord e;
  e.why = why;
  return e;
}

json memory_json(const MemoryRecord& m) {
  json j = {{"peak_rss_bytes", or_null(m.peak_rss_bytes)}, {"rss_method", m.rss_method}};
  if (!m.plan_bytes.empty()) {
    json& p = j["plan_bytes"] = json::object();
    for (const auto& [k, v] : m.plan_bytes) p[plan_key(k)] = v;
  }
  if (m.plan_total_bytes) j["plan_total_bytes"] = *m.plan_total_bytes;
  if (m.device_bytes_in_use) j["device_bytes_in_use"] = *m.device_bytes_in_use;
  if (m.device_bytes_run) j["device_bytes_run"] = *m.device_bytes_run;
  if (m.torch_max_allocated_bytes) j["torch_max_allocated_bytes"] = *m.torch_max_allocated_bytes;
  if (m.torch_max_reserved_bytes) j["torch_max_reserved_bytes"] = *m.torch_max_reserved_bytes;
  if (!m.note.empty()) j["note"] = m.note;
  return j;
}

json time_to_target_json(const TimeToTargetRecord& t) {
  json j = {{"metric", t.metric},           {"target", t.target},
            {"reached", t.reached},         {"seconds", or_null(t.seconds)},
            {"step", or_null(t.step)},      {"score", or_null(t.score)},
            {"evaluations", t.evaluations}, {"steps", t.steps}};
  if (t.data_seconds) j["data_seconds"] = or_null(t.data_seconds);
  return j;
}

json energy_json(const EnergyRecord& e) {
  if (!e.available) return {{"available", false}, {"why", e.why}};
  json j = {{"available", true},
            {"source", e.source},
            {"joules", or_null(e.joules)},
            {"steps", e.steps},
            {"joules_per_step", or_null(e.joules_per_step)},
            {"joules_per_unit", or_null(e.joules_per_unit)},
            {"unit", e.unit}};
  if (!e.scope.empty()) j["scope"] = e.scope;
  return j;
}

std::optional<MemoryRecord> memory_from(const json& j) {
  if (!j.is_object()) return std::nullopt;
  MemoryRecord m;
  if (const json* p = field(j, "plan_bytes"); p && p->is_object())
    for (const auto& [k, v] : p->items())
      if (v.is_number_integer()) m.plan_bytes[k] = v.get<int64_t>();
  m.plan_total_bytes = integer(j, "plan_total_bytes");
  m.peak_rss_bytes = integer(j, "peak_rss_bytes");
  m.rss_method = text(j, "rss_method");
  m.device_bytes_in_use = integer(j, "device_bytes_in_use");
  m.device_bytes_run = integer(j, "device_bytes_run");
  m.torch_max_allocated_bytes = integer(j, "torch_max_allocated_bytes");
  m.torch_max_reserved_bytes = integer(j, "torch_max_reserved_bytes");
  m.note = text(j, "note");
  return m;
}

std::optional<TimeToTargetRecord> time_to_target_from(const json& j) {
  const json* reached = field(j, "reached");
  const std::optional<double> target = number(j, "target");
  if (!reached || !reached->is_boolean() || !target) return std::nullopt;
  TimeToTargetRecord t;
  t.metric = text(j, "metric");
  t.target = *target;
  t.reached = reached->get<bool>();
  t.seconds = number(j, "seconds");
  t.step = integer(j, "step");
  t.score = number(j, "score");
  t.evaluations = integer(j, "evaluations").value_or(0);
  t.steps = integer(j, "steps").value_or(0);
  t.data_seconds = number(j, "data_seconds");
  if (t.reached && !t.seconds) t.reached = false;  // a reply that says reached without a time
  return t;
}

std::optional<EnergyRecord> energy_from(const json& j) {
  const json* available = field(j, "available");
  if (!available || !available->is_boolean()) return std::nullopt;
  EnergyRecord e;
  e.available = available->get<bool>();
  e.why = text(j, "why");
  if (!e.available) return e;
  e.source = text(j, "source");
  e.scope = text(j, "scope");
  e.joules = number(j, "joules");
  e.steps = integer(j, "steps").value_or(0);
  e.joules_per_step = number(j, "joules_per_step");
  e.joules_per_unit = number(j, "joules_per_unit");
  e.unit = text(j, "unit");
  return e;
}

Status check_run_resources(const json& run, const std::string& path) {
  if (const auto it = run.find("memory"); it != run.end()) {
    NOEIRA_TRY(check(run, path, "memory", T::kObject, false, false));
    NOEIRA_TRY(check_memory(*it, path + ".memory"));
  }
  if (const auto it = run.find("time_to_target"); it != run.end()) {
    NOEIRA_TRY(check(run, path, "time_to_target", T::kObject, false, false));
    NOEIRA_TRY(check_ttt(*it, path + ".time_to_target"));
  }
  if (const auto it = run.find("energy"); it != run.end()) {
    NOEIRA_TRY(check(run, path, "energy", T::kObject, false, false));
    NOEIRA_TRY(check_energy(*it, path + ".energy"));
  }
  return {};
}

VariantResources variant_resources(const VariantRecord& v) {
  VariantResources r;
  auto take_max = [](std::optional<int64_t>& into, const std::optional<int64_t>& x) {
    if (x && (!into || *x > *into)) into = x;
  };
  std::vector<double> reached;
  double jps = 0, jpu = 0;
  int n_jps = 0, n_jpu = 0;
  for (const RunRecord& run : v.runs) {
    if (run.memory) {
      const MemoryRecord& m = *run.memory;
      take_max(r.plan_total_bytes, m.plan_total_bytes);
      take_max(r.peak_rss_bytes, m.peak_rss_bytes);
      if (m.device_bytes_in_use) {
        take_max(r.device_bytes, m.device_bytes_in_use);
        r.device_bytes_what = "in use";
      } else if (m.torch_max_allocated_bytes) {
        take_max(r.device_bytes, m.torch_max_allocated_bytes);
        r.device_bytes_what = "torch max allocated";
      }
      if (r.rss_method.empty()) r.rss_method = m.rss_method;
    }
    if (run.time_to_target) {
      const TimeToTargetRecord& t = *run.time_to_target;
      ++r.ttt_runs;
      r.ttt_target = t.target;
      r.ttt_metric = t.metric;
      r.ttt_steps = std::max(r.ttt_steps, t.steps);
      if (t.reached && t.seconds) {
        ++r.ttt_reached;
        reached.push_back(*t.seconds);
      }
    }
    if (run.energy) {
      const EnergyRecord& e = *run.energy;
      if (!e.available) {
        if (r.energy_why.empty()) r.energy_why = e.why;
        continue;
      }
      r.energy_source = e.source;
      r.energy_unit = e.unit;
      if (e.joules_per_step) jps += *e.joules_per_step, ++n_jps;
      if (e.joules_per_unit) jpu += *e.joules_per_unit, ++n_jpu;
    }
  }
  if (!reached.empty()) {
    std::sort(reached.begin(), reached.end());
    const size_t n = reached.size();
    r.ttt_seconds = n % 2 ? reached[n / 2] : (reached[n / 2 - 1] + reached[n / 2]) / 2;
  }
  if (n_jps) r.joules_per_step = jps / n_jps;
  if (n_jpu) r.joules_per_unit = jpu / n_jpu;
  return r;
}

std::string format_bytes(const std::optional<int64_t>& bytes) {
  if (!bytes) return "-";
  const double b = static_cast<double>(*bytes);
  if (b >= 1024.0 * 1024 * 1024) return fmt("%.2f GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return fmt("%.1f MiB", b / (1024.0 * 1024));
  return fmt("%.1f KiB", b / 1024.0);
}

std::string ttt_text(const VariantResources& r) {
  if (r.ttt_runs == 0) return "-";
  const std::string not_reached = "not reached in " + std::to_string(r.ttt_steps) + " steps";
  if (r.ttt_reached == 0) return not_reached;
  std::string s = fmt("%.3g s", *r.ttt_seconds);
  if (r.ttt_seconds && *r.ttt_seconds >= 1000) s = fmt("%.0f s", *r.ttt_seconds);
  s += " (" + std::to_string(r.ttt_reached) + "/" + std::to_string(r.ttt_runs);
  if (r.ttt_reached < r.ttt_runs) s += " reached";
  return s + ")";
}

std::string energy_text(const VariantResources& r) {
  if (!r.joules_per_step) return "n/a";
  std::string s = fmt("%.3g J/step", *r.joules_per_step);
  if (r.joules_per_unit) s += ", " + fmt("%.3g", *r.joules_per_unit) + " J/" + r.energy_unit;
  return s;
}

}  // namespace noeira
