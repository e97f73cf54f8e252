#include "harness/twin/twin_reply.h"

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
  o.reply = read_twin_reply(j);
  o.available = j.value("available", false);
  if (!o.available) {
    const bool said = j.contains("unavailable_reason") && j["unavailable_reason"].is_string();
    o.reason = said ? j["unavailable_reason"].get<std::string>() : "unavailable";
  }
  return o;
}

TwinReply read_twin_reply(const json& t) {
  auto field = [&](const char* key) -> const json* {
    if (!t.is_object()) return nullptr;
    const auto it = t.find(key);
    return it != t.end() ? &*it : nullptr;
  };
  auto number = [&](const char* key) -> Nullable<double> {
    const json* v = field(key);
    return v && v->is_number() ? Nullable<double>(v->get<double>()) : std::nullopt;
  };
  auto string = [&](const char* key) -> Optional<std::string> {
    const json* v = field(key);
    return v && v->is_string() ? Optional<std::string>(v->get<std::string>()) : std::nullopt;
  };
  auto integer = [&](const char* key) -> Optional<int64_t> {
    const json* v = field(key);
    return v && v->is_number_integer() ? Optional<int64_t>(v->get<int64_t>()) : std::nullopt;
  };
  TwinReply r;
  r.event_timer = string("timer") == "event";
  if (const json* times = field("step_times_ms"); times && times->is_array())
    for (const json& x : *times)
      if (x.is_number()) r.step_times_ms.push_back(x.get<double>());
  r.wall_ms_per_step = number("wall_ms_per_step");
  r.test_top1 = number("test_top1");
  r.test_loss = number("test_loss");
  r.train_loss_last_epoch = number("train_loss_last_epoch");
  if (const json* losses = field("losses"); losses && losses->is_array())
    for (const json& x : *losses)
      r.losses.push_back(x.is_number() ? Nullable<double>(x.get<double>()) : std::nullopt);
  r.steps = integer("steps");
  r.compile_seconds = number("compile_seconds");
  r.impl = {string("torch_version"), string("adam_impl"), string("attention_impl"),
            string("compile_impl"), integer("compiled_graphs"), integer("graph_breaks")};
  if (const json* w = field("cpu_window"); w && w->is_object()) {
    auto text = [&](const char* key) -> std::string {
      const auto it = w->find(key);
      return it != w->end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    const CpuLoadWindow load =
        cpu_load_between(cpu_load_from_text(text("stat_start"), text("loadavg_start")),
                         cpu_load_from_text(text("stat_end"), text("loadavg_end")));
    if (!load.empty()) r.cpu_load = load;
  }
  if (const json* m = field("memory")) r.memory = memory_from(*m);
  if (const json* t2 = field("time_to_target")) r.time_to_target = time_to_target_from(*t2);
  if (const json* e = field("energy")) r.energy = energy_from(*e);
  return r;
}

nlohmann::json parse_twin_probe_reply(std::string_view out, int exit_code, const std::string& log_hint) {
  auto error = [&](const std::string& why) { return json{{"error", why + log_hint}}; };
  const auto first = out.find('{'), last = out.rfind('}');
  if (first == std::string_view::npos || last == std::string_view::npos || last < first)
    return error("no JSON on stdout, exit code " + std::to_string(exit_code));
  Result<json> j = parse_json_input(out.substr(first, last - first + 1));
  if (!j || !j->is_object()) return error("no JSON object on stdout, exit code " + std::to_string(exit_code));
  const auto ok = j->find("ok");
  if (ok == j->end() || !ok->is_boolean() || !ok->get<bool>()) {
    const auto e = j->find("error");
    return error(e != j->end() && e->is_string() ? e->get<std::string>() : std::string("its reply is not ok"));
  }
  const auto probe = j->find("probe");
  if (probe == j->end() || !probe->is_object()) return error("its reply has no probe object");
  const auto rows = probe->find("rows");
  if (rows == probe->end() || !rows->is_array()) return error("its probe has no rows");
  for (const json& row : *rows) {
    if (!row.is_object()) return error("a probe row is not an object");
    const auto t = row.find("threads");
    if (t == row.end() || !(t->is_null() || t->is_number_integer())) return error("a probe row's threads is not a count");
    for (const char* key : {"gemm_fp32_gflops", "stream_gbs", "gemm_bf16_gflops"}) {
      const auto v = row.find(key);
      const bool nullable = std::string_view(key) == "gemm_bf16_gflops";
      if (v == row.end() || !(v->is_number() || (nullable && v->is_null())))
        return error(std::string("a probe row lacks the number '") + key + "'");
    }
  }
  json clean = *probe;
  if (clean.contains("error")) clean.erase("error");  // the rows are there: not a failed side
  return clean;
}

}  // namespace noeira
