#include "harness/run/results_context.h"

#include <utility>
#include <vector>

#include "harness/env/baseline_probe.h"
#include "harness/env/host_info.h"
#include "harness/results/results.h"

namespace noeira {

ContextRecord measurement_context(const std::string& command_line, const TwinContext& twin,
                                  const nlohmann::json& probes) {
  const nlohmann::json build = build_info();
  const nlohmann::json host = host_info();
  std::vector<std::string> warnings = environment_warnings(host, build);
  for (std::string& w : probe_warnings(probes)) warnings.push_back(std::move(w));
  ContextRecord c;
  c.command_line = command_line;
  c.build = build_record(build);
  c.git_sha = c.build.git_sha;
  c.git_dirty = c.build.git_dirty;
  c.host = host_record(host);
  c.device = device_record(device_info());
  c.twin = twin;
  c.probes = probes;
  c.warnings = warnings;
  return c;
}

ResultsRecord results_with_context(ContextRecord context) {
  ResultsRecord r;
  r.schema_version = kResultsSchemaVersion;
  r.tool = "noeira-bench";
  r.tool_version = "0.1.0";
  r.created_utc = utc_timestamp();
  r.context = std::move(context);
  return r;
}

}  // namespace noeira
