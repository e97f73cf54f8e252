// FLOPs for the throughput columns: the bounded CPU run of a GPU-sized recipe, how a count
// reads, and the peak a known GPU reaches (model FLOP utilisation). A step's FLOPs come
// from its family (models/family.h).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "models/family.h"

namespace noeira {

// Steps a CPU times of a recipe whose full run is a GPU job (more than ~20 TFLOP in all):
// a few; otherwise the whole run.
int64_t cpu_step_cap(const StepWork& w, int64_t recipe_steps);

// "1.16 TFLOP", "3.97 GFLOP".
std::string format_flops(double flops);

// Dense peak FLOP/s of a GPU by its name (results' context.device.name) for "bf16",
// "tf32" or "fp32" (the CUDA cores), from known_roofline's table (harness/profile/
// roofline.h), or nothing when we do not know it.
std::optional<double> peak_flops(const std::string& device_name, const std::string& dtype);

}  // namespace noeira
