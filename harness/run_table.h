// The comparison table `run` prints: one row per variant, timers side by side, the
// ratio to the twin's eager mode, and seed statistics; then parity and seed agreement.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace noeira {

std::string render_run_table(const nlohmann::json& benchmark, const std::string& target);

}  // namespace noeira
