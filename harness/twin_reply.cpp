#include "harness/twin_reply.h"

#include "nn/json_input.h"

namespace noeira {

namespace {

using nlohmann::json;

bool is_number_or_null(const json& v) { return v.is_number() || v.is_null(); }

// "" when every field the harness reads has its type, else what is wrong.
std::string misfit(const json& j) {
  if (j.contains("available") && !j["available"].is_boolean())
    return "'available' is not true or false";
  if (j.contains("error")) return "'error' comes with ok true";
  for (const char* key : {"unavailable_reason", "timer"})
    if (j.contains(key) && !j[key].is_string() && !j[key].is_null())
      return std::string("'") + key + "' is not a string";
  for (const char* key : {"wall_ms_per_step", "median_step_ms", "test_top1", "test_loss",
                          "train_loss_last_epoch"})
    if (j.contains(key) && !is_number_or_null(j[key]))
      return std::string("'") + key + "' is not a number";
  if (j.contains("steps") && !j["steps"].is_null() &&
      !(j["steps"].is_number_integer() && j["steps"].get<int64_t>() >= 0))
    return "'steps' is not a step count";
  if (!j.value("available", false)) return "";
  for (const char* key : {"step_times_ms", "losses"})
    if (!j.contains(key) || !j[key].is_array()) return std::string("it lacks '") + key + "'";
  for (const json& v : j["step_times_ms"])
    if (!v.is_number()) return "'step_times_ms' holds " + std::string(v.type_name());
  for (const json& v : j["losses"])
    if (!is_number_or_null(v)) return "'losses' holds " + std::string(v.type_name());
  return "";
}

}  // namespace

std::optional<TwinOutcome> parse_twin_reply(std::string_view out, const std::string& log_hint) {
  const auto first = out.find('{');
  const auto last = out.rfind('}');
  if (first == std::string_view::npos || last == std::string_view::npos || last < first)
    return std::nullopt;
  Result<json> parsed = parse_json_input(out.substr(first, last - first + 1));
  if (!parsed || !parsed->is_object()) return std::nullopt;
  const json& j = *parsed;
  TwinOutcome o;
  if (!j.contains("ok") || !j["ok"].is_boolean()) {
    o.reason = "twin failed: its JSON has no 'ok' flag" + log_hint;
    return o;
  }
  if (!j["ok"].get<bool>()) {
    const bool said = j.contains("error") && j["error"].is_string();
    o.reason = "twin failed: " + (said ? j["error"].get<std::string>() : "unknown error") + log_hint;
    return o;
  }
  if (const std::string wrong = misfit(j); !wrong.empty()) {
    o.reason = "twin failed: its JSON is malformed: " + wrong + log_hint;
    return o;
  }
  o.ok = true;
  o.result = j;
  o.available = j.value("available", false);
  if (!o.available) {
    const bool said = j.contains("unavailable_reason") && j["unavailable_reason"].is_string();
    o.reason = said ? j["unavailable_reason"].get<std::string>() : "unavailable";
  }
  return o;
}

}  // namespace noeira
