#include "harness/run/lm_work.h"

#include <algorithm>
#include <cmath>

#include "harness/report/number_format.h"

namespace noeira {

LmWork lm_work(const Recipe& recipe, const TokenCorpus& corpus) {
  const GptSpec& g = recipe.gpt;
  const int64_t C = g.width, V = static_cast<int64_t>(corpus.vocab.size());
  const int64_t b = g.bias ? 1 : 0;
  // Per block: ln_1, c_attn, c_proj, ln_2, c_fc, c_proj (biases only with bias).
  const int64_t block = (C + b * C) + (3 * C * C + b * 3 * C) + (C * C + b * C) + (C + b * C) +
                        (4 * C * C + b * 4 * C) + (4 * C * C + b * C);
  const int64_t without_wpe = V * C + g.layers * block + (C + b * C);
  LmWork w;
  w.params = without_wpe + g.context * C;
  w.tokens_per_step = recipe.batch * g.context;
  const double head_dim = static_cast<double>(C) / static_cast<double>(g.heads);
  w.flops_per_token = 6.0 * static_cast<double>(without_wpe) +
                      12.0 * static_cast<double>(g.layers * g.heads) * head_dim *
                          static_cast<double>(g.context);
  w.flops_per_step = w.flops_per_token * static_cast<double>(w.tokens_per_step);
  return w;
}

int64_t cpu_lm_step_cap(const LmWork& w, int64_t recipe_steps) {
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
  // NVIDIA's data sheets, dense (no sparsity); fp32 is the non-tensor-core rate.
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
      return 1e12 * (dtype == "bf16" ? p.bf16_tflops : p.fp32_tflops);
  return std::nullopt;
}

}  // namespace noeira
