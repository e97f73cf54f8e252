// The table `run` prints under the step-time table: per variant, the median step beside
// its peak memory, time to the recipe's target and energy per step (both sides), and the
// lines that say how each was measured (harness/results/resource_records.h).
#pragma once
#include <string>

#include "harness/results/records.h"
#include "harness/report/text_table.h"

namespace noeira {

// Rows (header first) of the variants that ran: variant, ms/step, plan, peak RSS, device
// (GPU runs), time to target, energy. Shared with the report (harness/report/).
TableRows resource_rows(const BenchmarkRecord& b, bool gpu);
// How the columns were measured, one line each; "" when no run recorded any.
std::string resource_notes(const BenchmarkRecord& b);

std::string render_resource_table(const BenchmarkRecord& b, const std::string& target);

}  // namespace noeira
