// A GPU's roofline and each op's time budget on it (noeira-bench profile --budget): per
// (op, shapes) of one step, our FLOPs and operand bytes (kernels/profiling/op_cost.h) over
// the part's peak rate and memory bandwidth; the larger is the op's time at peak. Matrix
// work (gemm, convolution, attention) runs at the tensor cores' rate for the run's dtype
// (bf16; fp32 at TF32 when that is on, else the CUDA cores'); everything else is bound by
// its bytes. Printed without a GPU (the shapes then come from a CPU step of the same
// recipe), and beside each op's measured time when one ran.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/profiling/op_profiler.h"

namespace noeira {

struct Roofline {
  std::string device;
  double bf16_flops = 0, tf32_flops = 0, fp32_flops = 0;  // dense FLOP/s
  double bytes_per_s = 0;                                  // device memory
  std::string basis;  // where the figures come from, in words
};

// A known part by (a substring of) its name, from NVIDIA's data sheets; nullopt otherwise.
std::optional<Roofline> known_roofline(const std::string& name);

// The part of a device record (kernels/cuda/device_info.cpp: name, memory clock, bus
// width): the data sheet's rates, the memory bandwidth from the device's own clock and bus
// (2 transfers per clock) where it reports them; nullopt for an unknown part.
std::optional<Roofline> device_roofline(const nlohmann::json& device);

struct BudgetRow {
  std::string op, shape, category;
  double calls_per_step = 0;
  double flops_per_step = 0, bytes_per_step = 0;
  double budget_ms = 0;        // max(compute, memory) at peak
  bool compute_bound = false;  // the FLOPs term is the larger
  double measured_ms = -1;     // per step, when the profiled steps ran on this part (< 0: not)
};

// One row per (op, step-0 shapes) of the profiled steps, largest budget first. `bf16`: the
// run's matrix dtype; `tf32`: fp32 matrix work on the tensor cores. `measured`: the
// events' durations are times on this part.
std::vector<BudgetRow> roofline_budget(const OpProfiler& p, const Roofline& r, bool bf16,
                                       bool tf32, bool measured);

// The table: the part's figures, each row, the step's total budget (and measured sum).
std::string render_budget(const std::vector<BudgetRow>& rows, const Roofline& r, bool bf16,
                          bool tf32, size_t top = 25);

}  // namespace noeira
