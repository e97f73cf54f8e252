// The comparison table `run` prints: one row per variant, timers side by side, the
// ratio to the twin's eager mode, and seed statistics; then parity and seed agreement.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "harness/results/records.h"
#include "models/family.h"

namespace noeira {

// `cores`: the host's, to judge the load average (0: unknown); `order`: context.run_order,
// printed with the first runs in that order.
std::string render_run_table(const BenchmarkRecord& benchmark, const std::string& target,
                             int64_t cores = 0, const std::optional<std::string>& order = std::nullopt);

// The lines under the table: machine warnings, parity (or why it did not run), seed
// agreement, what the timers mean, and what a partial file lacks.
std::string render_run_notes(const ResultsRecord& results, const BenchmarkRecord& benchmark,
                             const std::string& target, const std::string& parity_note);

// The progress line of one finished seed: "  eager seed 0: 6.27 ms/step, test top1 95.37".
std::string seed_line(const std::string& label, const RunRecord& run, FamilyScore score);

}  // namespace noeira
