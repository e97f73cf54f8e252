// Parameter initialisation from Philox (docs/rng.md), computed on the host so every
// backend, and the twin, start from the same bits.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nn/error.h"
#include "nn/params.h"

namespace noeira {

enum class InitKind : uint8_t { kKaimingUniform, kXavierUniform, kNormal };

struct InitConfig {
  InitKind kind = InitKind::kKaimingUniform;
  double normal_std = 0.02;  // kNormal only (double, as the twin computes z * std)
  // kNormal: a parameter whose name ends with `suffix` draws with this std instead (GPT's
  // residual projections, "c_proj.weight": std / sqrt(2 * layers), as nanoGPT).
  struct StdOverride {
    std::string suffix;
    double std = 0.0;
  };
  std::vector<StdOverride> std_overrides;
  double std_for(const std::string& name) const;
};

Result<InitKind> parse_init_kind(const std::string& s);
const char* init_name(InitKind k);

// Values of parameter `index` (its registration order) for `seed`. Biases and shifts are
// zero, scales one.
std::vector<float> init_values(const ParamInfo& p, uint32_t index, uint64_t seed,
                               const InitConfig& cfg);

}  // namespace noeira
