// The results file's frame to and from JSON: where and how it was measured (context,
// config) and the file around the benchmarks (harness/results/records.h).
#include "harness/results/json_fields.h"
#include "harness/results/records.h"

namespace noeira {

using namespace json_fields;

namespace {

TwinContext twin_context_from(const json& t) {
  return {t.at("python").get<std::string>(), string(t, "torch_version"), t.at("available").get<bool>(),
          string(t, "reason")};
}

ContextRecord context_from(const json& c) {
  ContextRecord r;
  r.command_line = c.at("command_line").get<std::string>();
  r.git_sha = c.at("git_sha").get<std::string>();
  r.git_dirty = c.at("git_dirty").get<bool>();
  r.host = host_record(c.at("host"));
  r.build = build_record(c.at("build"));
  r.device = device_record(c.at("device"));
  r.twin = twin_context_from(c.at("twin"));
  if (const json* p = field(c, "probes"); p && p->is_object()) r.probes = *p;
  if (const json* w = field(c, "warnings"); w && w->is_array()) {
    r.warnings.emplace();
    for (const json& line : *w)
      if (line.is_string()) r.warnings->push_back(line.get<std::string>());
  }
  r.run_order = string(c, "run_order");
  return r;
}

ConfigRecord config_from(const json& c) {
  const json& s = c.at("stopping");
  return {c.at("target").get<std::string>(), c.at("dtype").get<std::string>(),
          c.at("seeds").get<std::vector<uint64_t>>(), c.at("steps").get<int64_t>(),
          c.at("warmup").get<int64_t>(), c.at("threads").get<int64_t>(), c.at("quick").get<bool>(),
          {s.at("min_samples").get<int64_t>(), s.at("max_rel_noise").get<double>(),
           s.at("max_seconds").get<double>()}};
}
json context_json(const ContextRecord& c) {
  json j = {{"command_line", c.command_line},
            {"git_sha", c.git_sha},
            {"git_dirty", c.git_dirty},
            {"host", c.host.recorded},
            {"build", c.build.recorded},
            {"device", c.device.recorded},
            {"twin",
             {{"python", c.twin.python},
              {"torch_version", string_or_null(c.twin.torch_version)},
              {"available", c.twin.available},
              {"reason", string_or_null(c.twin.reason)}}}};
  if (c.probes) j["probes"] = *c.probes;
  if (c.warnings) j["warnings"] = *c.warnings;
  if (c.run_order) j["run_order"] = *c.run_order;
  return j;
}

}  // namespace

HostRecord host_record(const json& host) {
  return {text(host, "cpu_model"), text(host, "os"), integer(host, "cores").value_or(0), host};
}

BuildRecord build_record(const json& build) {
  BuildRecord r;
  r.recorded = build;
  r.git_sha = text(build, "git_sha");
  if (const json* dirty = field(build, "git_dirty"); dirty && dirty->is_boolean()) r.git_dirty = dirty->get<bool>();
  if (const json* ob = field(build, "openblas"); ob && ob->is_object()) {
    r.has_openblas = true;
    r.openblas_core = text(*ob, "core");
  }
  if (const json* dn = field(build, "onednn"); dn && dn->is_object()) {
    r.has_onednn = true;
    r.onednn_version = text(*dn, "version");
    r.onednn_isa = text(*dn, "isa");
  }
  return r;
}

DeviceRecord device_record(const json& device) {
  const json* available = field(device, "available");
  return {available && available->is_boolean() && available->get<bool>(),
          text(device, "name"), text(device, "reason"), text(device, "sm"),
          text(device, "driver"), text(device, "runtime"), device};
}


void to_json(json& j, const ResultsRecord& r) {
  const StoppingRecord& s = r.config.stopping;
  j = {{"schema_version", r.schema_version},
       {"tool", r.tool},
       {"tool_version", r.tool_version},
       {"created_utc", r.created_utc},
       {"context", context_json(r.context)},
       {"config",
        {{"target", r.config.target},
         {"dtype", r.config.dtype},
         {"seeds", r.config.seeds},
         {"steps", r.config.steps},
         {"warmup", r.config.warmup},
         {"threads", r.config.threads},
         {"quick", r.config.quick},
         {"stopping",
          {{"min_samples", s.min_samples}, {"max_rel_noise", s.max_rel_noise}, {"max_seconds", s.max_seconds}}}}},
       {"benchmarks", r.benchmarks}};
  if (r.status) j["status"] = *r.status;
  if (r.stopped_by) j["stopped_by"] = string_or_null(*r.stopped_by);
}

void from_json(const json& j, ResultsRecord& r) {
  r.schema_version = j.at("schema_version").get<int64_t>();
  r.tool = j.at("tool").get<std::string>();
  r.tool_version = j.at("tool_version").get<std::string>();
  r.created_utc = j.at("created_utc").get<std::string>();
  r.context = context_from(j.at("context"));
  r.config = config_from(j.at("config"));
  r.benchmarks = j.at("benchmarks").get<std::vector<BenchmarkRecord>>();
  r.status = string(j, "status");
  if (j.contains("stopped_by")) r.stopped_by = string(j, "stopped_by");
}

}  // namespace noeira
