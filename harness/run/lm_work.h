// The work in one step of a gpt-family recipe, for throughput columns: tokens, FLOPs (the
// PaLM / nanoGPT estimate: 6 N + 12 L H Q T per token, N the parameters without the
// position table, H heads of Q dims, T the context), the bounded CPU run of a GPU-sized
// recipe, and the peak a known GPU reaches (model FLOP utilisation).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "datasets/tinyshakespeare.h"
#include "models/recipe.h"

namespace noeira {

struct LmWork {
  int64_t tokens_per_step = 0;
  int64_t params = 0;           // every parameter (wpe included)
  double flops_per_token = 0.0; // forward + backward
  double flops_per_step = 0.0;
};

LmWork lm_work(const Recipe& recipe, const TokenCorpus& corpus);

// Steps a CPU times of a recipe whose full run is a GPU job (more than ~20 TFLOP in all):
// a few; otherwise the whole run.
int64_t cpu_lm_step_cap(const LmWork& w, int64_t recipe_steps);

// "1.16 TFLOP", "3.97 GFLOP".
std::string format_flops(double flops);

// Dense peak FLOP/s of a GPU by its name (results' context.device.name) for "fp32" (no
// TF32) or "bf16", or nothing when we do not know it.
std::optional<double> peak_flops(const std::string& device_name, const std::string& dtype);

}  // namespace noeira
