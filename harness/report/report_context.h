// What one results file says about where and with what it was measured, as the report
// shows it: a few summary strings and the environment fields, in the order of the
// report's environment block (harness/report/report_environment.h compares them across
// files: the shared ones are shown once, the others per file).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/results/records.h"

namespace noeira {

// One line of the environment block: "CPU math kernels" = "oneDNN 2.6.3 avx512_core_bf16".
struct EnvField {
  std::string name, value;
};

struct ReportContext {
  std::string source, created, command_line;
  std::string partial;                // partial_summary: what a stopped run lacks; "" when complete
  std::string git;                    // "2a0b8add0cf2 (dirty)"; "unknown" when unrecorded
  bool git_dirty = false;             // the binary was built from a tree with uncommitted changes
  std::vector<std::string> warnings;  // context.warnings (older files: none)
  Optional<nlohmann::json> probes;    // context.probes (harness/env/baseline_probe.h); absent in older files
  // host, CPU, CPU math kernels, build, device, driver / CUDA, git, twin, twin math kernels: each
  // present, "-" where the file does not record it.
  std::vector<EnvField> fields;
  const std::string& field(const std::string& name) const;  // "" when there is none
};

ReportContext report_context(const std::string& path, const ResultsRecord& results);

}  // namespace noeira
