#pragma once
#include <string>

#include "harness/report/report_data.h"
#include "harness/report/report_summary.h"

namespace noeira {

// A self-contained HTML page: inline CSS and SVG, no scripts, no external references.
// The environment block first (harness/report/report_environment.h), then the tables as
// in the markdown report with the comparison charts (harness/report/report_charts.h: the
// ratio ours / twin per variant with its 95% interval, peak memory ours vs the twin), then
// per model a step-time bar chart (median with q1-q3 whiskers) and the per-step
// training-loss curves, ours vs twin. summary (the suite's first table) and picks (its
// ratio chart), when given, come right after the environment block.
std::string render_html(const ReportData& d, const ReportTable* summary = nullptr,
                        const std::vector<SummaryPick>* picks = nullptr);

}  // namespace noeira
