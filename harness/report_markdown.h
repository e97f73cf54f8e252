#pragma once
#include <string>

#include "harness/report_data.h"

namespace noeira {

// The report as GitHub-flavoured markdown: context, step-time table, accuracy table,
// parity and seed-agreement lines.
std::string render_markdown(const ReportData& d);

}  // namespace noeira
