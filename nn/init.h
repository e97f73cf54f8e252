// Parameter initialisation from Philox (docs/rng.md), computed on the host so every
// backend, and the twin, start from the same bits.
#pragma once
#include <cstdint>
#include <vector>

#include "nn/error.h"
#include "nn/params.h"

namespace noeira {

enum class InitKind : uint8_t { kKaimingUniform, kXavierUniform, kNormal };

struct InitConfig {
  InitKind kind = InitKind::kKaimingUniform;
  float normal_std = 0.02f;  // kNormal only
};

Result<InitKind> parse_init_kind(const std::string& s);
const char* init_name(InitKind k);

// Values of parameter `index` (its registration order) for `seed`. Biases and shifts are
// zero, scales one.
std::vector<float> init_values(const ParamInfo& p, uint32_t index, uint64_t seed,
                               const InitConfig& cfg);

}  // namespace noeira
