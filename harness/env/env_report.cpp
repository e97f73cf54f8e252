#include "harness/env/env_report.h"

#include <cstdio>
#include <filesystem>

#include "harness/env/baseline_probe.h"
#include "harness/env/host_info.h"
#include "harness/exit_codes.h"
#include "harness/twin/twin.h"

namespace noeira {

int print_environment(const EnvOptions& o) {
  nlohmann::json env = environment();
  if (!o.no_probe) {
    const PythonProbe py = find_python_with_torch(o.python);
    const std::filesystem::path log = std::filesystem::temp_directory_path() / "noeira-env-twin-probe";
    std::error_code ec;
    std::filesystem::create_directories(log, ec);
    env["probes"] = {{"cpu", measure_baseline_probes(Device::kCpu, o.threads, py.python, log, 300.0)}};
    if (!py.reason.empty()) env["probes"]["cpu"]["twin"] = {{"error", py.reason}};
    if (env["device"].value("available", false))
      env["probes"]["gpu"] = measure_baseline_probes(Device::kGpu, o.threads, py.python, log, 300.0);
    for (const auto& [where, p] : env["probes"].items())
      for (std::string& w : probe_warnings(p)) env["warnings"].push_back(where + ": " + w);
  }
  std::string text = o.json ? env.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"
                             : render_environment(env);
  if (!o.json && env.contains("probes"))
    for (const auto& [where, p] : env["probes"].items()) text += "\n" + where + " " + render_probes(p);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

}  // namespace noeira
