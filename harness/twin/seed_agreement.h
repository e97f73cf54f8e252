// Whether our seeds and the twin's agree: Welch's t-test on the final test loss of our
// eager variant (bf16 for a bf16 run) against the twin's eager mode.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace noeira {

// benchmarks[].seed_agreement (results/SCHEMA.md), or null when either side has fewer than
// two seeds that ran.
nlohmann::json seed_agreement(const nlohmann::json& variants, const std::string& dtype);

}  // namespace noeira
