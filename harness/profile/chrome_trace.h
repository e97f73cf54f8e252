// Chrome trace-event JSON (the format chrome://tracing and Perfetto load): ours written
// from the OpProfiler's steps and ops; both sides' files (the twin's from torch.profiler's
// export) checked by the same function.
#pragma once
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "kernels/common/error.h"
#include "kernels/profiling/op_profiler.h"

namespace noeira {

// {"traceEvents": [...]}: one complete ("X") event per profiled step, named "step <i>",
// and one per op call (its category as "cat", its shapes and work as "args"), in time
// order; microseconds from the profiler's origin.
nlohmann::json chrome_trace(const OpProfiler& p, const std::string& process_name);
Status write_chrome_trace(const std::filesystem::path& path, const nlohmann::json& trace);

struct TraceCheck {
  int64_t events = 0;
  int64_t steps = 0;  // events named "step <i>"
};
// The trace-event format's rules: a traceEvents array (or a bare array) of objects with
// name, ph, ts, pid and tid; "X" events with a non-negative dur; "B" and "E" balanced per
// thread; timestamps finite and, where `ordered`, non-decreasing in file order.
Result<TraceCheck> check_chrome_trace(const nlohmann::json& trace, bool ordered);

}  // namespace noeira
