// Where a step's time goes (noeira-bench profile; results/SCHEMA.md, "Profile"): one
// side's per-category times, its top ops and, for the twin, the op names its category
// table did not know. The optional benchmarks[].profile object, typed here; its JSON is
// written, read and checked in profile_records.cpp only.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/error.h"

namespace noeira {

// One category's share of a step (kernels/profiling/op_category.h's names). FLOPs and
// bytes per step are ours (the twin runs the same math: its rates use our counts).
struct ProfileCategoryRecord {
  std::string category;
  double ms_per_step = 0;
  double flops_per_step = 0;
  double bytes_per_step = 0;
};

// An op (and its shapes) over the profiled steps.
struct ProfileOpRecord {
  std::string op, shape, category;
  double ms_per_step = 0;
  double calls_per_step = 0;
};

struct ProfileSideRecord {
  std::string side;      // "noeira:eager", "twin:eager", "twin:compiled", ...
  bool available = true;
  std::string reason;    // why not, when unavailable or failed
  std::string clock;     // "host" (CPU ops, host clock) | "device" (CUPTI / CUDA activity)
  int64_t steps = 0;     // profiled steps
  double step_ms = 0;    // median step time over them
  double attributed_ms = 0;  // per step: the sum of the categories
  std::vector<ProfileCategoryRecord> categories;
  std::vector<ProfileOpRecord> top_ops;
  std::vector<std::string> unmapped;  // the twin's names in "other"
  std::string trace;                  // the Chrome trace written, or ""

  // step_ms - attributed_ms: time no op scope covered (never hidden).
  double unattributed_ms() const { return step_ms - attributed_ms; }
  const ProfileCategoryRecord* category(const std::string& name) const;
};

struct ProfileRecord {
  std::string variant;  // our variant profiled
  int64_t warmup = 0, steps = 0;
  int threads = 0;
  std::vector<ProfileSideRecord> sides;
};

nlohmann::json profile_json(const ProfileRecord& p);
ProfileRecord profile_from(const nlohmann::json& j);
// Errors naming the first field that breaks the schema (path: "benchmarks[0].profile").
Status check_profile(const nlohmann::json& j, const std::string& path);

}  // namespace noeira
