// A profile's side records (harness/results/profile_records.h) from what was recorded:
// ours from the OpProfiler's op events, the twin's from its reply's "profile" object
// (reference/twin/profile.py).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "harness/results/profile_records.h"
#include "kernels/profiling/op_profiler.h"

namespace noeira {

// Per-category time, FLOPs and bytes per step (the mean over the profiled steps), the top
// `top` ops by time (an op with its step-0 shapes is one row), and the attributed sum.
ProfileSideRecord our_breakdown(const OpProfiler& p, const std::string& side, size_t top = 15);

// The twin's reply["profile"]; an unavailable side (with the reason) when absent.
ProfileSideRecord twin_breakdown(const nlohmann::json& profile, const std::string& side);

}  // namespace noeira
