// The HTML report's comparison charts, from the report's data: step-time ratios ours /
// twin with their 95% intervals (harness/report/svg_ratio_chart.h) and peak memory ours
// vs the twin (harness/report/svg_memory_chart.h), each as a titled HTML fragment; ""
// when there is nothing to draw (no twin measured; older files without memory records).
#pragma once
#include <string>
#include <vector>

#include "harness/report/report_data.h"
#include "harness/report/report_summary.h"
#include "harness/report/svg_memory_chart.h"
#include "harness/report/svg_ratio_chart.h"

namespace noeira {

// One color per variant column; ours cool, the twin's warm.
std::string variant_color(const std::string& variant, const ReportData& d);

// Per row, each of our measured variants over the twin's fastest measured mode.
std::vector<RatioPoint> ratio_points(const ReportData& d);
// The suite's picks: our best over the twin's best, per model.
std::vector<RatioPoint> ratio_points(const std::vector<SummaryPick>& picks);
// Peak memory per row and variant: `device` the GPU's (ours in use, the twin's torch max
// allocated), else the process's peak RSS; our plan by category inside the bars of the
// memory it lives in (the host's on a CPU run, the GPU's on a GPU run).
std::vector<MemoryGroup> memory_groups(const ReportData& d, bool device);

std::string ratio_chart_html(const std::vector<RatioPoint>& points, const std::string& title);
std::string memory_charts_html(const ReportData& d);

}  // namespace noeira
