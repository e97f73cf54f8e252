#include "harness/profile/chrome_trace.h"

#include <cmath>
#include <fstream>
#include <map>
#include <regex>

#include "kernels/profiling/op_category.h"

namespace noeira {

using nlohmann::json;

json chrome_trace(const OpProfiler& p, const std::string& process_name) {
  json events = json::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"ts", 0}, {"pid", 1}, {"tid", 1},
                    {"args", {{"name", process_name}}}});
  const std::vector<OpEvent>& ops = p.events();
  const std::vector<std::string>& shapes = p.call_shapes();
  size_t k = 0;
  for (size_t s = 0; s < p.steps().size(); ++s) {
    const StepSpan& step = p.steps()[s];
    events.push_back({{"name", "step " + std::to_string(s)}, {"cat", "step"}, {"ph", "X"},
                      {"ts", step.start_us}, {"dur", step.dur_us}, {"pid", 1}, {"tid", 1}});
    for (; k < ops.size() && ops[k].step == static_cast<int64_t>(s); ++k) {
      const OpEvent& e = ops[k];
      const size_t call = static_cast<size_t>(e.call);
      events.push_back({{"name", e.op}, {"cat", op_category_name(e.category)}, {"ph", "X"},
                        {"ts", e.start_us}, {"dur", e.dur_us}, {"pid", 1}, {"tid", 1},
                        {"args", {{"shape", call < shapes.size() ? shapes[call] : ""},
                                  {"flops", e.cost.flops}, {"bytes", e.cost.bytes}}}});
    }
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

Status write_chrome_trace(const std::filesystem::path& path, const json& trace) {
  std::ofstream out(path);
  if (!out) return make_error("cannot write the trace " + path.string());
  out << trace.dump() << '\n';
  if (!out) return make_error("cannot write the trace " + path.string());
  return {};
}

Result<TraceCheck> check_chrome_trace(const json& trace, bool ordered) {
  const json* events = &trace;
  if (trace.is_object()) {
    if (!trace.contains("traceEvents") || !trace["traceEvents"].is_array())
      return make_error("no traceEvents array");
    events = &trace["traceEvents"];
  } else if (!trace.is_array()) {
    return make_error("neither an object with traceEvents nor an array of events");
  }
  TraceCheck c;
  std::map<std::pair<std::string, std::string>, int64_t> open;  // (pid, tid) -> open B events
  double last_ts = -INFINITY;
  const std::regex step_name("step \\d+");
  for (size_t i = 0; i < events->size(); ++i) {
    const json& e = (*events)[i];
    const std::string at = "event " + std::to_string(i);
    if (!e.is_object()) return make_error(at + ": not an object");
    for (const char* key : {"name", "ph", "pid", "tid"})
      if (!e.contains(key)) return make_error(at + ": no \"" + key + "\"");
    const std::string ph = e["ph"].is_string() ? e["ph"].get<std::string>() : "";
    if (ph.empty()) return make_error(at + ": \"ph\" is not a phase letter");
    if (ph == "M") continue;  // metadata (names of processes and threads)
    if (!e.contains("ts") || !e["ts"].is_number() || !std::isfinite(e["ts"].get<double>()))
      return make_error(at + ": \"ts\" missing or not a finite number");
    const double ts = e["ts"].get<double>();
    if (ordered && ts < last_ts) return make_error(at + ": timestamp goes backwards");
    last_ts = ts;
    const auto thread = std::make_pair(e["pid"].dump(), e["tid"].dump());
    if (ph == "X") {
      if (!e.contains("dur") || !e["dur"].is_number() || e["dur"].get<double>() < 0)
        return make_error(at + ": complete event without a non-negative \"dur\"");
    } else if (ph == "B") {
      ++open[thread];
    } else if (ph == "E") {
      if (--open[thread] < 0) return make_error(at + ": \"E\" without its \"B\"");
    }
    ++c.events;
    if (e["name"].is_string() && std::regex_match(e["name"].get<std::string>(), step_name)) ++c.steps;
  }
  for (const auto& [thread, n] : open)
    if (n != 0) return make_error("unbalanced begin/end events on pid " + thread.first + " tid " + thread.second);
  return c;
}

}  // namespace noeira
