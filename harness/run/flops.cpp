#include "harness/run/flops.h"

#include <algorithm>
#include <cmath>

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
  // NVIDIA's data sheets, dense (no sparsity); fp32 is the non-tensor-core rate, tf32 the
  // tensor cores' rate for fp32 operands (half the bf16 rate on these parts).
  struct Peak {
    const char* match;
    double bf16_tflops, fp32_tflops;
  };
  static const Peak peaks[] = {
      {"H200 NVL", 835.0, 60.0},  {"H200", 989.4, 66.9},   {"H100 PCIe", 756.0, 51.2},
      {"H100 NVL", 835.0, 60.0},  {"H100", 989.4, 66.9},   {"A100", 312.0, 19.5},
  };
  for (const Peak& p : peaks)
    if (name.find(p.match) != std::string::npos)
      return 1e12 * (dtype == "bf16"   ? p.bf16_tflops
                     : dtype == "tf32" ? p.bf16_tflops / 2.0
                                       : p.fp32_tflops);
  return std::nullopt;
}

}  // namespace noeira
