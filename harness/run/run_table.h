// The comparison table `run` prints: one row per variant, timers side by side, the
// ratio to the twin's eager mode, and seed statistics; then parity and seed agreement.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "models/family.h"

namespace noeira {

std::string render_run_table(const nlohmann::json& benchmark, const std::string& target);

// The lines under the table: machine warnings, parity (or why it did not run), seed
// agreement, what the timers mean, and what a partial file lacks.
std::string render_run_notes(const nlohmann::json& results, const nlohmann::json& benchmark,
                             const std::string& target, const std::string& parity_note);

// The progress line of one finished seed: "  eager seed 0: 6.27 ms/step, test top1 95.37".
std::string seed_line(const std::string& label, const nlohmann::json& run, FamilyScore score);

}  // namespace noeira
