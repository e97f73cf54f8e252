#include "harness/run/flops.h"

#include <algorithm>
#include <cmath>

#include "harness/profile/roofline.h"
#include "harness/report/number_format.h"

namespace noeira {

int64_t cpu_step_cap(const StepWork& w, int64_t recipe_steps) {
  constexpr double kCpuBudget = 2e13;  // FLOPs a CPU run may take before it is bounded
  if (w.flops_per_step * static_cast<double>(recipe_steps) <= kCpuBudget) return recipe_steps;
  return std::min<int64_t>(recipe_steps, 6);
}

std::string format_flops(double f) {
  if (f >= 1e12) return format_number("%.2f", f / 1e12) + " TFLOP";
  if (f >= 1e9) return format_number("%.2f", f / 1e9) + " GFLOP";
  return format_number("%.2f", f / 1e6) + " MFLOP";
}

std::optional<double> peak_flops(const std::string& name, const std::string& dtype) {
  const std::optional<Roofline> part = known_roofline(name);  // the one table of parts
  if (!part) return std::nullopt;
  return dtype == "bf16" ? part->bf16_flops : dtype == "tf32" ? part->tf32_flops : part->fp32_flops;
}

}  // namespace noeira
