#include "nn/init.h"

#include <cmath>

#include "kernels/common/philox.h"

namespace noeira {

Result<InitKind> parse_init_kind(const std::string& s) {
  if (s == "kaiming_uniform" || s == "kaiming") return InitKind::kKaimingUniform;
  if (s == "xavier_uniform" || s == "xavier") return InitKind::kXavierUniform;
  if (s == "normal") return InitKind::kNormal;
  return make_error("unknown init '" + s + "'; use kaiming_uniform, xavier_uniform or normal");
}

const char* init_name(InitKind k) {
  switch (k) {
    case InitKind::kKaimingUniform: return "kaiming_uniform";
    case InitKind::kXavierUniform: return "xavier_uniform";
    case InitKind::kNormal: return "normal";
  }
  return "?";
}

double InitConfig::std_for(const std::string& name) const {
  for (const StdOverride& o : std_overrides)
    if (name.size() >= o.suffix.size() &&
        name.compare(name.size() - o.suffix.size(), o.suffix.size(), o.suffix) == 0)
      return o.std;
  return normal_std;
}

std::vector<float> init_values(const ParamInfo& p, uint32_t index, uint64_t seed,
                               const InitConfig& cfg) {
  const int64_t n = p.value.shape.numel();
  std::vector<float> w(static_cast<size_t>(n), 0.0f);
  if (p.role == ParamRole::kBias || p.role == ParamRole::kShift) return w;
  if (p.role == ParamRole::kScale) {
    w.assign(w.size(), 1.0f);
    return w;
  }
  auto word = [&](int64_t i) { return philox_word(seed, RngPurpose::kInit, index, i); };
  if (cfg.kind == InitKind::kNormal) {
    const double std = cfg.std_for(p.name);
    // Box-Muller on word pairs, in double, rounded once.
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = i / 2;
      const double u1 = (static_cast<double>(word(2 * k) >> 8) + 1.0) / 16777217.0;
      const double u2 = static_cast<double>(word(2 * k + 1) >> 8) / 16777216.0;
      const double r = std::sqrt(-2.0 * std::log(u1));
      const double z = (i % 2 == 0) ? r * std::cos(2.0 * M_PI * u2) : r * std::sin(2.0 * M_PI * u2);
      w[static_cast<size_t>(i)] = static_cast<float>(z * std);
    }
    return w;
  }
  // He: sqrt(6 / fan_in); Glorot: sqrt(6 / (fan_in + fan_out)). Bound in double,
  // rounded once, then fp32 arithmetic — the twin does exactly the same.
  const double denom = cfg.kind == InitKind::kKaimingUniform
                           ? static_cast<double>(p.fan_in)
                           : static_cast<double>(p.fan_in + p.fan_out);
  const float bound = static_cast<float>(std::sqrt(6.0 / denom));
  for (int64_t i = 0; i < n; ++i)
    w[static_cast<size_t>(i)] = (2.0f * u32_to_unit_float(word(i)) - 1.0f) * bound;
  return w;
}

}  // namespace noeira
