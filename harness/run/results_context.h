// The context block of a results file (results/SCHEMA.md): where, with what and from
// which tree it was measured. Shared by `run` and `profile`.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "harness/results/records.h"

namespace noeira {

// Host, build, device and their warnings (the probes' warnings included), the twin block
// and the probes as given.
ContextRecord measurement_context(const std::string& command_line, const TwinContext& twin,
                                  const nlohmann::json& probes);

// A results document without config and benchmarks: schema version, tool, time, context.
ResultsRecord results_with_context(ContextRecord context);

}  // namespace noeira
